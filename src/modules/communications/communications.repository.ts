import { sql, type Insertable, type Kysely, type Transaction, type Updateable } from 'kysely'
import { prepared } from '../../db/prepared.ts'
import { keyset, type KeysetPage, type SortColumn } from '../../db/keyset.ts'
import { cutPage } from '../../core/paging.ts'
import type { CommunicationStatus, CommunicationsTable, DB } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'

const COMMUNICATION_ORDER: SortColumn[] = [{ column: 'send_at', desc: true, cast: 'timestamptz' }, { column: 'id', desc: true, cast: 'uuid' }]

const COLUMNS = [
  'id', 'company_id', 'subject', 'message', 'status', 'sender_id', 'send_at', 'recurrent', 'recurrent_until', 'action_required',
  'destination_team_ids', 'destination_subsidiary_ids', 'attachments', 'change_log', 'next_send_at', 'next_index',
] as const

/** Communications, their delivered occurrences, and the one set-based statement that delivers one. */
export function createCommunicationsRepository(db: Kysely<DB>) {
  // The communication LEFT JOIN its occurrences: no row means no such communication, one row of
  // nulls a communication not delivered yet. `delivered` = `recipients` (0007_occurrence_counters.sql).
  const reportRows = prepared(db, (companyId: string, communicationId: string) => db.selectFrom('communications as c')
    .leftJoin('communication_occurrences as o', (join) => join
      .onRef('o.company_id', '=', 'c.company_id').onRef('o.communication_id', '=', 'c.id'))
    .select(['o.send_at', 'o.recipients', 'o.recipients as delivered', 'o.opened', 'o.actions_done'])
    .where('c.company_id', '=', companyId).where('c.id', '=', communicationId)
    .orderBy('o.send_at'))

  return {
    async companyTimezone(companyId: string, executor: Executor = db): Promise<string | undefined> {
      return (await executor.selectFrom('companies').select('timezone').where('id', '=', companyId).executeTakeFirst())?.timezone
    },

    /** Of the ids given, those naming a team of the company. */
    async teamIds(companyId: string, ids: string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set()
      const rows = await db.selectFrom('teams').select('id').where('company_id', '=', companyId).where('id', 'in', ids).execute()
      return new Set(rows.map((r) => r.id))
    },
    async subsidiaryIds(companyId: string, ids: string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set()
      const rows = await db.selectFrom('subsidiaries').select('id').where('company_id', '=', companyId).where('id', 'in', ids).execute()
      return new Set(rows.map((r) => r.id))
    },
    async contractExists(companyId: string, id: string): Promise<boolean> {
      return (await db.selectFrom('contracts').select('id').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst()) !== undefined
    },
    attachmentRefs(companyId: string, ids: string[]) {
      if (ids.length === 0) return Promise.resolve([])
      return db.selectFrom('communication_attachments').select(['id', 'name', 'mime'])
        .where('company_id', '=', companyId).where('id', 'in', ids).execute()
    },

    insert: (executor: Executor, row: Insertable<CommunicationsTable>) => executor.insertInto('communications').values(row).execute(),

    find: (companyId: string, id: string) =>
      db.selectFrom('communications').select(COLUMNS).where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst(),

    exists: async (companyId: string, id: string) =>
      (await db.selectFrom('communications').select('id').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst()) !== undefined,

    /** The communication, locked until the transaction ends: updates and deliveries take turns. */
    findForUpdate: (trx: Transaction<DB>, companyId: string, id: string) =>
      trx.selectFrom('communications').select(COLUMNS).where('company_id', '=', companyId).where('id', '=', id).forUpdate().executeTakeFirst(),

    // Never the key: messages name it (migration 0035 refuses a change of it).
    update: (executor: Executor, companyId: string, id: string, values: Omit<Updateable<CommunicationsTable>, 'company_id' | 'id'>) =>
      executor.updateTable('communications').set(values).where('company_id', '=', companyId).where('id', '=', id).execute(),

    /**
     * Newest send_at first, ties newest id first; `from`/`to` bound send_at ([from, to)). The
     * cursor's send_at is PostgreSQL's own text of it: a Date would drop its microseconds.
     */
    async list(companyId: string, filter: { from?: Date; to?: Date; status?: CommunicationStatus }, page: KeysetPage) {
      let query = db.selectFrom('communications').select(COLUMNS).select(sql<string>`send_at::text`.as('send_at_key')).where('company_id', '=', companyId)
      if (filter.status) query = query.where('status', '=', filter.status)
      if (filter.from) query = query.where('send_at', '>=', filter.from)
      if (filter.to) query = query.where('send_at', '<', filter.to)
      return cutPage(await keyset(query, COMMUNICATION_ORDER, page).execute(), page, (row) => [row.send_at_key, row.id])
    },

    /**
     * Deletes a pending job, like scheduler.cancel but without waiting: a job claimed right now
     * by an instance (row locked) is skipped. It is waiting for the communication's lock, which
     * the caller holds, and will find itself stale; waiting for it here would deadlock.
     */
    cancelPendingJob: (trx: Transaction<DB>, kind: string, key: string) =>
      sql`DELETE FROM jobs WHERE id IN (
            SELECT id FROM jobs WHERE kind = ${kind} AND key = ${key} AND done_at IS NULL FOR UPDATE SKIP LOCKED)`.execute(trx),

    async hasDeliveredOccurrence(executor: Executor, companyId: string, id: string): Promise<boolean> {
      const row = await executor.selectFrom('communication_occurrences').select('send_at')
        .where('company_id', '=', companyId).where('communication_id', '=', id).limit(1).executeTakeFirst()
      return row !== undefined
    },

    /** Records an occurrence as delivered; false when it already was (a second delivery does nothing). */
    async recordOccurrence(trx: Transaction<DB>, row: { company_id: string; communication_id: string; send_at: Date; delivered_at: Date }): Promise<boolean> {
      const inserted = await trx.insertInto('communication_occurrences').values(row)
        .onConflict((oc) => oc.doNothing()).returning('send_at').executeTakeFirst()
      return inserted !== undefined
    },

    /**
     * Delivers one occurrence in one statement: a message to every active contract that is a member
     * of a destination team or belongs to a destination subsidiary. The IN (... UNION ...) names
     * each contract once however many destinations it is in. The same statement adds the messages
     * it inserted to the occurrence's `recipients` (recordOccurrence made the row, in this
     * transaction), and answers their number.
     *
     * Called only after recordOccurrence inserted the occurrence, in the same transaction: a second
     * run of an occurrence stops there, so no message of it can exist yet. Hence a plain INSERT,
     * not ON CONFLICT DO NOTHING, whose speculative insertion cost a sixth of the statement; the
     * unique key still stands, and a duplicate would fail the job rather than pass silently. Nor
     * does a foreign key check each row (migration 0035: the contracts come from this very
     * SELECT, the communication is locked, and neither is ever deleted or re-keyed). The rows are
     * inserted in the contracts' order, so that each one's entries land next to the last one's in
     * the unique key and the inbox index (0.94–0.98 s without the order, 0.68–0.82 s with it). For 100,000
     * recipients, timed alone, the statement took 1.87–1.90 s with the checks per row and
     * 0.68–0.82 s without (bench/findings.md).
     */
    async insertMessages(trx: Transaction<DB>, d: { companyId: string; communicationId: string; sendAt: Date; now: Date; teamIds: string[]; subsidiaryIds: string[] }): Promise<number> {
      const result = await sql<{ inserted: number }>`
        WITH inserted AS (
          INSERT INTO communication_messages (company_id, id, communication_id, contract_id, send_at, delivered_at)
          SELECT c.company_id, gen_random_uuid(), ${d.communicationId}, c.id, ${d.sendAt}, ${d.now}
          FROM contracts c
          WHERE c.company_id = ${d.companyId} AND c.active
            AND c.id IN (
              SELECT m.contract_id FROM team_members m
              WHERE m.company_id = ${d.companyId} AND m.team_id = ANY(${d.teamIds}::uuid[])
              UNION
              SELECT s.id FROM contracts s
              WHERE s.company_id = ${d.companyId} AND s.subsidiary_id = ANY(${d.subsidiaryIds}::uuid[])
            )
          ORDER BY c.id
          RETURNING 1
        ), counted AS (
          SELECT count(*)::int AS inserted FROM inserted
        ), counter AS (
          UPDATE communication_occurrences o SET recipients = o.recipients + counted.inserted
          FROM counted
          WHERE o.company_id = ${d.companyId} AND o.communication_id = ${d.communicationId} AND o.send_at = ${d.sendAt}
            AND counted.inserted > 0
        )
        SELECT inserted FROM counted`.execute(trx)
      return result.rows[0]?.inserted ?? 0
    },

    /**
     * One row per delivered occurrence, oldest first, read from the occurrence's counters (one
     * probe of the communication's primary key, one range of the occurrences' primary key; no
     * message is read). Undefined when the company has no such communication; a communication
     * delivered to no occurrence yet answers no rows.
     */
    async report(companyId: string, communicationId: string) {
      const rows = await reportRows(companyId, communicationId)
      if (rows.length === 0) return undefined
      return rows.flatMap((r) => r.send_at === null ? [] : [{ ...r, send_at: r.send_at }])
    },
  }
}

export type CommunicationsRepository = ReturnType<typeof createCommunicationsRepository>
export type CommunicationRecord = NonNullable<Awaited<ReturnType<CommunicationsRepository['find']>>>
