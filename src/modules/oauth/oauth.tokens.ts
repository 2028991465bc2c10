import {
  createPrivateKey,
  randomUUID,
  sign as signBytes,
  type JsonWebKey as NodeJsonWebKey,
  type KeyObject,
} from 'node:crypto'
import {
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  type JWK,
  type CryptoKey as JoseKey,
  type JWTPayload,
} from 'jose'
import type { Clock } from '../../core/clock.ts'
import type { Config } from '../../config.ts'
import type { Database } from '../../db/database.ts'
import type { OauthRepository, SigningKeyRow } from './oauth.repository.ts'
import { BoundedMap } from '../../core/bounded-map.ts'
import type { Principal } from '../../core/principal.ts'

export interface TokenSettings {
  issuer: string
  audience: string
  ttlSeconds: number
  /** How long a key signs before the next takes over; 0: only `rotate()` makes one. */
  rotationDays: number
  publishAheadSeconds: number
}

export function tokenSettings(
  config: Pick<
    Config,
    | 'TOKEN_ISSUER'
    | 'TOKEN_AUDIENCE'
    | 'TOKEN_TTL_SECONDS'
    | 'SIGNING_KEY_ROTATION_DAYS'
    | 'SIGNING_KEY_PUBLISH_AHEAD_SECONDS'
  >,
): TokenSettings {
  return {
    issuer: config.TOKEN_ISSUER,
    audience: config.TOKEN_AUDIENCE,
    ttlSeconds: config.TOKEN_TTL_SECONDS,
    rotationDays: config.SIGNING_KEY_ROTATION_DAYS,
    publishAheadSeconds: config.SIGNING_KEY_PUBLISH_AHEAD_SECONDS,
  }
}

const ALG = 'EdDSA'
const CACHE_LIMIT = 50_000
/** How far ahead of ours another clock may be: a later `iat` is refused. */
export const CLOCK_SKEW_SECONDS = 60
const CHANNEL = 'signing_keys_changed'
// A safety net for a missed notification.
const RELOAD_MS = 60_000

interface Key {
  kid: string
  generation: number
  /** Unix milliseconds. */
  activeFrom: number
  retireAt: number | null
  verifying: JoseKey | Uint8Array
  publicJwk: JWK
  row: SigningKeyRow
}

type KeyRepo = Pick<OauthRepository, 'listSigningKeys' | 'addSigningKey' | 'deleteRetiredSigningKeys'>

/**
 * Signs and verifies access tokens with keys kept in the database, shared by every instance. A next
 * key is published ahead of signing; the previous one verifies until its last token expires
 * (docs/operations.md). A verified token is cached until it expires or its key retires.
 */
export function createTokenKeys(repo: KeyRepo, settings: TokenSettings, clock: Clock) {
  let keys: Key[] = []
  let byKid = new Map<string, Key>()
  // A node:crypto KeyObject signs synchronously, without jose's WebCrypto round trip; the header is encoded once.
  const signers = new Map<string, { key: KeyObject; header: string }>()
  let lastReload = 0
  let loads = 0
  let applied = 0
  let maintaining: Promise<void> | undefined
  const verified = new BoundedMap<string, { principal: Principal; kid: string }>(CACHE_LIMIT)
  const periodMs = settings.rotationDays * 86_400_000
  const aheadMs = settings.publishAheadSeconds * 1000
  const overlapMs = (settings.ttlSeconds + CLOCK_SKEW_SECONDS) * 1000

  const nowMs = () => clock.now().getTime()
  const live = (key: Key, at: number) => key.retireAt === null || at < key.retireAt

  /** Reads the keys (making the first on an empty table); a read overtaken by a later one is dropped. */
  async function load() {
    const mine = ++loads
    let rows = await repo.listSigningKeys()
    if (rows.length === 0) {
      await add(1, new Date(nowMs()), { retireAt: new Date(nowMs()) })
      rows = await repo.listSigningKeys()
    }
    const next: Key[] = []
    for (const row of rows) {
      const known = byKid.get(row.kid)
      next.push({
        kid: row.kid,
        generation: row.generation,
        activeFrom: row.active_from.getTime(),
        retireAt: row.retire_at?.getTime() ?? null,
        verifying: known?.verifying ?? (await importJWK(row.public_jwk as JWK, ALG)),
        publicJwk: row.public_jwk as JWK,
        row,
      })
    }
    if (mine < applied) return
    applied = mine
    keys = next
    byKid = new Map(next.map((k) => [k.kid, k]))
    for (const kid of signers.keys()) if (!byKid.has(kid)) signers.delete(kid)
    lastReload = Date.now()
  }

  /** false when another instance made that generation first. */
  async function add(
    generation: number,
    activeFrom: Date,
    others: { retireAt: Date } | { drop: true },
  ): Promise<{ kid: string; added: boolean }> {
    const { privateKey, publicKey } = await generateKeyPair(ALG, { crv: 'Ed25519', extractable: true })
    const kid = randomUUID()
    const added = await repo.addSigningKey(
      {
        kid,
        generation,
        activeFrom,
        privateJwk: { ...(await exportJWK(privateKey)), kid, alg: ALG },
        publicJwk: { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' },
      },
      others,
    )
    return { kid, added }
  }

  /** The latest started key; before any started (a clock set back), the earliest. */
  function signingKey(at: number): Key | undefined {
    const candidates = keys.filter((k) => live(k, at))
    return candidates.filter((k) => k.activeFrom <= at).at(-1) ?? candidates[0]
  }

  async function addSuccessor(of: Key, activeFrom: number) {
    await add(of.generation + 1, new Date(activeFrom), { retireAt: new Date(activeFrom + overlapMs) })
    await load()
  }

  // Rarely anything: reload after a while, delete retired keys, make the next key when due. The
  // unique generation makes it happen once across instances.
  function maintain(at: number): Promise<void> | undefined {
    const stale = Date.now() - lastReload > RELOAD_MS
    const retired = keys.some((k) => k.retireAt !== null && k.retireAt <= at)
    const current = signingKey(at)
    const due =
      current !== undefined &&
      periodMs > 0 &&
      at >= current.activeFrom + periodMs - aheadMs &&
      !keys.some((k) => k.generation > current.generation)
    if (!stale && !retired && current && !due) return undefined
    maintaining ??= (async () => {
      try {
        // Serving on with the keys known beats failing.
        if (stale || !current)
          await load().catch((err) => {
            if (!current) throw err
          })
        if (retired) {
          await repo.deleteRetiredSigningKeys(new Date(at))
          await load()
        }
        const now = signingKey(at)
        if (due && now && !keys.some((k) => k.generation > now.generation)) {
          await addSuccessor(now, Math.max(at + aheadMs, now.activeFrom + periodMs))
        }
      } finally {
        maintaining = undefined
      }
    })()
    return maintaining
  }

  async function sign(claims: {
    sub: string
    scope: string
    company_id?: string
  }): Promise<{ token: string; expiresIn: number }> {
    const at = nowMs()
    const pending = maintain(at)
    if (pending) await pending
    const key = signingKey(at)
    if (!key) throw new Error('No signing key')
    let signer = signers.get(key.kid)
    if (!signer) {
      signer = {
        key: createPrivateKey({ key: key.row.private_jwk as NodeJsonWebKey, format: 'jwk' }),
        header: base64url({ alg: ALG, kid: key.kid, typ: 'at+jwt' }),
      }
      signers.set(key.kid, signer)
    }
    const now = Math.floor(at / 1000)
    const payload = base64url({
      scope: claims.scope,
      ...(claims.company_id ? { company_id: claims.company_id } : {}),
      iss: settings.issuer,
      aud: settings.audience,
      sub: claims.sub,
      iat: now,
      exp: now + settings.ttlSeconds,
      jti: randomUUID(),
    })
    const input = `${signer.header}.${payload}`
    const token = `${input}.${signBytes(null, Buffer.from(input), signer.key).toString('base64url')}`
    return { token, expiresIn: settings.ttlSeconds }
  }

  /**
   * Publishes a new key. Planned: it signs after the publication lead. Immediately (a leaked key): it
   * signs now and every other key is deleted, so their tokens are refused everywhere at once.
   */
  async function rotate(options: { immediately: boolean }): Promise<{ kid: string; activeFrom: Date }> {
    await load()
    const at = nowMs()
    const newest = keys.at(-1)!
    if (options.immediately) {
      for (let attempt = 0; ; attempt++) {
        const { kid, added } = await add(keys.at(-1)!.generation + 1, new Date(at), { drop: true })
        await load()
        if (added) return { kid, activeFrom: new Date(at) }
        if (attempt >= 3) throw new Error('Another rotation is under way: try again')
      }
    }
    if (newest.activeFrom <= at) await addSuccessor(newest, at + aheadMs)
    const next = keys.at(-1)!
    return { kid: next.kid, activeFrom: new Date(next.activeFrom) }
  }

  /** A token verified before: its principal, null once expired or its key retired, undefined when not yet verified. */
  function cached(token: string): Principal | null | undefined {
    const hit = verified.get(token)
    if (!hit) return undefined
    const at = nowMs()
    const key = byKid.get(hit.kid)
    if (hit.principal.expiresAt > at / 1000 && key && live(key, at)) return hit.principal
    verified.delete(token)
    return null
  }

  async function verify(token: string): Promise<Principal | undefined> {
    const hit = cached(token)
    if (hit !== undefined) return hit ?? undefined
    if (Date.now() - lastReload > RELOAD_MS)
      await load().catch(() => {
        /* verify with the keys known */
      })
    const at = nowMs()
    let payload: JWTPayload
    let kid = ''
    try {
      ;({ payload } = await jwtVerify(
        token,
        async (header) => {
          let key = header.kid ? byKid.get(header.kid) : undefined
          // A key made by another instance since the last load: reload, at most once a second.
          if (!key && header.kid && Date.now() - lastReload > 1000) {
            await load()
            key = byKid.get(header.kid)
          }
          if (!key || !live(key, at)) throw new Error('unknown or retired key')
          kid = key.kid
          return key.verifying
        },
        {
          // RFC 9068 §4: an access token says so in its header, so no other JWT of the same key passes.
          issuer: settings.issuer,
          audience: settings.audience,
          algorithms: [ALG],
          typ: 'at+jwt',
          requiredClaims: ['exp', 'iat', 'jti'],
          currentDate: new Date(at),
        },
      ))
    } catch {
      return undefined
    }
    if (
      typeof payload.sub !== 'string' ||
      typeof payload.exp !== 'number' ||
      typeof payload.iat !== 'number' ||
      typeof payload.scope !== 'string'
    )
      return undefined
    // None of ours is issued in the future or lives longer than the configured lifetime: such a
    // token was made elsewhere and would outlive rotation.
    if (payload.iat > at / 1000 + CLOCK_SKEW_SECONDS || payload.exp - payload.iat > settings.ttlSeconds)
      return undefined
    const principal: Principal = {
      clientId: payload.sub,
      companyId: typeof payload.company_id === 'string' ? payload.company_id : null,
      scopes: new Set(payload.scope.split(' ').filter(Boolean)),
      expiresAt: payload.exp,
    }
    verified.set(token, { principal, kid })
    return principal
  }

  return {
    load,
    sign,
    verify,
    cached,
    rotate,
    async listen(database: Pick<Database, 'listen'>) {
      await database.listen(CHANNEL, () => {
        load().catch(() => {
          /* the next sign or verify reads them again */
        })
      })
    },
    /** The signing key, a next one published ahead, and a previous one until it retires. */
    jwks: () => {
      const at = nowMs()
      return { keys: keys.filter((k) => live(k, at)).map((k) => k.publicJwk) }
    },
  }
}

export type TokenKeys = ReturnType<typeof createTokenKeys>

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
