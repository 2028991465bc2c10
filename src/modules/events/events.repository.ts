import { sql, type Kysely } from 'kysely'
import type { DB } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { keyset, type KeysetPage, type SortColumn } from '../../db/keyset.ts'
import { cutPage } from '../../core/paging.ts'

export interface EventFilter {
  companyId?: string
  /** An exact type, or a prefix (`subscription.`) for every type of a resource. */
  type?: { exact: string } | { prefix: string }
  createdAfter?: Date
  /** Only the events of these resources (a company token's readable areas); every resource when absent. */
  resources?: readonly string[]
}

/** Newest first, by insertion order; a cursor's key is the last event's seq. */
const NEWEST_FIRST: SortColumn[] = [{ column: 'seq', desc: true }]

/** The event log's SQL: written by triggers (migration 0019), read and pruned here. */
export function createEventsRepository(db: Kysely<DB>) {
  return {
    async list(filter: EventFilter, page: KeysetPage) {
      let query = db.selectFrom('events').select(['seq', 'id', 'type', 'company_id', 'data', 'created_at'])
      if (filter.companyId !== undefined) query = query.where('company_id', '=', filter.companyId)
      if (filter.type && 'exact' in filter.type) query = query.where('type', '=', filter.type.exact)
      if (filter.type && 'prefix' in filter.type) query = query.where('type', 'like', `${filter.type.prefix}%`)
      if (filter.createdAfter) query = query.where('created_at', '>', filter.createdAfter)
      if (filter.resources)
        query = query.where(
          sql<string>`split_part(type, '.', 1)`,
          '=',
          sql<string>`ANY (${[...filter.resources]}::text[])`,
        )
      const rows = await keyset(query, NEWEST_FIRST, page).execute()
      return cutPage(rows, page, (row) => [Number(row.seq)])
    },

    find(id: string, companyId: string | undefined, resources?: readonly string[]) {
      let query = db
        .selectFrom('events')
        .select(['seq', 'id', 'type', 'company_id', 'data', 'created_at'])
        .where('id', '=', id)
      if (companyId !== undefined) query = query.where('company_id', '=', companyId)
      if (resources)
        query = query.where(sql<string>`split_part(type, '.', 1)`, '=', sql<string>`ANY (${[...resources]}::text[])`)
      return query.executeTakeFirst()
    },

    /**
     * Deletes up to `batch` events created before `cutoff` (their deliveries and attempts go with them); answers how
     * many.
     */
    async prune(executor: Executor, cutoff: Date, batch: number): Promise<number> {
      const result = await sql`DELETE FROM events WHERE id IN (
          SELECT id FROM events WHERE created_at < ${cutoff} ORDER BY created_at LIMIT ${batch})`.execute(executor)
      return Number(result.numAffectedRows ?? 0)
    },
  }
}

export type EventsRepository = ReturnType<typeof createEventsRepository>
