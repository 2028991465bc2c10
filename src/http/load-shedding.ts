import type { FastifyInstance, FastifyRequest } from 'fastify'
import underPressure from '@fastify/under-pressure'
import { ServiceUnavailable } from '../core/errors.ts'

// Probes and scrapes answer whatever the load: a balancer that saw /health fail would kill a
// process that is only busy, and the metrics are how an operator sees the load.
export const NEVER_SHED: ReadonlySet<string> = new Set(['/health', '/ready', '/metrics'])
const neverShed = (request: FastifyRequest) => NEVER_SHED.has(request.routeOptions.url ?? '')

export interface SheddingSettings {
  /** Requests being worked on at once beyond which a new one is refused; 0: not bounded. */
  maxInFlight: number
  /** Mean event-loop delay over the last sample, in ms, beyond which requests are refused; 0: not checked. */
  maxEventLoopDelayMs: number
  /** V8 heap in use beyond which requests are refused; 0: not checked. */
  maxHeapUsedBytes: number
  retryAfterSeconds: number
}

/**
 * Load shedding: while the process is over a threshold, requests are answered 503 with
 * Retry-After in the service's error shape, so that the requests it does take finish in time
 * instead of every request waiting behind all the others. Each instance sheds on its own.
 */
export async function installLoadShedding(app: FastifyInstance, settings: SheddingSettings, onShed?: (kind: string) => void) {
  if (settings.maxInFlight > 0) boundInFlight(app, settings.maxInFlight, onShed)
  if (settings.maxEventLoopDelayMs === 0 && settings.maxHeapUsedBytes === 0) return
  // @fastify/under-pressure samples once a second and refuses before any work is done.
  await app.register(underPressure, {
    maxEventLoopDelay: settings.maxEventLoopDelayMs,
    maxHeapUsedBytes: settings.maxHeapUsedBytes,
    // A rejected promise goes to the error handler; a resolved one lets the request through.
    pressureHandler: async (request: FastifyRequest, _reply, type: string) => {
      if (neverShed(request)) return
      onShed?.(type)
      throw new ServiceUnavailable('The service is overloaded; retry shortly', settings.retryAfterSeconds)
    },
  })
}

/**
 * At most `max` requests worked on at once; the next one is refused with 503 and
 * `Retry-After: 1` (docs/decisions.md, "Requests in flight are bounded"). A request holds its slot
 * from the preHandler stage, once its body is in and it is known to be valid and allowed, until
 * its answer is handed over to be sent (onSend): a client sending its body slowly, or reading its
 * answer slowly, holds none, and what is bounded is the stage that queries the database. A client
 * that goes away keeps its slot until its handler is done (Fastify still runs it, and onSend):
 * otherwise a client aborting its requests, or a balancer timing them out under load, would free
 * slots while their work goes on. Beyond the bound, queueing only lengthens every answer (the
 * cores and the database connections are already busy); a quick 503 lets a client or a balancer
 * go elsewhere or come back, while the requests taken finish in time.
 */
function boundInFlight(app: FastifyInstance, max: number, onShed?: (kind: string) => void) {
  let inFlight = 0
  const holding = new WeakSet<FastifyRequest>()
  const release = (request: FastifyRequest) => {
    if (holding.delete(request)) inFlight--
  }
  app.addHook('preHandler', (request, reply, done) => {
    if (neverShed(request)) return done()
    if (inFlight >= max) {
      onShed?.('in_flight')
      return done(new ServiceUnavailable('The service is working on as many requests as it takes at once; retry shortly', 1))
    }
    inFlight++
    holding.add(request)
    // A reply taken over by its handler (hijacked) has no onSend: its end gives the slot back.
    // An ordinary reply is sent (reply.sent) only once its onSend has run, which released it.
    reply.raw.once('close', () => { if (reply.sent) release(request) })
    done()
  })
  app.addHook('onSend', (request, _reply, payload, done) => {
    release(request)
    done(null, payload)
  })
}
