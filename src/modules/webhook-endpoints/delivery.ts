import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../../core/clock.ts'
import { outsideRequestScope } from '../../db/request-transaction.ts'
import type { EventPresenter } from '../events/event-objects.ts'
import type { DirectTarget, FannedEvent } from './delivery-queue.repository.ts'
import { createOutcomeRecorder, type DeliveryObserver, type Started } from './outcome-recorder.ts'
import { createWebhookSender } from './sender.ts'
import type { WebhookEndpointsRepository } from './webhook-endpoints.repository.ts'

export { RETRY_DELAYS_MS, type DeliveryObserver } from './outcome-recorder.ts'

/** After this long, an attempt without an outcome is taken for lost (its instance died) and retried. */
const LEASE_MARGIN_MS = 60_000
/**
 * Calls one instance keeps open to one endpoint at most, so a hung receiver cannot hold unbounded
 * sockets; deliveries above it wait in the table. High enough that a healthy receiver's events
 * rarely queue; bench/README.md has the figures.
 */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 256
/** Deliveries of a disabled endpoint dropped per pass (they are never sent). */
const DROP_BATCH = 500
// Events fanned out per pass: small enough to keep a backlog's passes short (a pass starts all
// its calls in one turn of the event loop); a full batch brings the next pass at once.
const FAN_OUT_BATCH = 64
/** A pass at least this often, for other instances' writes, retries and expired leases. */
export const DELIVERY_POLL_MS = 250
/** After a write here, a pass this soon: a stream of writes makes one pass per interval. */
const WRITE_WAKE_MS = 20
// How long a look for an enabled endpoint decides whether a write wakes a pass: with none,
// passes find nothing and only cost CPU. Another instance's new endpoint waits for the next poll.
const ENDPOINTS_KNOWN_MS = 1000
const SLOT_WAKE_MS = 2

/**
 * At-least-once delivery across instances, with the tables as the queue: each pass claims due
 * deliveries up to free slots, then fans out new events. Calls run outside transactions; a lease
 * that expires after a crash brings a retry with the same `webhook-id`.
 */
export function createWebhookDelivery(deps: {
  repo: WebhookEndpointsRepository
  clock: Clock
  log: FastifyBaseLogger
  timeoutMs: number
  allowPrivateTargets: boolean
  observer?: DeliveryObserver
  pollMs?: number
  presenter: EventPresenter
}) {
  const pollMs = deps.pollMs ?? DELIVERY_POLL_MS
  const sender = createWebhookSender({ timeoutMs: deps.timeoutMs, allowPrivateTargets: deps.allowPrivateTargets })
  const recorder = createOutcomeRecorder({ repo: deps.repo, log: deps.log, observer: deps.observer })
  const calls = new Map<string, number>()
  /** Endpoints whose last claim took every free slot: a call ending there wakes a pass. */
  const saturated = new Set<string>()
  const inFlight = new Set<Promise<void>>()
  type Pass = { calls: number; fanned: number }
  let passing: Promise<Pass> | undefined
  let stopped = true
  let timer: NodeJS.Timeout | undefined
  let timerAt = Infinity
  /** The last look for an enabled endpoint (afterWrite). */
  let endpointsSeen: { any: boolean; at: number } | undefined
  // biome-ignore lint/correctness/noUnusedVariables: read by `??=`
  let looking: Promise<void> | undefined
  /** Counts endpoint changes made here: a look that began before one is not kept. */
  let endpointChanges = 0

  // Passes never overlap in a process, so each counts the slots the previous took and the bound stays exact.
  async function pass(): Promise<Pass> {
    while (passing) await passing
    passing = claimAndSend().finally(() => {
      passing = undefined
    })
    return passing
  }

  // Queued deliveries first, then new events over the slots left.
  async function claimAndSend(): Promise<Pass> {
    const now = deps.clock.now()
    const leaseUntil = new Date(now.getTime() + deps.timeoutMs + LEASE_MARGIN_MS)
    // A failed claim must not keep new events from their first calls.
    const claimed = await deps.repo
      .claimDue({ now, leaseUntil, bound: MAX_IN_FLIGHT_PER_ENDPOINT, busy: busy(), dropBatch: DROP_BATCH })
      .catch((err: unknown) => {
        deps.log.warn({ err }, 'webhook delivery claim failed')
        return []
      })
    const bodies = new Map<string, string>()
    await prepareBodies(claimed, bodies)
    for (const d of claimed) {
      // A delivery that cannot start stays leased and its lease brings it back; the others go on.
      try {
        start(
          d,
          {
            direct: false,
            attemptId: d.attempt_id,
            deliveryId: d.id,
            seq: d.seq,
            attempt: d.attempt,
            endpointId: d.endpoint_id,
            eventId: d.event_id,
          },
          bodyOf(d, bodies),
        )
      } catch (err) {
        deps.log.error({ err, delivery_id: d.id }, 'webhook delivery not started')
      }
    }
    const fanned = await deps.repo.fanOutDue({
      now,
      leaseUntil,
      bound: MAX_IN_FLIGHT_PER_ENDPOINT,
      busy: busy(),
      batch: FAN_OUT_BATCH,
    })
    await prepareBodies(fanned, bodies)
    let direct = 0
    for (const e of fanned) {
      try {
        if (e.direct.includes(undefined))
          throw new Error(`The fan-out of event ${e.event_id} lists an endpoint without its row`)
        const body = bodyOf(e, bodies)
        for (const target of e.direct as DirectTarget[]) {
          start(
            target,
            {
              direct: true,
              attempt: 1,
              endpointId: target.id,
              eventId: e.event_id,
              companyId: e.event_company_id,
              startedAt: now,
            },
            body,
          )
          direct++
        }
      } catch (err) {
        deps.log.error({ err, event_id: e.event_id }, 'webhook delivery not started')
      }
    }
    // A full batch: more events may be due.
    if (fanned.length === FAN_OUT_BATCH) wakeIn(0)
    return { calls: claimed.length + direct, fanned: fanned.length }
  }

  const busy = () => [...calls].map(([endpointId, n]) => ({ endpointId, calls: n }))

  type BodySource = Pick<FannedEvent, 'event_id' | 'type' | 'event_company_id' | 'data' | 'created_at'>

  /** One body per event per pass; one that cannot be built is left out and its calls refused. */
  async function prepareBodies(events: readonly BodySource[], bodies: Map<string, string>) {
    await Promise.all(
      events.map(async (e) => {
        if (bodies.has(e.event_id)) return
        try {
          bodies.set(
            e.event_id,
            JSON.stringify(
              await deps.presenter.event({
                id: e.event_id,
                type: e.type,
                company_id: e.event_company_id,
                data: e.data,
                created_at: e.created_at,
              }),
            ),
          )
        } catch (err) {
          deps.log.error({ err, event_id: e.event_id }, 'webhook event body not built')
        }
      }),
    )
  }

  function bodyOf(e: BodySource, bodies: Map<string, string>): string {
    const body = bodies.get(e.event_id)
    if (body === undefined) throw new Error(`The body of event ${e.event_id} was not built`)
    return body
  }

  type Target = {
    url: string
    secret: string
    previous_secret: string | null
    previous_secret_expires_at: Date | string | null
  }

  function start(target: Target, started: Started, body: string) {
    // During a rotation's grace the replaced secret signs too.
    const previous =
      target.previous_secret &&
      target.previous_secret_expires_at &&
      new Date(target.previous_secret_expires_at) > deps.clock.now()
        ? [target.previous_secret]
        : []
    const { endpointId } = started
    // Taken once the call is sure to start, so release() always follows.
    const n = (calls.get(endpointId) ?? 0) + 1
    calls.set(endpointId, n)
    if (n >= MAX_IN_FLIGHT_PER_ENDPOINT) saturated.add(endpointId)
    // Few promises per call: a delivery happens about ten times per change.
    const call: Promise<void> = sender
      .send(target.url, [target.secret, ...previous], started.eventId, body)
      .then(
        (sent) => {
          release(endpointId)
          // The attempt records a code only; the network's detail goes to the operator's log.
          if (sent.detail)
            deps.log.debug(
              { endpoint_id: endpointId, event_id: started.eventId, error: sent.error, detail: sent.detail },
              'webhook attempt failed',
            )
          recorder.add(started, sent, deps.clock.now())
        },
        (err: unknown) => {
          release(endpointId)
          throw err
        },
      )
      .catch((err: unknown) => deps.log.error({ err }, 'webhook delivery failed'))
      .then(
        () => forget(call),
        () => forget(call),
      )
    inFlight.add(call)
  }

  function forget(call: Promise<void>) {
    inFlight.delete(call)
  }

  function release(endpointId: string) {
    const left = (calls.get(endpointId) ?? 1) - 1
    if (left > 0) calls.set(endpointId, left)
    else calls.delete(endpointId)
    if (saturated.delete(endpointId)) wakeIn(SLOT_WAKE_MS)
  }

  function wakeIn(delayMs: number) {
    if (stopped) return
    const at = Date.now() + delayMs
    if (timer && at >= timerAt) return
    if (timer) clearTimeout(timer)
    timerAt = at
    // The passes are no request's work (request-transaction.ts).
    timer = outsideRequestScope(() => setTimeout(loop, delayMs))
  }

  function loop() {
    timer = undefined
    timerAt = Infinity
    if (stopped) return
    void pass()
      .catch((err: unknown) => deps.log.warn({ err }, 'webhook delivery pass failed'))
      .finally(() => wakeIn(pollMs))
  }

  return {
    start() {
      if (!stopped) return
      stopped = false
      wakeIn(0)
    },
    wake() {
      wakeIn(WRITE_WAKE_MS)
    },
    /** After a write request here: a pass soon, if an enabled endpoint exists. */
    afterWrite() {
      if (stopped) return
      if (endpointsSeen && deps.clock.now().getTime() - endpointsSeen.at < ENDPOINTS_KNOWN_MS) {
        if (endpointsSeen.any) wakeIn(WRITE_WAKE_MS)
        return
      }
      const changes = endpointChanges
      looking ??= outsideRequestScope(() => deps.repo.anyEnabled())
        .then(
          (any) => {
            // An endpoint changed here meanwhile: the look may predate it.
            const changed = changes !== endpointChanges
            if (!changed) endpointsSeen = { any, at: deps.clock.now().getTime() }
            if (any || changed) wakeIn(WRITE_WAKE_MS)
          },
          (err: unknown) => {
            deps.log.warn({ err }, 'webhook endpoints look failed')
            wakeIn(WRITE_WAKE_MS)
          },
        )
        .finally(() => {
          looking = undefined
        })
    },
    // Taken for enabled without a look: the new row may not be committed yet.
    endpointsChanged() {
      endpointChanges++
      endpointsSeen = { any: true, at: deps.clock.now().getTime() }
    },
    /** Stops claiming; settled() waits for the calls under way. */
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      timer = undefined
      timerAt = Infinity
      await passing?.catch(() => undefined)
    },
    /** Passes until one claims nothing (tests). */
    async runDue(): Promise<number> {
      let total = 0
      for (let p = await pass(); p.calls > 0 || p.fanned > 0; p = await pass()) total += p.calls
      return total
    },
    /** Resolves once every started call has ended and its outcome is written. */
    async settled(): Promise<void> {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight])
      await recorder.drain()
    },
    inFlight: () => inFlight.size,
    close: () => sender.close(),
  }
}

export type WebhookDelivery = ReturnType<typeof createWebhookDelivery>
