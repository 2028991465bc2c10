import type { Kysely } from 'kysely'
import type { DB } from '../../db/tables.ts'
import { prepared } from '../../db/prepared.ts'

export interface ClientRow {
  client_id: string
  secret_hash: string
  name: string
  company_id: string | null
  scopes: string[]
  created_at: Date
  revoked_at: Date | null
}

export interface ClientAccessState {
  revoked: boolean
  companyDisabled: boolean
}

/** A client with what decides the scopes its company may grant now (its subscription's plan). */
export interface ClientForToken extends ClientRow {
  subscription_status: string | null
  plan_features: string[] | null
}

export function createOauthRepository(db: Kysely<DB>) {
  // The token endpoint's one read: the client and its company's plan in one statement.
  const clientForToken = prepared(db, (clientId: string) => db.selectFrom('oauth_clients as c')
    .leftJoin('subscriptions as s', 's.company_id', 'c.company_id')
    .leftJoin('plans as p', 'p.sku', 's.plan_sku')
    .selectAll('c')
    .select(['s.status as subscription_status', 'p.features as plan_features'])
    .where('c.client_id', '=', clientId))
  const accessStateOf = prepared(db, (clientId: string) => db.selectFrom('oauth_clients as c')
    .leftJoin('companies as co', 'co.id', 'c.company_id')
    .select(['c.revoked_at', 'co.disabled_at'])
    .where('c.client_id', '=', clientId))

  return {
    findClientForToken: async (clientId: string): Promise<ClientForToken | undefined> => (await clientForToken(clientId))[0],

    async insertClient(client: Omit<ClientRow, 'created_at' | 'revoked_at'>): Promise<ClientRow> {
      return db.insertInto('oauth_clients').values(client).returningAll().executeTakeFirstOrThrow()
    },

    /** Inserts the client unless one with that id exists; true when it was inserted. */
    async insertClientIfMissing(client: Omit<ClientRow, 'created_at' | 'revoked_at'>): Promise<boolean> {
      const inserted = await db.insertInto('oauth_clients').values(client)
        .onConflict((oc) => oc.column('client_id').doNothing()).returning('client_id').executeTakeFirst()
      return inserted !== undefined
    },

    /** Creates the platform client or sets its secret; an id that is a company client's is left alone. */
    async upsertPlatformClient(client: Omit<ClientRow, 'created_at' | 'revoked_at'> & { company_id: null }): Promise<void> {
      await db.insertInto('oauth_clients').values(client)
        .onConflict((oc) => oc.column('client_id').doUpdateSet({ secret_hash: client.secret_hash, scopes: client.scopes })
          .where('oauth_clients.company_id', 'is', null))
        .execute()
    },

    async countPlatformClients(): Promise<number> {
      const row = await db.selectFrom('oauth_clients').select((eb) => eb.fn.countAll<number>().as('n'))
        .where('company_id', 'is', null).where('revoked_at', 'is', null).executeTakeFirstOrThrow()
      return Number(row.n)
    },

    async listCompanyClients(companyId: string): Promise<ClientRow[]> {
      return db.selectFrom('oauth_clients').selectAll()
        .where('company_id', '=', companyId).where('revoked_at', 'is', null)
        .orderBy('created_at').orderBy('client_id').execute()
    },

    /** A live (not revoked) client of the company. */
    async findCompanyClient(companyId: string, clientId: string): Promise<ClientRow | undefined> {
      return db.selectFrom('oauth_clients').selectAll()
        .where('company_id', '=', companyId).where('client_id', '=', clientId).where('revoked_at', 'is', null)
        .executeTakeFirst()
    },

    async revokeCompanyClient(companyId: string, clientId: string, at: Date): Promise<boolean> {
      const result = await db.updateTable('oauth_clients').set({ revoked_at: at })
        .where('company_id', '=', companyId).where('client_id', '=', clientId).where('revoked_at', 'is', null)
        .executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },

    /** What decides whether a valid token of this client may still act. */
    async accessState(clientId: string): Promise<ClientAccessState | undefined> {
      const [row] = await accessStateOf(clientId)
      return row && { revoked: row.revoked_at !== null, companyDisabled: row.disabled_at !== null }
    },

    async listSigningKeys() {
      return db.selectFrom('signing_keys').selectAll().orderBy('created_at').orderBy('kid').execute()
    },

    async insertSigningKey(kid: string, privateJwk: object, publicJwk: object) {
      await db.insertInto('signing_keys')
        .values({ kid, private_jwk: JSON.stringify(privateJwk), public_jwk: JSON.stringify(publicJwk) })
        .onConflict((oc) => oc.column('kid').doNothing()).execute()
    },
  }
}

export type OauthRepository = ReturnType<typeof createOauthRepository>
