import { sql, type Kysely } from 'kysely'
import { keyset, type KeysetPage, type SortColumn } from '../../db/keyset.ts'
import { cutPage, type Paged } from '../../core/paging.ts'
import type { DB } from '../../db/tables.ts'
import { prepared } from '../../db/prepared.ts'

const CLIENT_ORDER: SortColumn[] = [{ column: 'created_at', cast: 'timestamptz' }, { column: 'client_id' }]

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

export interface SigningKeyRow {
  kid: string
  generation: number
  active_from: Date
  retire_at: Date | null
  private_jwk: Record<string, unknown>
  public_jwk: Record<string, unknown>
}

export interface NewSigningKey {
  kid: string
  generation: number
  activeFrom: Date
  privateJwk: object
  publicJwk: object
}

export interface ClientForToken extends ClientRow {
  subscription_status: string | null
  plan_features: string[] | null
}

export interface WrongSecretTimes {
  at: Date
  windowStart: Date
  windowEnd: Date
  lockUntil: Date
}

/** More than the one row a wrong secret may add. */
const GUESSES_PRUNED_PER_WRITE = 2

export function createOauthRepository(db: Kysely<DB>) {
  const clientForToken = prepared(db, (clientId: string) =>
    db
      .selectFrom('oauth_clients as c')
      .leftJoin('subscriptions as s', 's.company_id', 'c.company_id')
      .leftJoin('plans as p', 'p.sku', 's.plan_sku')
      .selectAll('c')
      .select(['s.status as subscription_status', 'p.features as plan_features'])
      .where('c.client_id', '=', clientId),
  )
  const accessStateOf = prepared(db, (clientId: string) =>
    db
      .selectFrom('oauth_clients as c')
      .leftJoin('companies as co', 'co.id', 'c.company_id')
      .select(['c.revoked_at', 'co.disabled_at'])
      .where('c.client_id', '=', clientId),
  )

  const secretLock = prepared(db, (clientId: string, at: Date) =>
    db
      .selectFrom('client_secret_guesses')
      .select('locked_until')
      .where('client_id', '=', clientId)
      .where('locked_until', '>', at),
  )
  // One statement, row locked while read and written, so concurrent wrong secrets are each counted
  // once. The prune runs last and skips locked rows, so it never waits while holding a row.
  const countWrong = prepared(
    db,
    (clientId: string, limit: number, at: Date, windowStart: Date, windowEnd: Date, lockUntil: Date) => sql<{
      locked_until: Date | null
    }>`
    WITH pruned AS (
      DELETE FROM client_secret_guesses
      WHERE client_id IN (
        SELECT client_id FROM client_secret_guesses
        WHERE stale_at <= ${at}::timestamptz AND client_id <> ${clientId}
        LIMIT ${sql.lit(GUESSES_PRUNED_PER_WRITE)}
        FOR UPDATE SKIP LOCKED))
    INSERT INTO client_secret_guesses AS g (client_id, wrong_at, locked_until, stale_at)
    VALUES (${clientId}, ARRAY[${at}::timestamptz], NULL, ${windowEnd}::timestamptz)
    ON CONFLICT (client_id) DO UPDATE
    SET (wrong_at, locked_until, stale_at) = (
      SELECT
        CASE WHEN reached THEN '{}' ELSE recent END,
        CASE WHEN reached THEN ${lockUntil}::timestamptz END,
        greatest(g.stale_at, CASE WHEN reached THEN ${lockUntil}::timestamptz ELSE ${windowEnd}::timestamptz END)
      FROM (SELECT recent, cardinality(recent) >= ${limit}::int AS reached
            FROM (SELECT ARRAY(SELECT w FROM unnest(g.wrong_at || ${at}::timestamptz) AS w
                               WHERE w > ${windowStart}::timestamptz ORDER BY w) AS recent) AS r) AS counted)
    WHERE g.locked_until IS NULL OR g.locked_until <= ${at}::timestamptz
    RETURNING locked_until`,
  )

  return {
    secretLockedUntil: async (clientId: string, at: Date): Promise<Date | undefined> =>
      (await secretLock(clientId, at))[0]?.locked_until ?? undefined,

    /**
     * Counts a wrong secret: the `limit`-th within the window locks the id until `times.lockUntil`.
     * Answers the lock's end (null: not locked), or undefined when it was locked already and this did not count.
     */
    async countWrongSecret(
      clientId: string,
      limit: number,
      times: WrongSecretTimes,
    ): Promise<{ lockedUntil: Date | null } | undefined> {
      const [row] = await countWrong(clientId, limit, times.at, times.windowStart, times.windowEnd, times.lockUntil)
      return row && { lockedUntil: row.locked_until }
    },

    findClientForToken: async (clientId: string): Promise<ClientForToken | undefined> =>
      (await clientForToken(clientId))[0],

    async insertClient(client: Omit<ClientRow, 'created_at' | 'revoked_at'>): Promise<ClientRow> {
      return db.insertInto('oauth_clients').values(client).returningAll().executeTakeFirstOrThrow()
    },

    async insertClientIfMissing(client: Omit<ClientRow, 'created_at' | 'revoked_at'>): Promise<boolean> {
      const inserted = await db
        .insertInto('oauth_clients')
        .values(client)
        .onConflict((oc) => oc.column('client_id').doNothing())
        .returning('client_id')
        .executeTakeFirst()
      return inserted !== undefined
    },

    /** An id that is a company client's is left alone. */
    async upsertPlatformClient(
      client: Omit<ClientRow, 'created_at' | 'revoked_at'> & { company_id: null },
    ): Promise<void> {
      await db
        .insertInto('oauth_clients')
        .values(client)
        .onConflict((oc) =>
          oc
            .column('client_id')
            .doUpdateSet({ secret_hash: client.secret_hash, scopes: client.scopes })
            .where('oauth_clients.company_id', 'is', null),
        )
        .execute()
    },

    async countPlatformClients(): Promise<number> {
      const row = await db
        .selectFrom('oauth_clients')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('company_id', 'is', null)
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow()
      return Number(row.n)
    },

    /** Oldest first; the cursor keeps PostgreSQL's text of created_at (a Date drops microseconds). */
    async listCompanyClients(companyId: string, page: KeysetPage): Promise<Paged<ClientRow>> {
      const rows = await keyset(
        db
          .selectFrom('oauth_clients')
          .selectAll()
          .select(sql<string>`created_at::text`.as('created_at_key'))
          .where('company_id', '=', companyId)
          .where('revoked_at', 'is', null),
        CLIENT_ORDER,
        page,
      ).execute()
      return cutPage(rows, page, (row) => [row.created_at_key, row.client_id])
    },

    async findCompanyClient(companyId: string, clientId: string): Promise<ClientRow | undefined> {
      return db
        .selectFrom('oauth_clients')
        .selectAll()
        .where('company_id', '=', companyId)
        .where('client_id', '=', clientId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst()
    },

    async revokeCompanyClient(companyId: string, clientId: string, at: Date): Promise<boolean> {
      const result = await db
        .updateTable('oauth_clients')
        .set({ revoked_at: at })
        .where('company_id', '=', companyId)
        .where('client_id', '=', clientId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },

    async accessState(clientId: string): Promise<ClientAccessState | undefined> {
      const [row] = await accessStateOf(clientId)
      return row && { revoked: row.revoked_at !== null, companyDisabled: row.disabled_at !== null }
    },

    /** Unless it changed since it was read as `from`; true when set. */
    async replaceSecretHash(clientId: string, from: string, to: string): Promise<boolean> {
      const result = await db
        .updateTable('oauth_clients')
        .set({ secret_hash: to })
        .where('client_id', '=', clientId)
        .where('secret_hash', '=', from)
        .executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },

    async listSigningKeys(): Promise<SigningKeyRow[]> {
      return db.selectFrom('signing_keys').selectAll().orderBy('generation').execute() as Promise<SigningKeyRow[]>
    },

    /** False when another instance made that generation first; `drop` deletes earlier keys at once. */
    async addSigningKey(key: NewSigningKey, others: { retireAt: Date } | { drop: true }): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const inserted = await trx
          .insertInto('signing_keys')
          .values({
            kid: key.kid,
            generation: key.generation,
            active_from: key.activeFrom,
            private_jwk: JSON.stringify(key.privateJwk),
            public_jwk: JSON.stringify(key.publicJwk),
          })
          .onConflict((oc) => oc.doNothing())
          .returning('kid')
          .executeTakeFirst()
        if (!inserted) return false
        if ('drop' in others) {
          await trx.deleteFrom('signing_keys').where('generation', '<', key.generation).execute()
        } else {
          await trx
            .updateTable('signing_keys')
            .set({ retire_at: others.retireAt })
            .where('generation', '<', key.generation)
            .where((eb) => eb.or([eb('retire_at', 'is', null), eb('retire_at', '>', others.retireAt)]))
            .execute()
        }
        return true
      })
    },

    async deleteRetiredSigningKeys(now: Date): Promise<number> {
      const result = await db.deleteFrom('signing_keys').where('retire_at', '<=', now).executeTakeFirst()
      return Number(result.numDeletedRows)
    },
  }
}

export type OauthRepository = ReturnType<typeof createOauthRepository>
