import type { Database } from '../../db/database.ts'
import type { ClientAccessState, OauthRepository } from './oauth.repository.ts'
import { BoundedMap } from '../../core/bounded-map.ts'

const CHANNEL = 'access_changed'
// A safety net for a missed notification (a dropped LISTEN connection): no answer is older than this.
const MAX_AGE_MS = 5_000
const CACHE_LIMIT = 50_000

/**
 * Whether a client is revoked or its company disabled, cached per process. A change is
 * announced on `access_changed` by the commit that makes it (the triggers of migration 0010,
 * whoever writes), so every instance on the same PostgreSQL forgets its copy at once, even when
 * the writer dies right after its commit.
 */
export function createAccessState(repo: Pick<OauthRepository, 'accessState'>, database: Pick<Database, 'listen'>) {
  const cache = new BoundedMap<string, { state: ClientAccessState | undefined; at: number }>(CACHE_LIMIT)
  // While changes could go unheard (no LISTEN connection), every answer comes from the database.
  let listening = false
  // Others that keep what a client's change makes stale (the token endpoint's clients).
  const alsoForget: Array<(clientId?: string) => void> = []

  function forget(clientId?: string) {
    if (clientId) cache.delete(clientId)
    else cache.clear()
    for (const other of alsoForget) other(clientId)
  }

  return {
    /** Synchronously, the cached answer while it is fresh; null when get() must ask the database. */
    fresh(clientId: string): { state: ClientAccessState | undefined } | null {
      const hit = cache.get(clientId)
      return listening && hit && Date.now() - hit.at < MAX_AGE_MS ? hit : null
    },

    async get(clientId: string): Promise<ClientAccessState | undefined> {
      const hit = cache.get(clientId)
      if (listening && hit && Date.now() - hit.at < MAX_AGE_MS) return hit.state
      const state = await repo.accessState(clientId)
      cache.set(clientId, { state, at: Date.now() })
      return state
    },

    /**
     * Forgets here, at once, a change of one client (or, without an id, of any: a company disabled
     * or enabled) that has committed; the other instances hear of it from the commit itself.
     */
    changed(clientId?: string) {
      forget(clientId)
    },

    /** Whether client changes are being heard (nothing may be kept otherwise). */
    listening: () => listening,

    /** Calls `forget` whenever a client's state is forgotten here: on this instance's changes and on those it hears. */
    onForget(forget: (clientId?: string) => void) { alsoForget.push(forget) },

    async listen() {
      await database.listen(CHANNEL, (payload) => forget(payload || undefined), (heard) => {
        listening = heard
        if (!heard) forget()
      })
    },
  }
}

export type AccessState = ReturnType<typeof createAccessState>
