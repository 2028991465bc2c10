import type { FastifyInstance, FastifyRequest } from 'fastify'
import { RateLimited } from '../core/errors.ts'
import type { TokenKeys } from '../modules/oauth/oauth.tokens.ts'
import { verifiedBearer } from './bearer.ts'

const EXEMPT = new Set(['/health', '/ready', '/metrics'])

/**
 * A fixed window per verified client (else per address), counted per instance (docs/operations.md).
 * Made-up tokens count against their address, so minting tokens buys no fresh budget; the token's
 * verification is the one authentication reuses.
 */
export function installRateLimit(
  app: FastifyInstance,
  settings: { max: number; windowSeconds: number },
  keys: Pick<TokenKeys, 'verify'>,
  onRefused?: () => void,
) {
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
