import type { FastifyBaseLogger } from 'fastify'
import type { AttemptOutcome } from '../../db/tables.ts'
import type { DirectOutcome, RecordedOutcome } from './delivery-queue.repository.ts'
import type { WebhookEndpointsRepository } from './webhook-endpoints.repository.ts'
import type { Sent } from './sender.ts'

/**
 * The waits before each retry, after the first attempt fails: Standard Webhooks' recommended
 * schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h) stretched to three days, 11 attempts in
 * all, the last 71 h 35 min after the first. After the last one fails, the endpoint is disabled.
 */
export const RETRY_DELAYS_MS = [5, 300, 1800, 7200, 18000, 36000, 36000, 36000, 54000, 68400].map((s) => s * 1000)

/**
 * Outcomes wait at most this long for others to share their statement... 25 ms, not 5: one
 * statement, and one batch row per endpoint, then serve up to five times as many outcomes. The
 * wait delays when an outcome is listed, not the delivery nor the call's slot (released at the
 * call's end): bench/findings.md, "Session of 2026-11-28 (evening)".
 */
const FLUSH_AFTER_MS = 25
/**
 * ...or a statement starts at once when this many wait. While one is written, the next takes
 * everything gathered meanwhile, which under load may be more.
 */
const FLUSH_SIZE = 500

export interface DeliveryObserver {
  attempt(outcome: AttemptOutcome): void
}

/**
 * An attempt under way: what its outcome is recorded against. A claimed delivery's attempt has its
 * rows already; a direct call of a fan-out (attempt 1, seq 1) has none until its outcome: an item
 * of its endpoint's batch row if it succeeded, its delivery and attempt if not (migrations 0034, 0036).
 */
export type Started =
  | { direct: false; attemptId: string; deliveryId: string; seq: number; attempt: number; endpointId: string; eventId: string }
  | { direct: true; attempt: 1; endpointId: string; eventId: string; companyId: string | null; startedAt: Date }

/**
 * Records outcomes in batches: every FLUSH_AFTER_MS or FLUSH_SIZE outcomes, one statement for the
 * claimed deliveries' (record_webhook_outcomes()) and one for the direct calls'
 * (record_direct_webhook_outcomes(); both in delivery-queue.repository.ts), where a statement per
 * outcome was a transaction of six round trips. One batch at a time; the next one gathers
 * meanwhile. A statement that fails is logged and its outcomes dropped: their deliveries (or
 * their events' fan-out) are still leased, and are tried again (same webhook-id) when the lease
 * runs out, as after a crash.
 */
export function createOutcomeRecorder(deps: { repo: Pick<WebhookEndpointsRepository, 'recordOutcomes' | 'recordDirectOutcomes'>; log: FastifyBaseLogger; observer?: DeliveryObserver }) {
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
    // Each outcome spelled out, not spread from a shared part: on Node 20's V8 every property
    // added after a spread costs over a microsecond, and this add() was 3-4 % of a delivering
    // instance's CPU (docs/performance.md).
    if (started.direct) {
      // A first attempt is never the last (RETRY_DELAYS_MS is not empty): no disabling here.
      directQueue.push({
        outcome: sent.outcome, statusCode: sent.statusCode, durationMs: sent.durationMs, error: sent.error, at,
        eventId: started.eventId, endpointId: started.endpointId, companyId: started.companyId, startedAt: started.startedAt, retryAt,
      })
    } else {
      queue.push({
        outcome: sent.outcome, statusCode: sent.statusCode, durationMs: sent.durationMs, error: sent.error, at,
        attemptId: started.attemptId, deliveryId: started.deliveryId, seq: started.seq, retryAt,
        disabledReason: givenUp ? `Disabled at ${at.toISOString()}: the event ${started.eventId} could not be delivered in ${started.attempt} attempts over three days` : null,
      })
    }
    if (queue.length + directQueue.length >= FLUSH_SIZE) void flush()
    else timer ??= setTimeout(() => void flush(), FLUSH_AFTER_MS)
  }

  /** Writes what is queued (after the batch being written, if any). */
  async function flush(): Promise<void> {
    if (timer) clearTimeout(timer)
    timer = undefined
    while (writing) await writing
    if (queue.length === 0 && directQueue.length === 0) return
    const batch = queue
    const directBatch = directQueue
    queue = []
    directQueue = []
    // Two statements, each failing alone: a claimed delivery's outcome and a direct call's are
    // kept apart so that one statement's failure does not drop the other's outcomes.
    const write = (statement: Promise<void>, outcomes: number) => statement
      .catch((err: unknown) => deps.log.error({ err, outcomes }, 'webhook delivery outcomes not recorded; their leases will retry them'))
    writing = write(deps.repo.recordOutcomes(batch), batch.length)
      .then(() => write(deps.repo.recordDirectOutcomes(directBatch), directBatch.length))
      .finally(() => { writing = undefined })
    await writing
    // What gathered while this batch was written goes at once, not after another wait.
    if ((queue.length > 0 || directQueue.length > 0) && !timer) timer = setTimeout(() => void flush(), 0)
  }

  return {
    add,
    /** Resolves once every outcome added so far is written (or its batch failed). */
    async drain(): Promise<void> {
      while (queue.length > 0 || directQueue.length > 0 || writing) await flush()
    },
  }
}
