import type { Kysely } from 'kysely'
import type { DB, HostedPageRow, HostedPageState } from '../../db/tables.ts'

/**
 * SQL of the hosted pages. A page is found by its token's hash alone (the token is the
 * customer's capability; there is no company in the URL), then every change names its company.
 */
export function createHostedRepository(db: Kysely<DB>) {
  return {
    async insert(row: HostedPageRow): Promise<void> {
      await db.insertInto('hosted_pages').values(row).execute()
    },

    async findByTokenHash(tokenHash: string): Promise<HostedPageRow | undefined> {
      return db.selectFrom('hosted_pages').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst()
    },

    /**
     * Moves a page from one of `from` to `to` if it is still in one of them and unexpired at
     * `now`: one statement, so of two concurrent submits exactly one moves it.
     */
    async transition(page: Pick<HostedPageRow, 'company_id' | 'id'>, from: HostedPageState[], to: HostedPageState, now: Date): Promise<HostedPageRow | undefined> {
      return db.updateTable('hosted_pages')
        .set({ state: to, updated_at: now })
        .where('company_id', '=', page.company_id).where('id', '=', page.id)
        .where('state', 'in', from).where('expires_at', '>', now)
        .returningAll().executeTakeFirst()
    },
  }
}

export type HostedRepository = ReturnType<typeof createHostedRepository>
