import type { FastifyInstance, FastifyRequest } from 'fastify'
import { RateLimited } from '../core/errors.ts'
import type { TokenKeys } from '../modules/oauth/oauth.tokens.ts'
import { verifiedBearer } from './bearer.ts'

const EXEMPT = new Set(['/health', '/ready', '/metrics'])

/**
 * A fixed window per client (anonymous callers: per address), counted in this process. Each
 * instance limits on its own: with N instances behind a balancer a client gets up to N times
 * the limit, which docs/operations.md says.
 *
 * The budget is the verified client's, not the raw header's: a made-up token would otherwise buy
 * a fresh budget (and a map entry) each, and a client minting tokens would multiply its own. A
 * token that does not verify counts against its address. The verification is the request's one
 * (bearer.ts), which authentication then reuses: for a token seen before, a map lookup.
 */
export function installRateLimit(app: FastifyInstance, settings: { max: number; windowSeconds: number }, keys: Pick<TokenKeys, 'verify'>, onRefused?: () => void) {
  if (settings.max === 0) return
  let windowStart = Date.now()
  let counts = new Map<string, number>()

  app.addHook('onRequest', async (request, reply) => {
    if (EXEMPT.has(request.url.split('?')[0]!.replace(/(.)\/$/, '$1'))) return
    const now = Date.now()
    if (now - windowStart >= settings.windowSeconds * 1000) {
      windowStart = now
      counts = new Map()
    }
    const key = await budgetOf(request)
    const used = (counts.get(key) ?? 0) + 1
    counts.set(key, used)
    const reset = Math.max(1, Math.ceil((windowStart + settings.windowSeconds * 1000 - now) / 1000))
    reply.header('ratelimit-limit', settings.max)
    reply.header('ratelimit-remaining', Math.max(0, settings.max - used))
    reply.header('ratelimit-reset', reset)
    if (used > settings.max) {
      onRefused?.()
      throw new RateLimited(reset)
    }
  })

  async function budgetOf(request: FastifyRequest): Promise<string> {
    const principal = await verifiedBearer(request, keys)
    return principal ? `client:${principal.clientId}` : `ip:${request.ip}`
  }
}
