import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Forbidden, InsufficientScope, NotFound, Unauthorized } from '../core/errors.ts'
import type { Principal } from '../core/principal.ts'
import type { TokenKeys } from '../modules/oauth/oauth.tokens.ts'
import type { AccessState } from '../modules/oauth/oauth.access.ts'
import type { ClientAccessState } from '../modules/oauth/oauth.repository.ts'
import { bearerToken, verifiedBearer } from './bearer.ts'

// Who may call a route: `none` looks at no token; `public` takes none or a valid one; `platform`
// a platform token (with `write:company` beyond GET); `{ area }` `read:<area>` for GET, else `write:<area>`.
export type Access = 'none' | 'public' | 'platform' | { area: string; mode?: 'read' | 'write' }

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access
  }
  interface FastifyRequest {
    principal: Principal | null
  }
}

export function scopeNeeded(access: Access, method: string): string | undefined {
  const reads = method === 'GET' || method === 'HEAD'
  // A platform token narrowed to read scopes changes nothing.
  if (access === 'platform') return reads ? undefined : PLATFORM_WRITE_SCOPE
  if (typeof access !== 'object') return undefined
  return `${access.mode ?? (reads ? 'read' : 'write')}:${access.area}`
}

export const PLATFORM_WRITE_SCOPE = 'write:company'

export function installAuth(
  app: FastifyInstance,
  deps: { keys: Pick<TokenKeys, 'verify' | 'cached'>; access: Pick<AccessState, 'get' | 'fresh'> },
) {
  app.decorateRequest('principal', null)

  app.addHook('onRoute', (route) => {
    const access = route.config?.access
    if (!access || access === 'none') return
    const method = Array.isArray(route.method) ? route.method[0]! : route.method
    const needed = scopeNeeded(access, method)
    const optional = access === 'public'
    // Callback style: a token seen before is checked synchronously, only a miss waits for verify().
    const hook = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
      let known: Principal | null | undefined
      try {
        known = authenticateCached(request)
        if (known !== undefined) {
          authorize(request, reply, known)
          return done()
        }
      } catch (err) {
        return done(err as Error)
      }
      authenticate(request, optional)
        .then((principal) => {
          authorize(request, reply, principal)
          done()
        })
        .catch((err: Error) => done(err))
    }
    const authorize = (request: FastifyRequest, reply: FastifyReply, principal: Principal | null) => {
      request.principal = principal
      if (!principal) return
      logAs(request, reply, principal)
      if (access === 'platform' && principal.companyId !== null)
        throw new Forbidden('Only a platform client may do this')
      if (needed && !principal.scopes.has(needed)) throw new InsufficientScope(needed)
      // A company's token on another company's path is answered as if that company did not exist.
      const companyId = (request.params as Record<string, string> | undefined)?.company_id
      if (companyId !== undefined && principal.companyId !== null && principal.companyId !== companyId) {
        throw new NotFound('Company')
      }
    }
    route.onRequest = [hook, ...toArray(route.onRequest)]
  })

  function authenticateCached(request: FastifyRequest): Principal | null | undefined {
    const header = request.headers.authorization
    if (header === undefined || !header.startsWith('Bearer ')) return undefined
    const principal = deps.keys.cached(header.slice(7))
    if (!principal) return undefined
    const fresh = deps.access.fresh(principal.clientId)
    if (!fresh) return undefined
    admit(fresh.state)
    return principal
  }

  async function authenticate(request: FastifyRequest, optional: boolean): Promise<Principal | null> {
    const header = request.headers.authorization
    if (header === undefined) {
      if (optional) return null
      throw new Unauthorized()
    }
    if (bearerToken(header) === undefined) throw new Unauthorized('The Authorization header must be "Bearer <token>"')
    const principal = await verifiedBearer(request, deps.keys)
    if (!principal) throw new Unauthorized('The token is invalid or expired')
    admit(await deps.access.get(principal.clientId))
    return principal
  }
}

// Later log lines name the client and company, bound before the checks so a refusal names who was refused.
function logAs(request: FastifyRequest, reply: FastifyReply, principal: Principal) {
  const log = request.log.child({ client_id: principal.clientId, company_id: principal.companyId })
  request.log = log
  reply.log = log
}

function admit(state: ClientAccessState | undefined) {
  if (!state || state.revoked) throw new Unauthorized("The token's client has been revoked")
  if (state.companyDisabled) throw new Forbidden('The company is disabled')
}

function toArray<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return []
  return Array.isArray(value) ? value : [value]
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Unauthorized()
  return request.principal
}
