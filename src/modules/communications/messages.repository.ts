import { sql, type Kysely, type SelectQueryBuilder } from 'kysely'
import { keyset, type SortColumn } from '../../db/keyset.ts'
import { cutPage, type Paged } from '../../core/paging.ts'
import type { DB } from '../../db/tables.ts'

const MESSAGE_COLUMNS = [
  'm.id',
  'm.communication_id',
  'm.contract_id',
  'm.send_at',
  'm.delivered_at',
  'm.opened_at',
  'm.action_done_at',
] as const

/** page/page_size as an offset (the spec's paging for this list), or limit/cursor as a keyset. */
function cutRows<T>(rows: T[], paging: Paging, keyOf: (row: T) => Array<string | number>): Paged<T> {
  return 'offset' in paging ? { items: rows } : cutPage(rows, paging, keyOf)
}

export type Paging = { limit: number; offset: number } | { limit: number; after?: ReadonlyArray<string | number> }

const OCCURRENCE_ORDER: SortColumn[] = [{ column: 'm.contract_id', cast: 'uuid' }]
const INBOX_ORDER: SortColumn[] = [
  { column: 'm.send_at', desc: true, cast: 'timestamptz' },
  { column: 'm.id', cast: 'uuid' },
]

function paged<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, order: SortColumn[], paging: Paging) {
  if ('offset' in paging) {
    let q = query
    for (const { column, desc } of order) q = q.orderBy(sql.ref(column), desc ? 'desc' : 'asc')
    return q.limit(paging.limit).offset(paging.offset)
  }
  return keyset(query, order, paging)
}

/** Delivered messages: per occurrence, per recipient (the inbox), and their first opening and acknowledgement. */
export function createMessagesRepository(db: Kysely<DB>) {
  function occurrenceQuery(
    companyId: string,
    communicationId: string,
    sendAt: Date,
    filter: { opened?: boolean; actions?: boolean },
  ) {
    let query = db
      .selectFrom('communication_messages as m')
      .where('m.company_id', '=', companyId)
      .where('m.communication_id', '=', communicationId)
      .where('m.send_at', '=', sendAt)
    if (filter.opened !== undefined) query = query.where('m.opened_at', filter.opened ? 'is not' : 'is', null)
    if (filter.actions !== undefined) query = query.where('m.action_done_at', filter.actions ? 'is not' : 'is', null)
    return query
  }

  function inboxQuery(companyId: string, contractId: string, filter: { opened?: boolean }) {
    let query = db
      .selectFrom('communication_messages as m')
      .innerJoin('communications as c', (join) =>
        join.onRef('c.company_id', '=', 'm.company_id').onRef('c.id', '=', 'm.communication_id'),
      )
      .where('m.company_id', '=', companyId)
      .where('m.contract_id', '=', contractId)
    if (filter.opened !== undefined) query = query.where('m.opened_at', filter.opened ? 'is not' : 'is', null)
    return query
  }

  return {
    async byOccurrence(
      companyId: string,
      communicationId: string,
      sendAt: Date,
      filter: { opened?: boolean; actions?: boolean },
      paging: Paging,
    ) {
      const base = occurrenceQuery(companyId, communicationId, sendAt, filter)
      const [rows, count] = await Promise.all([
        paged(base.select(MESSAGE_COLUMNS), OCCURRENCE_ORDER, paging).execute(),
        base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
      ])
      return { ...cutRows(rows, paging, (row) => [row.contract_id]), total: Number(count.total) }
    },

    async inbox(companyId: string, contractId: string, filter: { opened?: boolean }, paging: Paging) {
      const base = inboxQuery(companyId, contractId, filter)
      const [rows, count] = await Promise.all([
        paged(
          base
            .select(MESSAGE_COLUMNS)
            .select(['c.subject', 'c.message', 'c.sender_id', 'c.action_required', 'c.attachments'])
            // PostgreSQL's text: a Date would drop microseconds.
            .select(sql<string>`m.send_at::text`.as('send_at_key')),
          INBOX_ORDER,
          paging,
        ).execute(),
        base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
      ])
      return { ...cutRows(rows, paging, (row) => [row.send_at_key, row.id]), total: Number(count.total) }
    },

    find: (companyId: string, messageId: string) =>
      db
        .selectFrom('communication_messages as m')
        .innerJoin('communications as c', (join) =>
          join.onRef('c.company_id', '=', 'm.company_id').onRef('c.id', '=', 'm.communication_id'),
        )
        .select(['m.id', 'c.action_required'])
        .where('m.company_id', '=', companyId)
        .where('m.id', '=', messageId)
        .executeTakeFirst(),

    /**
     * Records the first opening only and counts it in `opened`, in one statement. A concurrent call
     * waits for the row lock, re-checks the WHERE and counts nothing. Message then occurrence, like every writer.
     */
    markOpened: (companyId: string, messageId: string, at: Date) =>
      sql`
      WITH opened AS (
        UPDATE communication_messages SET opened_at = ${at}
        WHERE company_id = ${companyId} AND id = ${messageId} AND opened_at IS NULL
        RETURNING communication_id, send_at
      )
      UPDATE communication_occurrences o SET opened = o.opened + 1
      FROM opened
      WHERE o.company_id = ${companyId} AND o.communication_id = opened.communication_id
        AND o.send_at = opened.send_at`.execute(db),

    /**
     * Records the first acknowledgement only, counting it in `actions_done` (and `opened` if it was
     * unopened, read under FOR UPDATE so a concurrent opening is seen).
     */
    markActionDone: (companyId: string, messageId: string, at: Date) =>
      sql`
      WITH message AS (
        SELECT id, communication_id, send_at, opened_at IS NULL AS first_opening
        FROM communication_messages
        WHERE company_id = ${companyId} AND id = ${messageId} AND action_done_at IS NULL
        FOR UPDATE
      ), done AS (
        UPDATE communication_messages m SET action_done_at = ${at}, opened_at = coalesce(m.opened_at, ${at})
        FROM message
        WHERE m.company_id = ${companyId} AND m.id = message.id
        RETURNING message.communication_id, message.send_at, message.first_opening
      )
      UPDATE communication_occurrences o
      SET actions_done = o.actions_done + 1, opened = o.opened + CASE WHEN done.first_opening THEN 1 ELSE 0 END
      FROM done
      WHERE o.company_id = ${companyId} AND o.communication_id = done.communication_id
        AND o.send_at = done.send_at`.execute(db),
  }
}

export type MessagesRepository = ReturnType<typeof createMessagesRepository>
