import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import type { Kysely } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../../clock.ts'
import type { AttemptOutcome, DB } from '../../db/tables.ts'
import type { JobContext, Scheduler } from '../../jobs/scheduler.ts'
import { eventView } from '../events/events.service.ts'
import { signatureHeaders } from './signing.ts'
import { guardedLookup, hostOf, isPrivateAddress, TargetRefused } from './targets.ts'
import type { WebhookEndpointsRepository } from './webhook-endpoints.repository.ts'

export const DELIVER_JOB = 'webhook.deliver'

/**
 * The waits before each retry, after the first attempt fails: Standard Webhooks' recommended
 * schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h) stretched to three days, 11 attempts in
 * all, the last 71 h 35 min after the first. After the last one fails, the endpoint is disabled.
 */
export const RETRY_DELAYS_MS = [5, 300, 1800, 7200, 18000, 36000, 36000, 36000, 54000, 68400].map((s) => s * 1000)

/** How long after its start an attempt with no recorded outcome is taken for lost (its instance died) and tried again. */
const LEASE_MARGIN_MS = 60_000
const MAX_RESPONSE_BYTES = 64 * 1024
/**
 * HTTP calls one instance keeps open to one endpoint at most. A receiver that hangs with a
 * backlog of a thousand events would otherwise hold a thousand sockets of this process; above
 * the bound its deliveries wait (their job comes back a second later, no attempt counted).
 */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 16
const DEFER_MS = 1000
const MAX_DEFER_MS = 30_000

export interface DeliveryObserver {
  attempt(outcome: AttemptOutcome): void
}

/** The deliveries of one endpoint sent back to wait since it reached its bound (reset once it has no call left). */
interface Waiting { since: number; count: number }

interface Sent { outcome: AttemptOutcome; statusCode: number | null; error: string | null; durationMs: number }

/**
 * Delivery, at least once, across instances, by the scheduler. A delivery's job claims it in
 * the scheduler's transaction (the scheduler's FOR UPDATE SKIP LOCKED, in the event company's
 * lane): it counts the attempt and schedules the next job of the delivery at the end of a lease
 * (timeout + 60 s), then commits. The HTTP call runs after that commit, outside every
 * transaction and outside the scheduler's pass, so a receiver that is slow or never answers
 * holds only its own socket, never a connection, a lock or other endpoints' deliveries. Its
 * outcome is recorded in a transaction of its own: a 2xx cancels the lease's job, a failure
 * moves it to the retry's time. An instance killed during the call never records an outcome:
 * the lease's job runs the next attempt, with the same `webhook-id`.
 */
export function createWebhookDelivery(deps: {
  db: Kysely<DB>
  repo: WebhookEndpointsRepository
  scheduler: Pick<Scheduler, 'register' | 'reschedule' | 'cancel'>
  clock: Clock
  log: FastifyBaseLogger
  timeoutMs: number
  allowPrivateTargets: boolean
  observer?: DeliveryObserver
}) {
  const inFlight = new Set<Promise<unknown>>()
  const perEndpoint = new Map<string, number>()
  const waits = new Map<string, Waiting>()
  const callMs = new Map<string, number>()
  const lookup = guardedLookup(deps.allowPrivateTargets)
  // Connections kept open between deliveries to the same receiver: a new TCP (and TLS) connection
  // per delivery was an eighth of the delivering instance's CPU (bench/findings.md, events). The
  // bound per endpoint is MAX_IN_FLIGHT_PER_ENDPOINT's, not the agent's; a socket is connected
  // through the guarded lookup, so a reused one reaches only an address that passed the guard.
  const agents = {
    http: new http.Agent({ keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: MAX_IN_FLIGHT_PER_ENDPOINT, scheduling: 'lifo' }),
    https: new https.Agent({ keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: MAX_IN_FLIGHT_PER_ENDPOINT, scheduling: 'lifo' }),
  }
  const jobKey = (deliveryId: string, seq: number) => `${deliveryId}/${seq}`

  async function claim(ctx: JobContext) {
    const deliveryId = String(ctx.payload.delivery_id)
    const d = await deps.repo.lockDelivery(ctx.trx, deliveryId)
    // Delivered, given up, deleted with its endpoint, or a job another one replaced: nothing to do.
    if (!d || d.status !== 'pending' || d.job_seq !== Number(ctx.payload.seq)) return
    if (!d.enabled) {
      await deps.repo.settleDelivery(ctx.trx, d.id, { status: 'failed', nextAttemptAt: null })
      return
    }
    const seq = d.job_seq + 1
    if ((perEndpoint.get(d.endpoint_id) ?? 0) >= MAX_IN_FLIGHT_PER_ENDPOINT) {
      await deps.repo.deferDelivery(ctx.trx, d.id, seq)
      await deps.scheduler.reschedule(ctx.trx, {
        kind: DELIVER_JOB, key: jobKey(d.id, seq), runAt: deferredUntil(d.endpoint_id, ctx.now.getTime()), companyId: d.company_id, payload: { delivery_id: d.id, seq },
      })
      return
    }
    // The slot is taken now, in the claim, not once the job commits: with several workers, claims
    // of one endpoint run at once and each would otherwise pass the check above. Given back if the
    // job's transaction does not commit (then no call is made).
    perEndpoint.set(d.endpoint_id, (perEndpoint.get(d.endpoint_id) ?? 0) + 1)
    ctx.onAbort(() => release(d.endpoint_id))
    const attempt = d.attempts + 1
    const attemptId = await deps.repo.startAttempt(ctx.trx, { id: d.id, endpointId: d.endpoint_id, eventId: d.event_id, attempt, seq, at: ctx.now })
    await deps.scheduler.reschedule(ctx.trx, {
      kind: DELIVER_JOB, key: jobKey(d.id, seq), runAt: new Date(ctx.now.getTime() + deps.timeoutMs + LEASE_MARGIN_MS),
      companyId: d.company_id, payload: { delivery_id: d.id, seq },
    })
    // During a rotation's grace the secret it replaced signs too (migration 0025).
    const previous = d.previous_secret && d.previous_secret_expires_at && new Date(d.previous_secret_expires_at) > ctx.now ? [d.previous_secret] : []
    const secrets = [d.secret, ...previous]
    const body = JSON.stringify(eventView({ id: d.event_id, type: d.type, company_id: d.event_company_id, data: d.data, created_at: d.created_at }))
    ctx.afterCommit(() => {
      const sending = send(d.url, secrets, d.event_id, body).then((sent) => {
        const before = callMs.get(d.endpoint_id)
        callMs.set(d.endpoint_id, before === undefined ? sent.durationMs : 0.8 * before + 0.2 * sent.durationMs)
        return sent
      }).finally(() => release(d.endpoint_id))
      return track(sending.then((sent) => record({ deliveryId: d.id, attemptId, attempt, seq, endpointId: d.endpoint_id, companyId: d.company_id, eventId: d.event_id, sent })))
    })
  }

  /** Gives back an endpoint's slot; the last one forgets the endpoint's waits and call time. */
  function release(endpointId: string) {
    const left = (perEndpoint.get(endpointId) ?? 1) - 1
    if (left > 0) perEndpoint.set(endpointId, left)
    else { perEndpoint.delete(endpointId); waits.delete(endpointId); callMs.delete(endpointId) }
  }

  /**
   * When a delivery that found its endpoint at the bound comes back. Not all a second later: a
   * receiver that answers in 5 s frees 16 calls every 5 s, and a backlog of thousands brought back
   * every second was thousands of claims and reschedules a second for nothing, which took the
   * scheduler from every other endpoint (bench/findings.md, events). The waiting ones are spread
   * in waves of the bound, one wave per call duration seen (a moving average), from the moment
   * the endpoint reached its bound: the first wave a second later, as before.
   */
  function deferredUntil(endpointId: string, now: number): Date {
    const w = waits.get(endpointId) ?? { since: now, count: 0 }
    waits.set(endpointId, w)
    const wave = Math.floor(w.count++ / MAX_IN_FLIGHT_PER_ENDPOINT)
    const spacing = Math.max(DEFER_MS / 10, callMs.get(endpointId) ?? DEFER_MS)
    // At most MAX_DEFER_MS ahead: a wait is not an attempt, and a delivery must not sit far out
    // because its endpoint stayed busy for long (each comes back and queues again).
    return new Date(Math.min(now + MAX_DEFER_MS, Math.max(now + DEFER_MS, w.since + DEFER_MS + wave * spacing)))
  }

  function track<T>(work: Promise<T>): Promise<T> {
    inFlight.add(work)
    void work.catch((err: unknown) => deps.log.error({ err }, 'webhook delivery outcome not recorded')).finally(() => inFlight.delete(work))
    return work
  }

  /** One POST with the Standard Webhooks headers; never throws. */
  function send(target: string, secrets: string[], eventId: string, body: string): Promise<Sent> {
    const started = performance.now()
    const done = (outcome: AttemptOutcome, statusCode: number | null, error: string | null): Sent =>
      ({ outcome, statusCode, error, durationMs: Math.round(performance.now() - started) })
    return new Promise<Sent>((resolve) => {
      let url: URL
      try { url = new URL(target) } catch { return resolve(done('refused', null, 'The endpoint URL is not a URL')) }
      const host = hostOf(url)
      if (!deps.allowPrivateTargets && net.isIP(host) && isPrivateAddress(host)) {
        return resolve(done('refused', null, `${host} is a loopback, private or link-local address`))
      }
      const headers = {
        'content-type': 'application/json', 'user-agent': 'company-admin-api-webhooks/1', 'content-length': String(Buffer.byteLength(body)),
        ...signatureHeaders(secrets, eventId, body, Math.floor(Date.now() / 1000)),
      }
      const secure = url.protocol === 'https:'
      const request = (secure ? https : http).request(url, { method: 'POST', headers, lookup, agent: secure ? agents.https : agents.http }, (response) => {
        let received = 0
        response.on('data', (chunk: Buffer) => {
          // The body is not needed: read a little, then stop paying for it.
          received += chunk.length
          if (received > MAX_RESPONSE_BYTES) response.destroy()
        })
        const finish = () => {
          clearTimeout(timer)
          const status = response.statusCode ?? 0
          resolve(status >= 200 && status < 300 ? done('succeeded', status, null) : done('failed', status, `The receiver answered ${status}`))
        }
        response.on('end', finish)
        response.on('close', finish)
        response.on('error', finish)
      })
      const timer = setTimeout(() => {
        request.destroy()
        resolve(done('timeout', null, `No answer within ${deps.timeoutMs} ms`))
      }, deps.timeoutMs)
      request.on('error', (err) => {
        clearTimeout(timer)
        resolve(err instanceof TargetRefused ? done('refused', null, err.message) : done('error', null, err.message))
      })
      request.end(body)
    })
  }

  /** Records an attempt's outcome and decides what comes next, if this attempt still owns the delivery. */
  async function record(a: { deliveryId: string; attemptId: number; attempt: number; seq: number; endpointId: string; companyId: string | null; eventId: string; sent: Sent }) {
    deps.observer?.attempt(a.sent.outcome)
    const now = deps.clock.now()
    await deps.db.transaction().execute(async (trx) => {
      const d = await deps.repo.lockDelivery(trx, a.deliveryId)
      if (!d) return
      const current = d.status === 'pending' && d.job_seq === a.seq
      const succeeded = a.sent.outcome === 'succeeded'
      const delay = RETRY_DELAYS_MS[a.attempt - 1]
      const retryAt = current && !succeeded && delay !== undefined ? new Date(now.getTime() + delay) : null
      await deps.repo.finishAttempt(trx, a.attemptId, { ...a.sent, nextRetryAt: retryAt })
      // A late outcome (its lease ran out and the next attempt started) is kept, and decides nothing.
      if (!current) return
      const key = jobKey(a.deliveryId, a.seq)
      if (succeeded) {
        await deps.repo.settleDelivery(trx, a.deliveryId, { status: 'delivered', nextAttemptAt: null, deliveredAt: now })
        await deps.scheduler.cancel(trx, DELIVER_JOB, key)
      } else if (retryAt) {
        await deps.repo.settleDelivery(trx, a.deliveryId, { status: 'pending', nextAttemptAt: retryAt })
        await deps.scheduler.reschedule(trx, { kind: DELIVER_JOB, key, runAt: retryAt, companyId: a.companyId, payload: { delivery_id: a.deliveryId, seq: a.seq } })
      } else {
        await deps.repo.settleDelivery(trx, a.deliveryId, { status: 'failed', nextAttemptAt: null })
        await deps.scheduler.cancel(trx, DELIVER_JOB, key)
        await deps.repo.disableEndpoint(trx, a.endpointId, `Disabled at ${now.toISOString()}: the event ${a.eventId} could not be delivered in ${a.attempt} attempts over three days`)
      }
    })
  }

  // By real time: a receiver's timeouts and retry delays are real seconds, and the events (and
  // their deliveries' jobs) are dated by the database's clock; a test clock's advance must not
  // step past a lease while its call is still under way and send the event again.
  deps.scheduler.register(DELIVER_JOB, claim, { realTime: true })

  return {
    /** Resolves once every HTTP call this instance started has its outcome recorded (tests; shutdown). */
    async settled(): Promise<void> {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight])
    },
    inFlight: () => inFlight.size,
    /** Closes the kept-open connections (after settled(), at shutdown). */
    close() {
      agents.http.destroy()
      agents.https.destroy()
    },
  }
}

export type WebhookDelivery = ReturnType<typeof createWebhookDelivery>
