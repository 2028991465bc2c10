import { availableParallelism } from 'node:os'
import { createHash, createHmac, randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import { ServiceUnavailable } from '../../core/errors.ts'
import { BoundedMap } from '../../core/bounded-map.ts'

/**
 * Client secrets at rest (docs/decisions.md, "Secrets and signing keys"). Two formats:
 * - `scrypt$N$r$p$salt$hash` for a secret a person may have chosen (every platform client's):
 *   salted, slow, its parameters stored with it so that they can be raised later;
 * - 64 hex digits, SHA-256, for the 256 random bits the service makes for company clients: no
 *   guess can find those, so a slow hash would only slow down the token endpoint. It is also the
 *   format of every row of the previous version, which upgrade() turns into scrypt for platform clients.
 */

// 32 MiB of memory and about 100 ms of one core on the test machine (30-50 ms on a current server
// core): twice the scrypt paper's figure for interactive logins. OWASP's minimum (N=2^17, 128 MiB)
// would cost four times that at every start and first use; chosen secrets are at least 16
// characters (src/config.ts). Raising these later re-hashes each platform secret at its next use.
const N = 2 ** 15
const R = 8
const P = 1
const KEY_BYTES = 32
const SALT_BYTES = 16
// Node refuses scrypt above 32 MiB by default; N=2^15, r=8 needs 128 * N * r = 32 MiB and a little more.
const MAX_MEMORY = 64 * 1024 * 1024
const FORMAT = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/
const SHA256 = /^[0-9a-f]{64}$/

/** Which scrypt queue a check waits in: `reserved` is the configured platform client's alone. */
export type HashLane = 'shared' | 'reserved'

/** The stored form of a secret a person may have chosen. */
export async function hashChosenSecret(secret: string, lane: HashLane = 'shared'): Promise<string> {
  const salt = randomBytes(SALT_BYTES)
  const hash = await slowHash(secret, salt, N, R, P, lanes[lane])
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${hash.toString('base64url')}`
}

/** The stored form of a secret the service generated (256 random bits). */
export function hashGeneratedSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/** Whether a platform client's stored hash should be made again: not scrypt with today's parameters. */
export function needsUpgrade(stored: string): boolean {
  const m = FORMAT.exec(stored)
  return !m || Number(m[1]) !== N || Number(m[2]) !== R || Number(m[3]) !== P
}

/** Whether the secret is the one stored, in either format; the comparison takes constant time. */
export async function secretMatches(secret: string, stored: string, lane: HashLane = 'shared'): Promise<boolean> {
  const m = FORMAT.exec(stored)
  if (m) {
    const expected = Buffer.from(m[5]!, 'base64url')
    const n = Number(m[1]); const r = Number(m[2]); const p = Number(m[3])
    // Parameters come from our own rows; bounds keep a corrupted row from asking for gigabytes.
    if (expected.length !== KEY_BYTES || n > 2 ** 20 || r > 32 || p > 16) return false
    return timingSafeEqual(await slowHash(secret, Buffer.from(m[4]!, 'base64url'), n, r, p, lanes[lane]), expected)
  }
  if (!SHA256.test(stored)) return false
  return timingSafeEqual(Buffer.from(hashGeneratedSecret(secret), 'hex'), Buffer.from(stored, 'hex'))
}

/** Hashes that may run at once, and how many more may wait; past that, SecretChecksBusy. */
interface Lane { slots: number; maxWaiting: number; running: number; waiting: Array<() => void> }
const lane = (slots: number, maxWaiting: number): Lane => ({ slots, maxWaiting, running: 0, waiting: [] })

// At most half the cores hash at once (one on a two-core machine): a flood of wrong secrets for a
// platform client queues here instead of taking every core (and libuv's four threads) from the rest.
// And the queue is short: past it, a token request is told to come back (503 + Retry-After)
// rather than waiting behind seconds of strangers' guesses, and the queue holds no more memory.
export const MAX_WAITING_HASHES = 16
const shared = lane(Math.max(1, Math.floor(availableParallelism() / 2)), MAX_WAITING_HASHES)
// The configured platform client's own slot (its start-up's hashing too): guesses at other clients
// fill only the shared lane, so the operator's right secret never waits behind them (docs/adr/0005).
const lanes: Record<HashLane, Lane> = { shared, reserved: lane(1, 4) }

/** A platform secret could not be checked now: too many checks are queued. */
export class SecretChecksBusy extends ServiceUnavailable {
  constructor() { super('Too many client secrets are being checked; retry shortly', 1) }
}

async function slowHash(secret: string, salt: Buffer, n: number, r: number, p: number, lane: Lane): Promise<Buffer> {
  if (lane.running >= lane.slots) {
    if (lane.waiting.length >= lane.maxWaiting) throw new SecretChecksBusy()
    await new Promise<void>((resolve) => lane.waiting.push(resolve))
  } else lane.running++
  try {
    // The asynchronous form: the work runs on libuv's pool, never on the event loop.
    return await new Promise<Buffer>((resolve, reject) => {
      scrypt(secret, salt, KEY_BYTES, { N: n, r, p, maxmem: MAX_MEMORY }, (err, key) => err ? reject(err) : resolve(key))
    })
  } finally {
    const next = lane.waiting.shift()
    if (next) next()
    else lane.running--
  }
}

const LIMIT = 10_000

/**
 * Remembers, per client, which secret last verified against which stored hash, as an HMAC under
 * a key that lives only in this process: a token request with that secret then costs one HMAC,
 * not a scrypt. The memory is tied to the exact stored hash (a secret set anew, here or by
 * another instance, no longer matches it) and forgotten when the client changes. A different
 * secret against a remembered hash is refused without scrypt: only the remembered secret can
 * match that hash. Only verifications that succeeded are kept, so a stranger cannot fill it.
 */
export function createSecretChecker() {
  const key = randomBytes(32)
  const verified = new BoundedMap<string, { stored: string; digest: Buffer }>(LIMIT)
  // The configured platform client's secret, known from the configuration rather than learnt from
  // a success: kept across forget(), since it is tied to the stored hash it was checked against.
  const configured = new Map<string, { stored: string; digest: Buffer }>()
  const digest = (secret: string) => createHmac('sha256', key).update(secret).digest()

  return {
    async matches(clientId: string, secret: string, stored: string): Promise<boolean> {
      // SHA-256 rows are as fast to check as the memory itself.
      if (!FORMAT.test(stored)) return secretMatches(secret, stored)
      const mine = configured.get(clientId)
      const known = mine?.stored === stored ? mine : verified.get(clientId)
      if (known && known.stored === stored) return timingSafeEqual(digest(secret), known.digest)
      // A hash stored by another instance (another configured secret) is checked in the reserved lane.
      if (!(await secretMatches(secret, stored, configured.has(clientId) ? 'reserved' : 'shared'))) return false
      verified.set(clientId, { stored, digest: digest(secret) })
      return true
    },

    /** The platform client of the configuration, whose secret `stored` was just made from or checked against. */
    configured(clientId: string, secret: string, stored: string) {
      configured.set(clientId, { stored, digest: digest(secret) })
    },

    /** A client changed (or, without one, any client may have). */
    forget(clientId?: string) {
      if (clientId) verified.delete(clientId)
      else verified.clear()
    },

    size: () => verified.size,
  }
}

export type SecretChecker = ReturnType<typeof createSecretChecker>
