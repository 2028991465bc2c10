import type { ClientForToken, OauthRepository } from './oauth.repository.ts'

// As long as the access state's answers (oauth.access.ts): a missed notification cannot outlive it.
const MAX_AGE_MS = 5_000
const LIMIT = 50_000

/**
 * The token endpoint's read kept per process, forgotten when the client changes (`access_changed`)
 * or its company's subscription or plan does. Unknown clients and reads overlapping a change are not
 * kept, nor anything while changes could go unheard.
 */
export function createTokenClients(
  repo: Pick<OauthRepository, 'findClientForToken'>,
  options: { listening: () => boolean },
) {
  const clients = new Map<string, { row: ClientForToken; at: number }>()
  const clientsOfCompany = new Map<string, Set<string>>()
  // Moves at every forgetting: a read that saw it move keeps nothing.
  let changes = 0

  function drop(clientId: string) {
    const entry = clients.get(clientId)
    if (!entry) return
    clients.delete(clientId)
    if (entry.row.company_id) clientsOfCompany.get(entry.row.company_id)?.delete(clientId)
  }

  return {
    async find(clientId: string): Promise<ClientForToken | undefined> {
      const hit = clients.get(clientId)
      if (hit && Date.now() - hit.at < MAX_AGE_MS) return hit.row
      const before = changes
      const row = await repo.findClientForToken(clientId)
      if (row && before === changes && options.listening() && (clients.size < LIMIT || clients.has(clientId))) {
        drop(clientId)
        clients.set(clientId, { row, at: Date.now() })
        if (row.company_id) {
          let set = clientsOfCompany.get(row.company_id)
          if (!set) clientsOfCompany.set(row.company_id, (set = new Set()))
          set.add(clientId)
        }
      }
      return row
    },

    /** A client changed (or, without one, any client may have). */
    forgetClient(clientId?: string) {
      changes++
      if (clientId) drop(clientId)
      else {
        clients.clear()
        clientsOfCompany.clear()
      }
    },

    /** A company's subscription or plan may have changed (or, without one, any company's). */
    forgetCompany(companyId?: string) {
      changes++
      if (!companyId) {
        clients.clear()
        clientsOfCompany.clear()
        return
      }
      for (const clientId of clientsOfCompany.get(companyId) ?? []) clients.delete(clientId)
      clientsOfCompany.delete(companyId)
    },

    size: () => clients.size,
  }
}

export type TokenClients = ReturnType<typeof createTokenClients>
