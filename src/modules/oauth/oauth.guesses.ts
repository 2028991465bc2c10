import type { Clock } from '../../clock.ts'
import { BoundedMap } from '../../bounded-map.ts'
import { RateLimited } from '../../http/errors.ts'

/** Wrong secrets for one client id within WINDOW_MS that lock it. */
export const WRONG_SECRETS_LIMIT = 10
const WINDOW_MS = 60_000
/** How long a locked client id answers 429, whatever the secret. */
const LOCK_MS = 60_000
// Ids with no client can be made up without end: their memory is bounded, and losing one only
// gives back guesses at a secret that does not exist. Known clients are kept apart, so a flood of
// made-up ids cannot push a real client's count out.
const UNKNOWN_LIMIT = 10_000
const KNOWN_SWEEP_AT = 10_000

/** A client id that received too many wrong secrets answers this until its lock ends. */
export class TooManyWrongSecrets extends RateLimited {
  constructor(retryAfterSeconds: number) {
    super(retryAfterSeconds)
    this.message = `Too many wrong secrets for this client_id; retry in ${retryAfterSeconds} s`
  }
}

interface Guesses {
  /** Unix milliseconds of the wrong secrets within the window, oldest first. */
  wrong: number[]
  lockedUntil: number
}

/**
 * Counts wrong secrets per client id, in this process, by the injected real-time clock: after
 * WRONG_SECRETS_LIMIT within a minute the id is locked for a minute (docs/adr/0005). Unknown ids
 * are counted alike, so the answers do not tell which ids exist.
 */
export function createSecretGuesses(clock: Clock) {
  const known = new Map<string, Guesses>()
  const unknown = new BoundedMap<string, Guesses>(UNKNOWN_LIMIT)
  const now = () => clock.now().getTime()

  function entry(clientId: string): Guesses | undefined {
    return known.get(clientId) ?? unknown.get(clientId)
  }

  function sweep(at: number) {
    for (const [id, g] of known) if (g.lockedUntil <= at && (g.wrong.at(-1) ?? 0) <= at - WINDOW_MS) known.delete(id)
  }

  return {
    /** Throws TooManyWrongSecrets while the id is locked. */
    check(clientId: string) {
      const g = entry(clientId)
      const at = now()
      if (g && g.lockedUntil > at) throw new TooManyWrongSecrets(Math.ceil((g.lockedUntil - at) / 1000))
    },

    /** A wrong secret (or a revoked or unknown client) for this id, now; `exists`: the id names a client. */
    wrong(clientId: string, exists: boolean) {
      const at = now()
      const map = exists ? known : unknown
      let g = map.get(clientId)
      if (!g) {
        if (exists && known.size >= KNOWN_SWEEP_AT) sweep(at)
        map.set(clientId, g = { wrong: [], lockedUntil: 0 })
      }
      g.wrong = g.wrong.filter((t) => t > at - WINDOW_MS)
      g.wrong.push(at)
      if (g.wrong.length >= WRONG_SECRETS_LIMIT) {
        g.lockedUntil = at + LOCK_MS
        // The count starts again once the lock ends.
        g.wrong = []
      }
    },
  }
}

export type SecretGuesses = ReturnType<typeof createSecretGuesses>
