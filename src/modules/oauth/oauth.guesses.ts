import type { Clock } from '../../core/clock.ts'
import { BoundedMap } from '../../core/bounded-map.ts'
import { RateLimited } from '../../core/errors.ts'
import type { OauthRepository } from './oauth.repository.ts'

/** Wrong secrets for one client id within WINDOW_MS that lock it. */
export const WRONG_SECRETS_LIMIT = 10
const WINDOW_MS = 60_000
/** How long a locked client id answers 429, whatever the secret. */
const LOCK_MS = 60_000
// Locks this instance has seen, so a locked id's requests skip the read until the lock ends.
// Made-up ids can be locked without end: forgetting one only costs its next request a read.
const KNOWN_LOCKS_LIMIT = 10_000

/** A client id that received too many wrong secrets answers this until its lock ends. */
export class TooManyWrongSecrets extends RateLimited {
  constructor(retryAfterSeconds: number) {
    super(retryAfterSeconds)
    this.message = `Too many wrong secrets for this client_id; retry in ${retryAfterSeconds} s`
  }
}

/**
 * Counts wrong secrets per client id in PostgreSQL, shared by every instance on the database and
 * kept over restarts, by the injected real-time clock: after WRONG_SECRETS_LIMIT within a minute
 * the id is locked for a minute (docs/adr/0005). Unknown ids are counted alike, so the answers do
 * not tell which ids exist.
 */
export function createSecretGuesses(deps: { repo: Pick<OauthRepository, 'secretLockedUntil' | 'countWrongSecret'>; clock: Clock }) {
  const { repo, clock } = deps
  /** Unix milliseconds until which an id is locked, as this instance last saw it in the database. */
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
    /** Throws TooManyWrongSecrets while the id is locked: from this instance's memory, else one read by primary key. */
    async check(clientId: string) {
      const now = clock.now()
      checkKnown(clientId, now.getTime())
      const until = await repo.secretLockedUntil(clientId, now)
      if (until) throw locked(clientId, until.getTime(), now.getTime())
    },

    /** Throws TooManyWrongSecrets while this instance knows the id is locked; reads nothing. */
    checkKnown: (clientId: string) => checkKnown(clientId, clock.now().getTime()),

    /**
     * A wrong secret (or a revoked or unknown client) for this id, now. Throws TooManyWrongSecrets
     * when the id was locked meanwhile (by any instance): that one is not counted, and its answer
     * is the lock's, so no more than WRONG_SECRETS_LIMIT answers a minute tell a guess apart.
     */
    async wrong(clientId: string) {
      const now = clock.now()
      const at = now.getTime()
      const counted = await repo.countWrongSecret(clientId, WRONG_SECRETS_LIMIT, {
        at: now, windowStart: new Date(at - WINDOW_MS), windowEnd: new Date(at + WINDOW_MS), lockUntil: new Date(at + LOCK_MS),
      })
      if (counted === undefined) {
        // Locked by the time this one was counted: its lock is read for Retry-After.
        const until = await repo.secretLockedUntil(clientId, now)
        throw locked(clientId, until?.getTime() ?? at + 1000, at)
      }
      // The one that reached the limit is answered as a wrong secret; the next ones meet the lock.
      if (counted.lockedUntil) locks.set(clientId, counted.lockedUntil.getTime())
    },
  }
}

export type SecretGuesses = ReturnType<typeof createSecretGuesses>
