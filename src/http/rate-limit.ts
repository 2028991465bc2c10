import type { FastifyInstance } from 'fastify'
import { RateLimited } from './errors.ts'

const EXEMPT = new Set(['/health', '/ready', '/metrics'])

/**
 * A fixed window per token (anonymous callers: per address), counted in this process. Each
 * instance limits on its own: with N instances behind a balancer a client gets up to N times
 * the limit, which docs/operations.md says.
 */
export function installRateLimit(app: FastifyInstance, settings: { max: number; windowSeconds: number }) {
  if (settings.max === 0) return
  let windowStart = Date.now()
  let counts = new Map<string, number>()

  app.addHook('onRequest', async (request, reply) => {
    if (EXEMPT.has(request.url)) return
    const now = Date.now()
    if (now - windowStart >= settings.windowSeconds * 1000) {
      windowStart = now
      counts = new Map()
    }
    const key = request.headers.authorization ?? `ip:${request.ip}`
    const used = (counts.get(key) ?? 0) + 1
    counts.set(key, used)
    const reset = Math.max(1, Math.ceil((windowStart + settings.windowSeconds * 1000 - now) / 1000))
    reply.header('ratelimit-limit', settings.max)
    reply.header('ratelimit-remaining', Math.max(0, settings.max - used))
    reply.header('ratelimit-reset', reset)
    if (used > settings.max) throw new RateLimited(reset)
  })
}
