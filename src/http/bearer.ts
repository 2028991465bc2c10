import type { FastifyRequest } from 'fastify'
import type { Principal } from '../core/principal.ts'
import type { TokenKeys } from '../modules/oauth/oauth.tokens.ts'

/** RFC 6750's b64token characters. */
const BEARER = /^Bearer +([A-Za-z0-9\-_.~+/]+=*) *$/i

export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1]
}

const verifications = new WeakMap<FastifyRequest, Promise<Principal | undefined>>()

// Verified once per request, whichever hook asks first, so a token that never verifies costs one
// signature check per request, not one per hook.
export function verifiedBearer(
  request: FastifyRequest,
  keys: Pick<TokenKeys, 'verify'>,
): Promise<Principal | undefined> {
  let verification = verifications.get(request)
  if (!verification) {
    const token = bearerToken(request.headers.authorization)
    verification = token === undefined ? Promise.resolve(undefined) : keys.verify(token)
    verifications.set(request, verification)
  }
  return verification
}
