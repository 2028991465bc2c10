import type { FastifyInstance, FastifyRequest } from 'fastify'
import underPressure from '@fastify/under-pressure'
import { ServiceUnavailable } from './errors.ts'

// Probes and scrapes answer whatever the load: a balancer that saw /health fail would kill a
// process that is only busy, and the metrics are how an operator sees the load.
const NEVER_SHED = new Set(['/health', '/ready', '/metrics'])

export interface SheddingSettings {
  /** Mean event-loop delay over the last sample, in ms, beyond which requests are refused; 0: not checked. */
  maxEventLoopDelayMs: number
  /** V8 heap in use beyond which requests are refused; 0: not checked. */
  maxHeapUsedBytes: number
  retryAfterSeconds: number
}

/**
 * Load shedding (@fastify/under-pressure): while the process is over a threshold, requests are
 * answered 503 with Retry-After in the service's error shape before any work is done for them,
 * so that the requests it does take finish in time instead of every request timing out.
 * Under-pressure samples once a second; each instance sheds on its own.
 */
export async function installLoadShedding(app: FastifyInstance, settings: SheddingSettings, onShed?: (kind: string) => void) {
  if (settings.maxEventLoopDelayMs === 0 && settings.maxHeapUsedBytes === 0) return
  await app.register(underPressure, {
    maxEventLoopDelay: settings.maxEventLoopDelayMs,
    maxHeapUsedBytes: settings.maxHeapUsedBytes,
    // A rejected promise goes to the error handler; a resolved one lets the request through.
    pressureHandler: async (request: FastifyRequest, _reply, type: string) => {
      if (NEVER_SHED.has(request.url.split('?')[0]!.replace(/(.)\/$/, '$1'))) return
      onShed?.(type)
      throw new ServiceUnavailable('The service is overloaded; retry shortly', settings.retryAfterSeconds)
    },
  })
}
