import { createPrivateKey, randomUUID, sign as signBytes, type JsonWebKey as NodeJsonWebKey, type KeyObject } from 'node:crypto'
import { exportJWK, generateKeyPair, importJWK, jwtVerify, type JWK, type CryptoKey as JoseKey, type JWTPayload } from 'jose'
import type { Clock } from '../../clock.ts'
import type { OauthRepository } from './oauth.repository.ts'

export interface Principal {
  clientId: string
  /** null for a platform client. */
  companyId: string | null
  scopes: ReadonlySet<string>
  /** Unix seconds. */
  expiresAt: number
}

export interface TokenSettings { issuer: string; audience: string; ttlSeconds: number }

const ALG = 'EdDSA'
const CACHE_LIMIT = 50_000

/**
 * Signs and verifies access tokens. Keys live in the database so that every instance signs with
 * the same (oldest) key and verifies the others'. A verified token is kept until it expires, so
 * the hot path pays a map lookup, not a signature check.
 */
export function createTokenKeys(repo: Pick<OauthRepository, 'listSigningKeys' | 'insertSigningKey'>, settings: TokenSettings, clock: Clock) {
  // The signing key as a node:crypto KeyObject: signing is then one synchronous Ed25519 call
  // (about 50 µs) instead of jose's WebCrypto round trip; the header is encoded once.
  let signing: { kid: string; key: KeyObject; header: string } | undefined
  let verifying = new Map<string, JoseKey | Uint8Array>()
  let publicJwks: JWK[] = []
  let lastReload = 0
  const verified = new Map<string, Principal>()

  async function load() {
    let rows = await repo.listSigningKeys()
    if (rows.length === 0) {
      const { privateKey, publicKey } = await generateKeyPair(ALG, { crv: 'Ed25519', extractable: true })
      const kid = randomUUID()
      await repo.insertSigningKey(kid, { ...(await exportJWK(privateKey)), kid, alg: ALG }, { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' })
      rows = await repo.listSigningKeys()
    }
    const next = new Map<string, JoseKey | Uint8Array>()
    for (const row of rows) next.set(row.kid, await importJWK(row.public_jwk as JWK, ALG))
    verifying = next
    publicJwks = rows.map((r) => r.public_jwk as JWK)
    const first = rows[0]!
    signing = {
      kid: first.kid,
      key: createPrivateKey({ key: first.private_jwk as NodeJsonWebKey, format: 'jwk' }),
      header: base64url({ alg: ALG, kid: first.kid, typ: 'at+jwt' }),
    }
    lastReload = Date.now()
  }

  async function sign(claims: { sub: string; scope: string; company_id?: string }): Promise<{ token: string; expiresIn: number }> {
    if (!signing) await load()
    const now = Math.floor(clock.now().getTime() / 1000)
    const payload = base64url({
      scope: claims.scope, ...(claims.company_id ? { company_id: claims.company_id } : {}),
      iss: settings.issuer, aud: settings.audience, sub: claims.sub, iat: now, exp: now + settings.ttlSeconds, jti: randomUUID(),
    })
    const input = `${signing!.header}.${payload}`
    const token = `${input}.${signBytes(null, Buffer.from(input), signing!.key).toString('base64url')}`
    return { token, expiresIn: settings.ttlSeconds }
  }

  /**
   * Synchronously, a token verified before: its principal while unexpired, null once expired,
   * undefined when it has not been verified yet (then verify() is needed).
   */
  function cached(token: string): Principal | null | undefined {
    const hit = verified.get(token)
    if (!hit) return undefined
    if (hit.expiresAt > clock.now().getTime() / 1000) return hit
    verified.delete(token)
    return null
  }

  /** The principal of a token, or undefined when it is not a valid, unexpired token of ours. */
  async function verify(token: string): Promise<Principal | undefined> {
    const hit = cached(token)
    if (hit !== undefined) return hit ?? undefined
    if (!signing) await load()
    let payload: JWTPayload
    try {
      ;({ payload } = await jwtVerify(token, async (header) => {
        let key = header.kid ? verifying.get(header.kid) : undefined
        // A key made by another instance after this one loaded: reload, at most once a second.
        if (!key && header.kid && Date.now() - lastReload > 1000) {
          await load()
          key = verifying.get(header.kid)
        }
        if (!key) throw new Error('unknown key')
        return key
      }, {
        // RFC 9068 §4: an access token says so in its header; an ID token or any other JWT signed by
        // the same key is not one.
        issuer: settings.issuer, audience: settings.audience, algorithms: [ALG], typ: 'at+jwt',
        requiredClaims: ['exp', 'iat', 'jti'], currentDate: clock.now(),
      }))
    } catch {
      return undefined
    }
    if (typeof payload.sub !== 'string' || typeof payload.exp !== 'number' || typeof payload.scope !== 'string') return undefined
    const principal: Principal = {
      clientId: payload.sub,
      companyId: typeof payload.company_id === 'string' ? payload.company_id : null,
      scopes: new Set(payload.scope.split(' ').filter(Boolean)),
      expiresAt: payload.exp,
    }
    if (verified.size >= CACHE_LIMIT) verified.delete(verified.keys().next().value!)
    verified.set(token, principal)
    return principal
  }

  return {
    load,
    sign,
    verify,
    cached,
    jwks: () => ({ keys: publicJwks }),
  }
}

export type TokenKeys = ReturnType<typeof createTokenKeys>


const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
