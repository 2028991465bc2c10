import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../../core/clock.ts'
import { outsideRequestScope } from '../../db/request-transaction.ts'
import type { EventPresenter } from '../events/event-objects.ts'
import type { DirectTarget, FannedEvent } from './delivery-queue.repository.ts'
import { createOutcomeRecorder, type DeliveryObserver, type Started } from './outcome-recorder.ts'
import { createWebhookSender } from './sender.ts'
import type { WebhookEndpointsRepository } from './webhook-endpoints.repository.ts'

export { RETRY_DELAYS_MS, type DeliveryObserver } from './outcome-recorder.ts'

/** How long after its start an attempt with no recorded outcome is taken for lost (its instance died) and tried again. */
const LEASE_MARGIN_MS = 60_000
/**
 * HTTP calls one instance keeps open to one endpoint at most. A receiver that hangs with a
 * backlog of a thousand events would otherwise hold a thousand sockets of this process; above
 * the bound its deliveries stay due in the table, unclaimed and uncounted, until a call ends.
 * Passes run one after another, so an endpoint gets at most this many calls per pass's wall
 * time: at 16 a healthy receiver on loopback took ~480 deliveries a second, behind a stream of
 * 1,000 events a second (p99 11 s); at 64 the same run delivered within 1.7 s (bench/findings.md,
 * "Issue 15"), but with the machine busy a healthy receiver's calls took long enough that a
 * quarter of its events found no free slot and went through the queue (a delivery row, its claim
 * and its outcome: about twice a first call's cost to PostgreSQL). At 256 none did, and
 * PostgreSQL's CPU per change fell by a sixth (bench/findings.md, "Session of 2026-11-28
 * (evening)"). A hung receiver holds 256 sockets of an instance, for the timeout
 * (WEBHOOK_TIMEOUT_MS, 10 s by default), and a receiver may get as many requests at once from
 * each instance.
 */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 256
/** Deliveries of a disabled endpoint given up per pass (they are not sent: docs/webhooks.md). */
const DROP_BATCH = 500
/**
 * Events fanned out per pass at most: an event is one call per endpoint that wants it, so an
 * endpoint with all its slots free takes this many at once; what finds no free slot is queued.
 * Not the bound itself: a pass starts its calls in one turn of the event loop (up to this many
 * events times 32 endpoints), and a full batch brings the next pass at once, so a smaller batch
 * keeps a backlog's passes short without queueing anything while slots are free.
 */
const FAN_OUT_BATCH = 64
/**
 * A pass at least this often: deliveries written by other instances, retries falling due, leases
 * running out. One indexed statement that finds nothing is what an idle instance pays
 * (bench/findings.md, "Issue 15").
 */
export const DELIVERY_POLL_MS = 250
/** After a write of this instance, a pass this soon: a stream of writes makes a pass every WRITE_WAKE_MS, not one per write. */
const WRITE_WAKE_MS = 20
/**
 * How long what a look found (an enabled endpoint somewhere, or none) decides whether a write
 * wakes a pass. With none, an event has no delivery to make: in a mix of writes over 1,000
 * companies with no endpoint, these passes and the scheduler's found nothing and cost ~9 % of
 * the server's CPU (bench/findings.md, "What a write wakes"). An endpoint created on another
 * instance within this time has its first events taken by the next poll (DELIVERY_POLL_MS).
 */
const ENDPOINTS_KNOWN_MS = 1000
/** After a call ends at an endpoint that had more due than its free slots: a pass this soon (the calls ending meanwhile join it). */
const SLOT_WAKE_MS = 2

/**
 * Delivery, at least once, across instances, without a scheduler job per delivery: the
 * webhook_fanouts and webhook_deliveries tables are the queue (migrations 0030, 0034). Each pass
 * claims, in one statement, the due deliveries of every endpoint up to its free slots here, which
 * counts their attempts and leases them (timeout + 60 s); then fans out, in another, the events
 * written since, calling at once the endpoints with free slots (the event's fan-out row is their
 * lease) and queueing deliveries for the others. Each statement commits before its calls run,
 * outside every transaction, so a receiver that is slow or never answers holds only its own
 * sockets. Outcomes are recorded in batches (outcome-recorder.ts). An instance killed during a
 * call never records its outcome: the lease runs out, another pass takes the delivery (or writes
 * the direct call's) again, with the same `webhook-id`. Deliveries are due by real time (`clock`
 * is the real clock), never by a test clock.
 */
export function createWebhookDelivery(deps: {
  repo: WebhookEndpointsRepository
  clock: Clock
  log: FastifyBaseLogger
  timeoutMs: number
  allowPrivateTargets: boolean
  observer?: DeliveryObserver
  pollMs?: number
  /** The event's body as the log answers it. */
  presenter: EventPresenter
}) {
  const pollMs = deps.pollMs ?? DELIVERY_POLL_MS
  const sender = createWebhookSender({ timeoutMs: deps.timeoutMs, allowPrivateTargets: deps.allowPrivateTargets })
  const recorder = createOutcomeRecorder({ repo: deps.repo, log: deps.log, observer: deps.observer })
  /** Calls under way per endpoint: the slots a claim leaves out. */
  const calls = new Map<string, number>()
  /** Endpoints whose last claim took every free slot: more may be due, so a call ending there wakes a pass. */
  const saturated = new Set<string>()
  const inFlight = new Set<Promise<void>>()
  /** What a pass did: the calls it started, and the events it fanned out (with or without a call: the queued ones are the next pass's). */
  type Pass = { calls: number; fanned: number }
  let passing: Promise<Pass> | undefined
  let stopped = true
  let timer: NodeJS.Timeout | undefined
  let timerAt = Infinity
  /** The last look for an enabled endpoint (afterWrite): what it found, and when (ms of deps.clock). */
  let endpointsSeen: { any: boolean; at: number } | undefined
  let looking: Promise<void> | undefined
  /** Counts the changes of endpoints made here: a look that began before one is not kept. */
  let endpointChanges = 0

  /**
   * One claim, then its calls started. Passes never overlap in a process: each counts the slots
   * the previous one took, so the bound stays exact.
   */
  async function pass(): Promise<Pass> {
    while (passing) await passing
    passing = claimAndSend().finally(() => { passing = undefined })
    return passing
  }

  /**
   * The claim of the queued deliveries first (retries, and what found no free slot before), then
   * the fan-out of the new events over the slots left: each counts the slots taken before it.
   */
  async function claimAndSend(): Promise<Pass> {
    const now = deps.clock.now()
    const leaseUntil = new Date(now.getTime() + deps.timeoutMs + LEASE_MARGIN_MS)
    // A claim that fails must not keep the new events from their first calls: the fan-out goes on.
    const claimed = await deps.repo.claimDue({ now, leaseUntil, bound: MAX_IN_FLIGHT_PER_ENDPOINT, busy: busy(), dropBatch: DROP_BATCH })
      .catch((err: unknown) => { deps.log.warn({ err }, 'webhook delivery claim failed'); return [] })
    // The endpoints with free slots that want an event get it in the same pass: its body is built once.
    const bodies = new Map<string, string>()
    await prepareBodies(claimed, bodies)
    for (const d of claimed) {
      // One delivery that cannot be started (its body not built) must not keep the others of the
      // pass from starting: it stays leased, and its lease brings it back.
      try {
        start(d, { direct: false, attemptId: d.attempt_id, deliveryId: d.id, seq: d.seq, attempt: d.attempt, endpointId: d.endpoint_id, eventId: d.event_id }, bodyOf(d, bodies))
      } catch (err) { deps.log.error({ err, delivery_id: d.id }, 'webhook delivery not started') }
    }
    const fanned = await deps.repo.fanOutDue({ now, leaseUntil, bound: MAX_IN_FLIGHT_PER_ENDPOINT, busy: busy(), batch: FAN_OUT_BATCH })
    await prepareBodies(fanned, bodies)
    let direct = 0
    for (const e of fanned) {
      // As above: a call not started leaves its event leased, and the lease writes its delivery.
      try {
        // Checked before any call starts: the event's lease then brings all of them back.
        if (e.direct.includes(undefined)) throw new Error(`The fan-out of event ${e.event_id} lists an endpoint without its row`)
        const body = bodyOf(e, bodies)
        for (const target of e.direct as DirectTarget[]) {
          start(target, { direct: true, attempt: 1, endpointId: target.id, eventId: e.event_id, companyId: e.event_company_id, startedAt: now }, body)
          direct++
        }
      } catch (err) { deps.log.error({ err, event_id: e.event_id }, 'webhook delivery not started') }
    }
    // A full batch: more events may be due, and no call ending need come to wake a pass for them.
    if (fanned.length === FAN_OUT_BATCH) wakeIn(0)
    return { calls: claimed.length + direct, fanned: fanned.length }
  }

  const busy = () => [...calls].map(([endpointId, n]) => ({ endpointId, calls: n }))

  type BodySource = Pick<FannedEvent, 'event_id' | 'type' | 'event_company_id' | 'data' | 'created_at'>

  /** Each event's body, built once per pass; one that cannot be built is left out, and bodyOf() then refuses its calls. */
  async function prepareBodies(events: readonly BodySource[], bodies: Map<string, string>) {
    await Promise.all(events.map(async (e) => {
      if (bodies.has(e.event_id)) return
      try {
        bodies.set(e.event_id, JSON.stringify(await deps.presenter.event({ id: e.event_id, type: e.type, company_id: e.event_company_id, data: e.data, created_at: e.created_at })))
      } catch (err) { deps.log.error({ err, event_id: e.event_id }, 'webhook event body not built') }
    }))
  }

  function bodyOf(e: BodySource, bodies: Map<string, string>): string {
    const body = bodies.get(e.event_id)
    if (body === undefined) throw new Error(`The body of event ${e.event_id} was not built`)
    return body
  }

  /** A call's target: a claimed delivery's endpoint (its expiry a Date) or a fan-out's (from JSON, a string). */
  type Target = { url: string; secret: string; previous_secret: string | null; previous_secret_expires_at: Date | string | null }

  function start(target: Target, started: Started, body: string) {
    // During a rotation's grace the secret it replaced signs too (migration 0025).
    const previous = target.previous_secret && target.previous_secret_expires_at && new Date(target.previous_secret_expires_at) > deps.clock.now() ? [target.previous_secret] : []
    const { endpointId } = started
    // The slot is taken once the call is sure to start, so release() always follows.
    const n = (calls.get(endpointId) ?? 0) + 1
    calls.set(endpointId, n)
    if (n >= MAX_IN_FLIGHT_PER_ENDPOINT) saturated.add(endpointId)
    // Four promises a call (send's, and one per step), about half what finally() and an async
    // send() made: a delivery is a few dozen microseconds of CPU, ten per change.
    const call: Promise<void> = sender.send(target.url, [target.secret, ...previous], started.eventId, body)
      .then((sent) => {
        release(endpointId)
        // The attempt shows a code only; what the network said goes to the operator's log.
        if (sent.detail) deps.log.debug({ endpoint_id: endpointId, event_id: started.eventId, error: sent.error, detail: sent.detail }, 'webhook attempt failed')
        recorder.add(started, sent, deps.clock.now())
      }, (err: unknown) => {
        release(endpointId)
        throw err
      })
      .catch((err: unknown) => deps.log.error({ err }, 'webhook delivery failed'))
      // Either way: settled() waits for what is in the set.
      .then(() => forget(call), () => forget(call))
    inFlight.add(call)
  }

  function forget(call: Promise<void>) { inFlight.delete(call) }

  /** Gives back an endpoint's slot; if the endpoint had more waiting, a pass comes soon to use it. */
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
    // Outside any request's scope: the passes are no request's work (request-transaction.ts).
    timer = outsideRequestScope(() => setTimeout(loop, delayMs))
  }

  function loop() {
    timer = undefined
    timerAt = Infinity
    if (stopped) return
    // A wake-up during a pass: the next pass follows it (pass() waits for the one under way).
    void pass()
      .catch((err: unknown) => deps.log.warn({ err }, 'webhook delivery pass failed'))
      .finally(() => wakeIn(pollMs))
  }

  return {
    /** Starts the polling loop (alongside the scheduler; SCHEDULER_ENABLED). */
    start() {
      if (!stopped) return
      stopped = false
      wakeIn(0)
    },
    /** A pass soon: this instance wrote an event that has a delivery due now (a ping). */
    wake() { wakeIn(WRITE_WAKE_MS) },
    /**
     * After a write request of this instance: its events' deliveries are due now, so a pass soon,
     * if an enabled endpoint exists (looked for at most once per ENDPOINTS_KNOWN_MS, outside the
     * request: its transaction has ended).
     */
    afterWrite() {
      if (stopped) return
      if (endpointsSeen && deps.clock.now().getTime() - endpointsSeen.at < ENDPOINTS_KNOWN_MS) {
        if (endpointsSeen.any) wakeIn(WRITE_WAKE_MS)
        return
      }
      const changes = endpointChanges
      looking ??= outsideRequestScope(() => deps.repo.anyEnabled())
        .then((any) => {
          // An endpoint changed here meanwhile: what the look saw may predate it, so a pass anyway.
          const changed = changes !== endpointChanges
          if (!changed) endpointsSeen = { any, at: deps.clock.now().getTime() }
          if (any || changed) wakeIn(WRITE_WAKE_MS)
        }, (err: unknown) => {
          deps.log.warn({ err }, 'webhook endpoints look failed')
          wakeIn(WRITE_WAKE_MS)
        })
        .finally(() => { looking = undefined })
    },
    /**
     * An endpoint was created or enabled here: taken for enabled for ENDPOINTS_KNOWN_MS without a
     * look, since its row may not be committed yet (a keyed request commits at its end), and a
     * look now could miss it. A creation that rolls back costs a few passes that find nothing.
     */
    endpointsChanged() {
      endpointChanges++
      endpointsSeen = { any: true, at: deps.clock.now().getTime() }
    },
    /** Stops claiming; the pass under way ends. The calls under way go on: settled() waits for them. */
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      timer = undefined
      timerAt = Infinity
      await passing?.catch(() => undefined)
    },
    /** Passes until one claims nothing; answers the calls started (tests; the polling loop does this by itself). */
    async runDue(): Promise<number> {
      let total = 0
      for (let p = await pass(); p.calls > 0 || p.fanned > 0; p = await pass()) total += p.calls
      return total
    },
    /** Resolves once every call this instance started has ended and its outcome is written (tests; shutdown). */
    async settled(): Promise<void> {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight])
      await recorder.drain()
    },
    inFlight: () => inFlight.size,
    /** Closes the kept-open connections (after settled(), at shutdown). */
    close: () => sender.close(),
  }
}

export type WebhookDelivery = ReturnType<typeof createWebhookDelivery>
