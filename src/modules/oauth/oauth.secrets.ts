import { availableParallelism } from 'node:os'
import { createHash, createHmac, randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import { ServiceUnavailable } from '../../core/errors.ts'
import { BoundedMap } from '../../core/bounded-map.ts'

/**
 * Client secrets at rest: `scrypt$N$r$p$salt$hash` (salted, slow, parameters stored) for secrets a
 * person may choose; SHA-256 hex for the 256 random bits made for company clients, where a slow hash
 * would only slow the token endpoint.
 */

// Twice the scrypt paper's interactive-login cost; chosen secrets are at least 16 characters.
// Raising these re-hashes each platform secret at its next use.
const N = 2 ** 15
const R = 8
const P = 1
const KEY_BYTES = 32
const SALT_BYTES = 16
// Node's default scrypt memory ceiling is just below what these parameters need: raised here.
const MAX_MEMORY = 64 * 1024 * 1024
const FORMAT = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/
const SHA256 = /^[0-9a-f]{64}$/

export type HashLane = 'shared' | 'reserved'

export async function hashChosenSecret(secret: string, lane: HashLane = 'shared'): Promise<string> {
  const salt = randomBytes(SALT_BYTES)
  const hash = await slowHash(secret, salt, N, R, P, lanes[lane])
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${hash.toString('base64url')}`
}

export function hashGeneratedSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

export function needsUpgrade(stored: string): boolean {
  const m = FORMAT.exec(stored)
  return !m || Number(m[1]) !== N || Number(m[2]) !== R || Number(m[3]) !== P
}

/** Constant-time comparison, either format. */
export async function secretMatches(secret: string, stored: string, lane: HashLane = 'shared'): Promise<boolean> {
  const m = FORMAT.exec(stored)
  if (m) {
    const expected = Buffer.from(m[5]!, 'base64url')
    const n = Number(m[1])
    const r = Number(m[2])
    const p = Number(m[3])
    // Bounds keep a corrupted row from asking for gigabytes.
    if (expected.length !== KEY_BYTES || n > 2 ** 20 || r > 32 || p > 16) return false
    return timingSafeEqual(await slowHash(secret, Buffer.from(m[4]!, 'base64url'), n, r, p, lanes[lane]), expected)
  }
  if (!SHA256.test(stored)) return false
  return timingSafeEqual(Buffer.from(hashGeneratedSecret(secret), 'hex'), Buffer.from(stored, 'hex'))
}

interface Lane {
  slots: number
  maxWaiting: number
  running: number
  waiting: Array<() => void>
}
const lane = (slots: number, maxWaiting: number): Lane => ({ slots, maxWaiting, running: 0, waiting: [] })

// At most half the cores hash at once, so a flood of wrong secrets cannot take every core; past a
// short queue a token request gets 503 + Retry-After instead of waiting behind strangers' guesses.
export const MAX_WAITING_HASHES = 16
const shared = lane(Math.max(1, Math.floor(availableParallelism() / 2)), MAX_WAITING_HASHES)
// The configured platform client's own lane, so its right secret never waits behind guesses at others
// (docs/adr/0005-guessing-coupons-and-secrets.md).
const lanes: Record<HashLane, Lane> = { shared, reserved: lane(1, 4) }

export class SecretChecksBusy extends ServiceUnavailable {
  constructor() {
    super('Too many client secrets are being checked; retry shortly', 1)
  }
}

async function slowHash(secret: string, salt: Buffer, n: number, r: number, p: number, lane: Lane): Promise<Buffer> {
  if (lane.running >= lane.slots) {
    if (lane.waiting.length >= lane.maxWaiting) throw new SecretChecksBusy()
    await new Promise<void>((resolve) => lane.waiting.push(resolve))
  } else lane.running++
  try {
    // Runs on libuv's pool, never on the event loop.
    return await new Promise<Buffer>((resolve, reject) => {
      scrypt(secret, salt, KEY_BYTES, { N: n, r, p, maxmem: MAX_MEMORY }, (err, key) =>
        err ? reject(err) : resolve(key),
      )
    })
  } finally {
    const next = lane.waiting.shift()
    if (next) next()
    else lane.running--
  }
}

const LIMIT = 10_000

/**
 * Remembers per client, as an HMAC under a process-only key, which secret last verified against
 * which stored hash: a repeat costs one HMAC, not a scrypt, and another secret against that hash is
 * refused without one. Only successes are kept, so a stranger cannot fill it.
 */
export function createSecretChecker() {
  const key = randomBytes(32)
  const verified = new BoundedMap<string, { stored: string; digest: Buffer }>(LIMIT)
  // Known from the configuration, not learnt: kept across forget(), being tied to the stored hash.
  const configured = new Map<string, { stored: string; digest: Buffer }>()
  const digest = (secret: string) => createHmac('sha256', key).update(secret).digest()

  return {
    async matches(clientId: string, secret: string, stored: string): Promise<boolean> {
      if (!FORMAT.test(stored)) return secretMatches(secret, stored)
      const mine = configured.get(clientId)
      const known = mine?.stored === stored ? mine : verified.get(clientId)
      if (known && known.stored === stored) return timingSafeEqual(digest(secret), known.digest)
      // A hash stored by another instance is checked in the reserved lane.
      if (!(await secretMatches(secret, stored, configured.has(clientId) ? 'reserved' : 'shared'))) return false
      verified.set(clientId, { stored, digest: digest(secret) })
      return true
    },

    configured(clientId: string, secret: string, stored: string) {
      configured.set(clientId, { stored, digest: digest(secret) })
    },

    forget(clientId?: string) {
      if (clientId) verified.delete(clientId)
      else verified.clear()
    },

    size: () => verified.size,
  }
}

export type SecretChecker = ReturnType<typeof createSecretChecker>
