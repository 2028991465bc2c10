import type { FastifyInstance, FastifyRequest } from 'fastify'
import underPressure from '@fastify/under-pressure'
import { ServiceUnavailable } from '../core/errors.ts'

// Probes and scrapes answer whatever the load: a balancer would kill a process that is only busy.
export const NEVER_SHED: ReadonlySet<string> = new Set(['/health', '/ready', '/metrics'])
const neverShed = (request: FastifyRequest) => NEVER_SHED.has(request.routeOptions.url ?? '')

export interface SheddingSettings {
  maxInFlight: number
  /** Mean event-loop delay in ms; 0: not checked. */
  maxEventLoopDelayMs: number
  maxHeapUsedBytes: number
  retryAfterSeconds: number
}

// While over a threshold, requests get 503 with Retry-After, so the requests taken finish in time.
export async function installLoadShedding(
  app: FastifyInstance,
  settings: SheddingSettings,
  onShed?: (kind: string) => void,
) {
  if (settings.maxInFlight > 0) boundInFlight(app, settings.maxInFlight, onShed)
  if (settings.maxEventLoopDelayMs === 0 && settings.maxHeapUsedBytes === 0) return
  await app.register(underPressure, {
    maxEventLoopDelay: settings.maxEventLoopDelayMs,
    maxHeapUsedBytes: settings.maxHeapUsedBytes,
    pressureHandler: async (request: FastifyRequest, _reply, type: string) => {
      if (neverShed(request)) return
      onShed?.(type)
      throw new ServiceUnavailable('The service is overloaded; retry shortly', settings.retryAfterSeconds)
    },
  })
}

/**
 * At most `max` requests worked on at once; the next gets 503 with `Retry-After: 1`. The slot is
 * held from preHandler to onSend, so slow clients hold none; a client that goes away keeps it until
 * its handler is done, as the work goes on. Queueing beyond the bound would only lengthen every answer.
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
      return done(
        new ServiceUnavailable('The service is working on as many requests as it takes at once; retry shortly', 1),
      )
    }
    inFlight++
    holding.add(request)
    // A hijacked reply has no onSend: its end gives the slot back.
    reply.raw.once('close', () => {
      if (reply.sent) release(request)
    })
    done()
  })
  app.addHook('onSend', (request, _reply, payload, done) => {
    release(request)
    done(null, payload)
  })
}
