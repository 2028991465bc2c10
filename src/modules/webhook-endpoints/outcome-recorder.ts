import type { FastifyBaseLogger } from 'fastify'
import type { AttemptOutcome } from '../../db/tables.ts'
import type { DirectOutcome, RecordedOutcome } from './delivery-queue.repository.ts'
import type { WebhookEndpointsRepository } from './webhook-endpoints.repository.ts'
import type { Sent } from './sender.ts'

/** Standard Webhooks' recommended schedule stretched to three days; after the last failure the endpoint is disabled. */
export const RETRY_DELAYS_MS = [5, 300, 1800, 7200, 18000, 36000, 36000, 36000, 54000, 68400].map((s) => s * 1000)

/** Outcomes wait this long to share a statement; it delays only the listing, never the call's slot. */
const FLUSH_AFTER_MS = 25
/** ...or a statement starts once this many wait. */
const FLUSH_SIZE = 500

export interface DeliveryObserver {
  attempt(outcome: AttemptOutcome): void
}

// A claimed delivery's attempt has its rows already; a direct call has none until its outcome.
export type Started =
  | {
      direct: false
      attemptId: string
      deliveryId: string
      seq: number
      attempt: number
      endpointId: string
      eventId: string
    }
  | { direct: true; attempt: 1; endpointId: string; eventId: string; companyId: string | null; startedAt: Date }

/**
 * Records outcomes in batches, one statement for claimed deliveries' and one for direct calls'. A
 * failed statement is logged and its outcomes dropped: their leases run out and they are retried
 * with the same webhook-id, as after a crash.
 */
export function createOutcomeRecorder(deps: {
  repo: Pick<WebhookEndpointsRepository, 'recordOutcomes' | 'recordDirectOutcomes'>
  log: FastifyBaseLogger
  observer?: DeliveryObserver
}) {
  let queue: RecordedOutcome[] = []
  let directQueue: DirectOutcome[] = []
  let timer: NodeJS.Timeout | undefined
  let writing: Promise<void> | undefined

  function add(started: Started, sent: Sent, at: Date) {
    deps.observer?.attempt(sent.outcome)
    const succeeded = sent.outcome === 'succeeded'
    const delay = RETRY_DELAYS_MS[started.attempt - 1]
    const givenUp = !succeeded && delay === undefined
    const retryAt = succeeded || givenUp ? null : new Date(at.getTime() + delay!)
    // Spelled out, not spread: adding properties after a spread is slow on V8, and this runs per delivery.
    if (started.direct) {
      // A first attempt is never the last: no disabling here.
      directQueue.push({
        outcome: sent.outcome,
        statusCode: sent.statusCode,
        durationMs: sent.durationMs,
        error: sent.error,
        at,
        eventId: started.eventId,
        endpointId: started.endpointId,
        companyId: started.companyId,
        startedAt: started.startedAt,
        retryAt,
      })
    } else {
      queue.push({
        outcome: sent.outcome,
        statusCode: sent.statusCode,
        durationMs: sent.durationMs,
        error: sent.error,
        at,
        attemptId: started.attemptId,
        deliveryId: started.deliveryId,
        seq: started.seq,
        retryAt,
        disabledReason: givenUp
          ? `Disabled at ${at.toISOString()}: the event ${started.eventId} could not be delivered in ` +
            `${started.attempt} attempts over three days`
          : null,
      })
    }
    if (queue.length + directQueue.length >= FLUSH_SIZE) void flush()
    else timer ??= setTimeout(() => void flush(), FLUSH_AFTER_MS)
  }

  async function flush(): Promise<void> {
    if (timer) clearTimeout(timer)
    timer = undefined
    while (writing) await writing
    if (queue.length === 0 && directQueue.length === 0) return
    const batch = queue
    const directBatch = directQueue
    queue = []
    directQueue = []
    // Two statements failing alone, so one failure does not drop the other's outcomes.
    const write = (statement: Promise<void>, outcomes: number) =>
      statement.catch((err: unknown) =>
        deps.log.error({ err, outcomes }, 'webhook delivery outcomes not recorded; their leases will retry them'),
      )
    writing = write(deps.repo.recordOutcomes(batch), batch.length)
      .then(() => write(deps.repo.recordDirectOutcomes(directBatch), directBatch.length))
      .finally(() => {
        writing = undefined
      })
    await writing
    if ((queue.length > 0 || directQueue.length > 0) && !timer) timer = setTimeout(() => void flush(), 0)
  }

  return {
    add,
    async drain(): Promise<void> {
      while (queue.length > 0 || directQueue.length > 0 || writing) await flush()
    },
  }
}
