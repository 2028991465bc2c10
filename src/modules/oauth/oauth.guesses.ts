import type { Clock } from '../../core/clock.ts'
import { BoundedMap } from '../../core/bounded-map.ts'
import { RateLimited } from '../../core/errors.ts'
import type { OauthRepository } from './oauth.repository.ts'

export const WRONG_SECRETS_LIMIT = 10
const WINDOW_MS = 60_000
const LOCK_MS = 60_000
// Locks seen here, so a locked id's requests skip the read; forgetting one only costs a read.
const KNOWN_LOCKS_LIMIT = 10_000

export class TooManyWrongSecrets extends RateLimited {
  constructor(retryAfterSeconds: number) {
    super(retryAfterSeconds)
    this.message = `Too many wrong secrets for this client_id; retry in ${retryAfterSeconds} s`
  }
}

/**
 * Counts wrong secrets per client id in PostgreSQL, shared by every instance and kept over
 * restarts; too many within a minute lock the id for a minute. Unknown ids count alike, so answers
 * do not tell which ids exist (docs/adr/0005-guessing-coupons-and-secrets.md).
 */
export function createSecretGuesses(deps: {
  repo: Pick<OauthRepository, 'secretLockedUntil' | 'countWrongSecret'>
  clock: Clock
}) {
  const { repo, clock } = deps
  const locks = new BoundedMap<string, number>(KNOWN_LOCKS_LIMIT)

  function knownLock(clientId: string, at: number): number | undefined {
    const until = locks.get(clientId)
    if (until === undefined) return undefined
    if (until > at) return until
    locks.delete(clientId)
    return undefined
  }

  function checkKnown(clientId: string, at: number) {
    const known = knownLock(clientId, at)
    if (known !== undefined) throw locked(clientId, known, at)
  }

  function locked(clientId: string, until: number, at: number): TooManyWrongSecrets {
    locks.set(clientId, until)
    return new TooManyWrongSecrets(Math.ceil((until - at) / 1000))
  }

  return {
    /** From this instance's memory, else one read by primary key. */
    async check(clientId: string) {
      const now = clock.now()
      checkKnown(clientId, now.getTime())
      const until = await repo.secretLockedUntil(clientId, now)
      if (until) throw locked(clientId, until.getTime(), now.getTime())
    },

    /** Reads nothing. */
    checkKnown: (clientId: string) => checkKnown(clientId, clock.now().getTime()),

    /**
     * A wrong secret (or a revoked or unknown client). One arriving after a lock is not counted and
     * answers the lock's, so no more than WRONG_SECRETS_LIMIT answers a minute tell a guess apart.
     */
    async wrong(clientId: string) {
      const now = clock.now()
      const at = now.getTime()
      const counted = await repo.countWrongSecret(clientId, WRONG_SECRETS_LIMIT, {
        at: now,
        windowStart: new Date(at - WINDOW_MS),
        windowEnd: new Date(at + WINDOW_MS),
        lockUntil: new Date(at + LOCK_MS),
      })
      if (counted === undefined) {
        const until = await repo.secretLockedUntil(clientId, now)
        throw locked(clientId, until?.getTime() ?? at + 1000, at)
      }
      // The one that reached the limit is answered as a wrong secret; the next meet the lock.
      if (counted.lockedUntil) locks.set(clientId, counted.lockedUntil.getTime())
    },
  }
}

export type SecretGuesses = ReturnType<typeof createSecretGuesses>
