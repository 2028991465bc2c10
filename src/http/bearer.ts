import type { FastifyRequest } from 'fastify'
import type { Principal } from '../core/principal.ts'
import type { TokenKeys } from '../modules/oauth/oauth.tokens.ts'

/** `Bearer <token>`, the token made of the characters RFC 6750 allows (b64token). */
const BEARER = /^Bearer +([A-Za-z0-9\-_.~+/]+=*) *$/i

/** The token of an Authorization header; undefined without one, or when it is no bearer token. */
export function bearerToken(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1]
}

const verifications = new WeakMap<FastifyRequest, Promise<Principal | undefined>>()

/**
 * The request's bearer token verified once, whichever hook asks first (the rate limit counts the
 * verified client's budget, then authentication needs the principal): a token that does not
 * verify, and so is never cached, costs one signature check per request, not one per hook.
 */
export function verifiedBearer(request: FastifyRequest, keys: Pick<TokenKeys, 'verify'>): Promise<Principal | undefined> {
  let verification = verifications.get(request)
  if (!verification) {
    const token = bearerToken(request.headers.authorization)
    verification = token === undefined ? Promise.resolve(undefined) : keys.verify(token)
    verifications.set(request, verification)
  }
  return verification
}
