import { sql, type Insertable, type Kysely, type Transaction, type Updateable } from 'kysely'
import { prepared } from '../../db/prepared.ts'
import { keyset, type KeysetPage, type SortColumn } from '../../db/keyset.ts'
import { cutPage } from '../../core/paging.ts'
import type { CommunicationStatus, CommunicationsTable, DB } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'

const COMMUNICATION_ORDER: SortColumn[] = [
  { column: 'send_at', desc: true, cast: 'timestamptz' },
  { column: 'id', desc: true, cast: 'uuid' },
]

const COLUMNS = [
  'id',
  'company_id',
  'subject',
  'message',
  'status',
  'sender_id',
  'send_at',
  'recurrent',
  'recurrent_until',
  'action_required',
  'destination_team_ids',
  'destination_subsidiary_ids',
  'attachments',
  'change_log',
  'next_send_at',
  'next_index',
] as const

export function createCommunicationsRepository(db: Kysely<DB>) {
  // LEFT JOIN: no row means no such communication; one row of nulls, not delivered yet.
  const reportRows = prepared(db, (companyId: string, communicationId: string) =>
    db
      .selectFrom('communications as c')
      .leftJoin('communication_occurrences as o', (join) =>
        join.onRef('o.company_id', '=', 'c.company_id').onRef('o.communication_id', '=', 'c.id'),
      )
      .select(['o.send_at', 'o.recipients', 'o.recipients as delivered', 'o.opened', 'o.actions_done'])
      .where('c.company_id', '=', companyId)
      .where('c.id', '=', communicationId)
      .orderBy('o.send_at'),
  )

  return {
    async companyTimezone(companyId: string, executor: Executor = db): Promise<string | undefined> {
      return (await executor.selectFrom('companies').select('timezone').where('id', '=', companyId).executeTakeFirst())
        ?.timezone
    },

    async teamIds(companyId: string, ids: string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set()
      const rows = await db
        .selectFrom('teams')
        .select('id')
        .where('company_id', '=', companyId)
        .where('id', 'in', ids)
        .execute()
      return new Set(rows.map((r) => r.id))
    },
    async subsidiaryIds(companyId: string, ids: string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set()
      const rows = await db
        .selectFrom('subsidiaries')
        .select('id')
        .where('company_id', '=', companyId)
        .where('id', 'in', ids)
        .execute()
      return new Set(rows.map((r) => r.id))
    },
    async contractExists(companyId: string, id: string): Promise<boolean> {
      return (
        (await db
          .selectFrom('contracts')
          .select('id')
          .where('company_id', '=', companyId)
          .where('id', '=', id)
          .executeTakeFirst()) !== undefined
      )
    },
    attachmentRefs(companyId: string, ids: string[]) {
      if (ids.length === 0) return Promise.resolve([])
      return db
        .selectFrom('communication_attachments')
        .select(['id', 'name', 'mime'])
        .where('company_id', '=', companyId)
        .where('id', 'in', ids)
        .execute()
    },

    insert: (executor: Executor, row: Insertable<CommunicationsTable>) =>
      executor.insertInto('communications').values(row).execute(),

    find: (companyId: string, id: string) =>
      db
        .selectFrom('communications')
        .select(COLUMNS)
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .executeTakeFirst(),

    exists: async (companyId: string, id: string) =>
      (await db
        .selectFrom('communications')
        .select('id')
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .executeTakeFirst()) !== undefined,

    /** Locked until the transaction ends: updates and deliveries take turns. */
    findForUpdate: (trx: Transaction<DB>, companyId: string, id: string) =>
      trx
        .selectFrom('communications')
        .select(COLUMNS)
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .forUpdate()
        .executeTakeFirst(),

    // Never the key: messages name it.
    update: (
      executor: Executor,
      companyId: string,
      id: string,
      values: Omit<Updateable<CommunicationsTable>, 'company_id' | 'id'>,
    ) =>
      executor
        .updateTable('communications')
        .set(values)
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .execute(),

    /** Newest send_at first, [from, to); the cursor keeps PostgreSQL's text of send_at (microseconds). */
    async list(companyId: string, filter: { from?: Date; to?: Date; status?: CommunicationStatus }, page: KeysetPage) {
      let query = db
        .selectFrom('communications')
        .select(COLUMNS)
        .select(sql<string>`send_at::text`.as('send_at_key'))
        .where('company_id', '=', companyId)
      if (filter.status) query = query.where('status', '=', filter.status)
      if (filter.from) query = query.where('send_at', '>=', filter.from)
      if (filter.to) query = query.where('send_at', '<', filter.to)
      return cutPage(await keyset(query, COMMUNICATION_ORDER, page).execute(), page, (row) => [row.send_at_key, row.id])
    },

    /**
     * Deletes a pending job without waiting: a job claimed right now waits for the communication's
     * lock, which the caller holds, and will find itself stale; waiting for it here would deadlock.
     */
    cancelPendingJob: (trx: Transaction<DB>, kind: string, key: string) =>
      sql`DELETE FROM jobs WHERE id IN (
            SELECT id FROM jobs WHERE kind = ${kind} AND key = ${key}
              AND done_at IS NULL FOR UPDATE SKIP LOCKED)`.execute(trx),

    async hasDeliveredOccurrence(executor: Executor, companyId: string, id: string): Promise<boolean> {
      const row = await executor
        .selectFrom('communication_occurrences')
        .select('send_at')
        .where('company_id', '=', companyId)
        .where('communication_id', '=', id)
        .limit(1)
        .executeTakeFirst()
      return row !== undefined
    },

    /** false when it already was: a second delivery does nothing. */
    async recordOccurrence(
      trx: Transaction<DB>,
      row: { company_id: string; communication_id: string; send_at: Date; delivered_at: Date },
    ): Promise<boolean> {
      const inserted = await trx
        .insertInto('communication_occurrences')
        .values(row)
        .onConflict((oc) => oc.doNothing())
        .returning('send_at')
        .executeTakeFirst()
      return inserted !== undefined
    },

    /**
     * Delivers one occurrence in one statement: a message per active contract of a destination team or
     * subsidiary, counted in `recipients`. The occurrence was just recorded, so no message of it exists:
     * a plain INSERT without per-row foreign-key checks, in contract order for index locality.
     */
    async insertMessages(
      trx: Transaction<DB>,
      d: {
        companyId: string
        communicationId: string
        sendAt: Date
        now: Date
        teamIds: string[]
        subsidiaryIds: string[]
      },
    ): Promise<number> {
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

    /** One row per delivered occurrence, oldest first, from the counters; undefined when no such communication. */
    async report(companyId: string, communicationId: string) {
      const rows = await reportRows(companyId, communicationId)
      if (rows.length === 0) return undefined
      return rows.flatMap((r) => (r.send_at === null ? [] : [{ ...r, send_at: r.send_at }]))
    },
  }
}

export type CommunicationsRepository = ReturnType<typeof createCommunicationsRepository>
export type CommunicationRecord = NonNullable<Awaited<ReturnType<CommunicationsRepository['find']>>>
