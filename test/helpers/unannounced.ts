import { sql, type Transaction } from 'kysely'
import type { Database } from '../../src/db/database.ts'
import type { DB } from '../../src/db/tables.ts'

/**
 * Writes in the service's own session as a writer that died between its commit and its
 * announcement: the triggers' notices never reach this process (the session sends none below
 * WARNING), so only the record the commit leaves in `company_changes` tells of the change.
 */
export function asWriterThatDied(database: Pick<Database, 'db'>, work: (trx: Transaction<DB>) => Promise<unknown>) {
  return database.db.transaction().execute(async (trx) => {
    await sql`SET LOCAL client_min_messages = warning`.execute(trx)
    await work(trx)
  })
}

/**
 * Writes behind every cache's back: with the session in replica mode no trigger fires, so the
 * change is neither told, announced nor recorded. What a cached read then shows of it says
 * whether the answer was read again.
 */
export function behindEveryCache(database: Pick<Database, 'db'>, work: (trx: Transaction<DB>) => Promise<unknown>) {
  return database.db.transaction().execute(async (trx) => {
    await sql`SET LOCAL session_replication_role = replica`.execute(trx)
    await work(trx)
  })
}
