import { sql, type Kysely } from 'kysely'
import type { DB, HostedPageRow, HostedPageState } from '../../db/tables.ts'

export interface OpenedPage extends HostedPageRow {
  company_disabled: boolean
  client_revoked: boolean
}

// A page is found by its token's hash alone (the token is the capability; the URL has no company).
export function createHostedRepository(db: Kysely<DB>) {
  return {
    async insert(row: HostedPageRow): Promise<void> {
      await db.insertInto('hosted_pages').values(row).execute()
    },

    /** With whether its company is disabled or its maker revoked; older pages have no maker. */
    async findByTokenHash(tokenHash: string): Promise<OpenedPage | undefined> {
      return db
        .selectFrom('hosted_pages as h')
        .innerJoin('companies as co', 'co.id', 'h.company_id')
        .leftJoin('oauth_clients as c', 'c.client_id', 'h.client_id')
        .selectAll('h')
        .select([
          sql<boolean>`co.disabled_at IS NOT NULL`.as('company_disabled'),
          sql<boolean>`h.client_id IS NOT NULL AND (c.client_id IS NULL OR c.revoked_at IS NOT NULL)`.as(
            'client_revoked',
          ),
        ])
        .where('h.token_hash', '=', tokenHash)
        .executeTakeFirst()
    },

    async companyDisabled(companyId: string): Promise<boolean | undefined> {
      const row = await db.selectFrom('companies').select('disabled_at').where('id', '=', companyId).executeTakeFirst()
      return row && row.disabled_at !== null
    },

    /** One statement, so of two concurrent submits exactly one moves the page. */
    async transition(
      page: Pick<HostedPageRow, 'company_id' | 'id'>,
      from: HostedPageState[],
      to: HostedPageState,
      now: Date,
    ): Promise<HostedPageRow | undefined> {
      return db
        .updateTable('hosted_pages')
        .set({ state: to, updated_at: now })
        .where('company_id', '=', page.company_id)
        .where('id', '=', page.id)
        .where('state', 'in', from)
        .where('expires_at', '>', now)
        .returningAll()
        .executeTakeFirst()
    },
  }
}

export type HostedRepository = ReturnType<typeof createHostedRepository>
