import { randomUUID } from 'node:crypto'
import { sql, type Kysely, type Transaction } from 'kysely'
import type { KeysetPage } from '../../db/keyset.ts'
import { cutPage } from '../../core/paging.ts'
import type { Executor } from '../../db/executor.ts'
import type { AttemptOutcome, DB } from '../../db/tables.ts'
import {
  claimDue,
  fanOutDue,
  oldestPending,
  recordDirectOutcomes,
  recordOutcomes,
  type DeliveryClaim,
  type DirectOutcome,
  type FanOutClaim,
  type RecordedOutcome,
} from './delivery-queue.repository.ts'

interface AttemptRow {
  key: number
  position: number
  id: number
  delivery_id: string
  event_id: string
  /** Null: the retention deleted the event before this item's batch row. */
  event_type: string | null
  attempt: number
  started_at: Date
  outcome: Exclude<AttemptOutcome, 'pending'>
  status_code: number | null
  duration_ms: number | null
  error: string | null
  next_retry_at: Date | null
}

const ENDPOINT_COLUMNS = [
  'id',
  'company_id',
  'url',
  'event_types',
  'resources',
  'description',
  'enabled',
  'disabled_reason',
  'created_by',
  'previous_secret_expires_at',
  'created_at',
] as const

export interface EndpointChanges {
  url?: string
  event_types?: string[]
  description?: string | null
  enabled?: boolean
  disabled_reason?: string | null
  created_by?: string
}

const ownedBy = (db: Kysely<DB>, companyId: string | null) =>
  companyId === null
    ? db.selectFrom('webhook_endpoints').where('company_id', 'is', null)
    : db.selectFrom('webhook_endpoints').where('company_id', '=', companyId)

/**
 * Endpoint writes on one transaction: `lock` and `companyDisabled` hold what they read until it
 * ends, so a change applies to what it was checked against and a company's disabling waits for it.
 */
function endpointWrites(trx: Transaction<DB>) {
  const owned = (companyId: string | null) => ownedBy(trx, companyId)
  return {
    lock: (companyId: string | null, id: string) =>
      owned(companyId).select(ENDPOINT_COLUMNS).where('id', '=', id).forUpdate().executeTakeFirst(),

    /** False for the platform's endpoints; the company's row is share-locked. */
    async companyDisabled(companyId: string | null): Promise<boolean> {
      if (companyId === null) return false
      const row = await trx
        .selectFrom('companies')
        .select('disabled_at')
        .where('id', '=', companyId)
        .forShare()
        .executeTakeFirst()
      return row?.disabled_at != null
    },

    count: async (companyId: string | null) =>
      Number(
        (
          await owned(companyId)
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      ),

    insert: (row: {
      id: string
      company_id: string | null
      url: string
      event_types: string[]
      description: string | null
      secret: string
      enabled: boolean
      resources: string[] | null
      created_by: string
    }) => trx.insertInto('webhook_endpoints').values(row).returning(ENDPOINT_COLUMNS).executeTakeFirstOrThrow(),

    /** Enabling forgets the last event of a stop. */
    update: (id: string, changes: EndpointChanges) =>
      trx
        .updateTable('webhook_endpoints')
        .set({ ...changes, ...(changes.enabled ? { last_event_seq: null } : {}), updated_at: new Date() })
        .where('id', '=', id)
        .returning(ENDPOINT_COLUMNS)
        .executeTakeFirstOrThrow(),

    /** The replaced secret signs beside it until `previousUntil` (null: not at all). */
    rotateSecret: (id: string, secret: string, previousUntil: Date | null) =>
      trx
        .updateTable('webhook_endpoints')
        .set((eb) => ({
          secret,
          previous_secret: previousUntil ? eb.ref('secret') : null,
          previous_secret_expires_at: previousUntil,
          updated_at: new Date(),
        }))
        .where('id', '=', id)
        .returning(ENDPOINT_COLUMNS)
        .executeTakeFirstOrThrow(),
  }
}

type EndpointWrites = ReturnType<typeof endpointWrites>

/** Webhook endpoints, their deliveries and attempts; the queue's statements are in delivery-queue.repository.ts. */
export function createWebhookEndpointsRepository(db: Kysely<DB>) {
  const owned = (companyId: string | null) => ownedBy(db, companyId)

  return {
    transaction: <T>(work: (writes: EndpointWrites) => Promise<T>) =>
      db.transaction().execute((trx) => work(endpointWrites(trx))),

    /** A write's events have deliveries only when some endpoint is enabled. */
    anyEnabled: async () =>
      (await db
        .selectFrom('webhook_endpoints')
        .select('id')
        .where('enabled', '=', true)
        .limit(1)
        .executeTakeFirst()) !== undefined,

    list: (companyId: string | null) =>
      owned(companyId).select(ENDPOINT_COLUMNS).orderBy('created_at').orderBy('id').execute(),

    find: (companyId: string | null, id: string) =>
      owned(companyId).select(ENDPOINT_COLUMNS).where('id', '=', id).executeTakeFirst(),

    async delete(companyId: string | null, id: string): Promise<boolean> {
      let query = db.deleteFrom('webhook_endpoints').where('id', '=', id)
      query = companyId === null ? query.where('company_id', 'is', null) : query.where('company_id', '=', companyId)
      return Number((await query.executeTakeFirst()).numDeletedRows) > 0
    },

    /**
     * Ended attempts, newest first: attempt rows merged with items of batch rows. Each side reads
     * limit + 1 rows after the cursor, so a deep page costs what the first does; an item whose event
     * was pruned is dropped after the cut, so it cannot end the list early.
     */
    async attempts(endpointId: string, page: KeysetPage & { limit: number }) {
      const [key, position] = page.after ?? []
      const rows = page.limit + 1
      const { rows: found } = await sql<AttemptRow>`
        SELECT x.key, x.position, x.id, x.delivery_id, x.event_id, e.type AS event_type, x.attempt, x.started_at,
          x.outcome, x.status_code, x.duration_ms, x.error, x.next_retry_at
        FROM (SELECT * FROM (
          (SELECT a.id AS key, 0::bigint AS position, a.id, a.delivery_id, a.event_id, a.attempt, a.started_at,
            a.outcome, a.status_code, a.duration_ms, a.error, a.next_retry_at
          FROM webhook_attempts a
          WHERE a.endpoint_id = ${endpointId} AND a.outcome <> 'pending'
            ${key === undefined ? sql`` : sql`AND a.id < ${key}::bigint`}
          ORDER BY a.id DESC LIMIT ${rows})
          UNION ALL
          (SELECT b.id, u.position, u.id, u.delivery_id, u.event_id, 1, u.started_at, 'succeeded', u.status_code,
            u.duration_ms, NULL, NULL
          FROM (
            SELECT * FROM webhook_delivered_batches
            WHERE endpoint_id = ${endpointId} ${key === undefined ? sql`` : sql`AND id <= ${key}::bigint`}
            ORDER BY id DESC LIMIT ${rows + 1}
          ) b
          CROSS JOIN LATERAL unnest(b.attempt_ids, b.delivery_ids, b.event_ids, b.started_ats, b.status_codes,
            b.durations_ms)
            WITH ORDINALITY AS u(id, delivery_id, event_id, started_at, status_code, duration_ms, position)
          ${key === undefined ? sql`` : sql`WHERE b.id < ${key}::bigint OR u.position < ${position}::bigint`}
          ORDER BY b.id DESC, u.position DESC LIMIT ${rows})
        ) merged ORDER BY merged.key DESC, merged.position DESC LIMIT ${rows}) x
        LEFT JOIN events e ON e.id = x.event_id
        ORDER BY x.key DESC, x.position DESC`.execute(db)
      const paged = cutPage(found, page, (row) => [row.key, row.position])
      return {
        ...paged,
        items: paged.items.filter((row): row is AttemptRow & { event_type: string } => row.event_type !== null),
      }
    },

    /** For the events' retention; answers how many were deleted. */
    async pruneDelivered(executor: Executor, cutoff: Date, batch: number): Promise<number> {
      const result = await sql`DELETE FROM webhook_delivered_batches WHERE id IN (
        SELECT id FROM webhook_delivered_batches WHERE recorded_at < ${cutoff} ORDER BY recorded_at
          LIMIT ${batch})`.execute(executor)
      return Number(result.numAffectedRows ?? 0)
    },

    ping: (endpoint: { id: string; company_id: string | null }) =>
      db.transaction().execute(async (trx) => {
        const eventId = randomUUID()
        const event = await trx
          .insertInto('events')
          .values({
            id: eventId,
            type: 'ping',
            company_id: endpoint.company_id,
            data: JSON.stringify({
              object: {
                endpoint_id: endpoint.id,
                message: 'A test event sent by POST .../webhook_endpoints/{id}/test',
              },
            }),
          })
          .returning(['id', 'type', 'company_id', 'data', 'created_at'])
          .executeTakeFirstOrThrow()
        await trx
          .insertInto('webhook_deliveries')
          .values({ id: randomUUID(), endpoint_id: endpoint.id, event_id: eventId, company_id: endpoint.company_id })
          .execute()
        return event
      }),

    claimDue: (claim: DeliveryClaim) => claimDue(db, claim),
    fanOutDue: (claim: FanOutClaim) => fanOutDue(db, claim),
    recordOutcomes: (outcomes: readonly RecordedOutcome[]) => recordOutcomes(db, outcomes),
    recordDirectOutcomes: (outcomes: readonly DirectOutcome[]) => recordDirectOutcomes(db, outcomes),

    oldestPending: () => oldestPending(db),

    async eventsSince(afterSeq: number | undefined) {
      if (afterSeq === undefined) {
        const row = await db
          .selectFrom('events')
          .select((eb) => eb.fn.max('seq').as('seq'))
          .executeTakeFirst()
        return { counts: [], seq: Number(row?.seq ?? 0) }
      }
      const rows = await db
        .selectFrom('events')
        .select(['type', (eb) => eb.fn.countAll().as('n'), (eb) => eb.fn.max('seq').as('seq')])
        .where('seq', '>', afterSeq)
        .groupBy('type')
        .execute()
      return {
        counts: rows.map((r) => ({ type: r.type, n: Number(r.n) })),
        seq: Math.max(afterSeq, ...rows.map((r) => Number(r.seq))),
      }
    },
  }
}

export type WebhookEndpointsRepository = ReturnType<typeof createWebhookEndpointsRepository>
