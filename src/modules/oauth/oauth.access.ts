import type { Database } from '../../db/database.ts'
import type { ClientAccessState, OauthRepository } from './oauth.repository.ts'
import { BoundedMap } from '../../core/bounded-map.ts'

const CHANNEL = 'access_changed'
// A safety net for a missed notification.
const MAX_AGE_MS = 5_000
const CACHE_LIMIT = 50_000

/**
 * Whether a client is revoked or its company disabled, cached per process. The committing
 * transaction's triggers announce changes, so every instance forgets at once, whoever wrote.
 */
export function createAccessState(repo: Pick<OauthRepository, 'accessState'>, database: Pick<Database, 'listen'>) {
  const cache = new BoundedMap<string, { state: ClientAccessState | undefined; at: number }>(CACHE_LIMIT)
  // While changes could go unheard, every answer comes from the database.
  let listening = false
  const alsoForget: Array<(clientId?: string) => void> = []

  function forget(clientId?: string) {
    if (clientId) cache.delete(clientId)
    else cache.clear()
    for (const other of alsoForget) other(clientId)
  }

  return {
    /** null when get() must ask the database. */
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

    /** Forgets here at once (no id: any client); the others hear of it from the commit. */
    changed(clientId?: string) {
      forget(clientId)
    },

    listening: () => listening,

    onForget(forget: (clientId?: string) => void) {
      alsoForget.push(forget)
    },

    async listen() {
      await database.listen(
        CHANNEL,
        (payload) => forget(payload || undefined),
        (heard) => {
          listening = heard
          if (!heard) forget()
        },
      )
    },
  }
}

export type AccessState = ReturnType<typeof createAccessState>
