import { randomUUID } from 'node:crypto'
import { keyset, type KeysetPage } from '../../db/keyset.ts'
import { cutPage } from '../../http/pagination.ts'
import type { Kysely } from 'kysely'
import type { AttemptOutcome, DB } from '../../db/tables.ts'
import { claimDue, fanOutDue, oldestPending, recordDirectOutcomes, recordOutcomes, type DeliveryClaim, type DirectOutcome, type FanOutClaim, type RecordedOutcome } from './delivery-queue.repository.ts'

export const ENDPOINT_COLUMNS = ['id', 'company_id', 'url', 'event_types', 'description', 'enabled', 'disabled_reason', 'previous_secret_expires_at', 'created_at'] as const

/** Webhook endpoints, their deliveries and attempts (migrations 0019, 0030; the delivery queue's statements: delivery-queue.repository.ts). */
export function createWebhookEndpointsRepository(db: Kysely<DB>) {
  const owned = (companyId: string | null) => companyId === null
    ? db.selectFrom('webhook_endpoints').where('company_id', 'is', null)
    : db.selectFrom('webhook_endpoints').where('company_id', '=', companyId)

  return {
    insert: (row: { id: string; company_id: string | null; url: string; event_types: string[]; description: string | null; secret: string; enabled: boolean; resources: string[] | null }) =>
      db.insertInto('webhook_endpoints').values(row).returning(ENDPOINT_COLUMNS).executeTakeFirstOrThrow(),

    /** Whether any endpoint, of any owner, is enabled (a write's events have deliveries only then). */
    anyEnabled: async () =>
      (await db.selectFrom('webhook_endpoints').select('id').where('enabled', '=', true).limit(1).executeTakeFirst()) !== undefined,

    count: async (companyId: string | null) =>
      Number((await owned(companyId).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n),

    list: (companyId: string | null) => owned(companyId).select(ENDPOINT_COLUMNS).orderBy('created_at').orderBy('id').execute(),

    find: (companyId: string | null, id: string) => owned(companyId).select(ENDPOINT_COLUMNS).where('id', '=', id).executeTakeFirst(),

    async delete(companyId: string | null, id: string): Promise<boolean> {
      let query = db.deleteFrom('webhook_endpoints').where('id', '=', id)
      query = companyId === null ? query.where('company_id', 'is', null) : query.where('company_id', '=', companyId)
      return Number((await query.executeTakeFirst()).numDeletedRows) > 0
    },

    /** Changes what is given; enabling clears the reason of a disabling. Answers the endpoint, or nothing when it is not the owner's. */
    update: (companyId: string | null, id: string, changes: { url?: string; event_types?: string[]; description?: string | null; enabled?: boolean; disabled_reason?: string | null }) => {
      let query = db.updateTable('webhook_endpoints').set({ ...changes, updated_at: new Date() }).where('id', '=', id)
      query = companyId === null ? query.where('company_id', 'is', null) : query.where('company_id', '=', companyId)
      return query.returning(ENDPOINT_COLUMNS).executeTakeFirst()
    },

    /** A new secret; the one it replaces signs beside it until `previousUntil` (null: not at all). */
    rotateSecret: (companyId: string | null, id: string, secret: string, previousUntil: Date | null) => {
      let query = db.updateTable('webhook_endpoints').set((eb) => ({
        secret,
        previous_secret: previousUntil ? eb.ref('secret') : null,
        previous_secret_expires_at: previousUntil,
        updated_at: new Date(),
      })).where('id', '=', id)
      query = companyId === null ? query.where('company_id', 'is', null) : query.where('company_id', '=', companyId)
      return query.returning(ENDPOINT_COLUMNS).executeTakeFirst()
    },

    /**
     * A page of the endpoint's ended attempts, newest first (a cursor's key: the last attempt's id).
     * An attempt under way is not listed: a fanned-out event's first calls have no row until they
     * end (migration 0034), and the queue's attempts are shown the same way.
     */
    async attempts(endpointId: string, page: KeysetPage) {
      const query = db.selectFrom('webhook_attempts as a').innerJoin('events as e', 'e.id', 'a.event_id')
        .select(['a.id', 'a.delivery_id', 'a.event_id', 'e.type as event_type', 'a.attempt', 'a.started_at', 'a.outcome', 'a.status_code', 'a.duration_ms', 'a.error', 'a.next_retry_at'])
        .where('a.endpoint_id', '=', endpointId).where('a.outcome', '<>', 'pending').$narrowType<{ outcome: Exclude<AttemptOutcome, 'pending'> }>()
      return cutPage(await keyset(query, [{ column: 'a.id', desc: true }], page).execute(), page, (row) => [Number(row.id)])
    },

    /** A `ping` for one endpoint only: the event and its one delivery (due now), in one transaction. */
    ping: (endpoint: { id: string; company_id: string | null }) => db.transaction().execute(async (trx) => {
      const eventId = randomUUID()
      const event = await trx.insertInto('events').values({
        id: eventId, type: 'ping', company_id: endpoint.company_id,
        data: JSON.stringify({ object: { endpoint_id: endpoint.id, message: 'A test event sent by POST .../webhook_endpoints/{id}/test' } }),
      }).returning(['id', 'type', 'company_id', 'data', 'created_at']).executeTakeFirstOrThrow()
      await trx.insertInto('webhook_deliveries').values({ id: randomUUID(), endpoint_id: endpoint.id, event_id: eventId, company_id: endpoint.company_id }).execute()
      return event
    }),

    claimDue: (claim: DeliveryClaim) => claimDue(db, claim),
    fanOutDue: (claim: FanOutClaim) => fanOutDue(db, claim),
    recordOutcomes: (outcomes: readonly RecordedOutcome[]) => recordOutcomes(db, outcomes),
    recordDirectOutcomes: (outcomes: readonly DirectOutcome[]) => recordDirectOutcomes(db, outcomes),

    oldestPending: () => oldestPending(db),

    /** For the metrics: the events written since `afterSeq`, by type, and the newest position. */
    async eventsSince(afterSeq: number | undefined) {
      if (afterSeq === undefined) {
        const row = await db.selectFrom('events').select((eb) => eb.fn.max('seq').as('seq')).executeTakeFirst()
        return { counts: [], seq: Number(row?.seq ?? 0) }
      }
      const rows = await db.selectFrom('events').select(['type', (eb) => eb.fn.countAll().as('n'), (eb) => eb.fn.max('seq').as('seq')])
        .where('seq', '>', afterSeq).groupBy('type').execute()
      return { counts: rows.map((r) => ({ type: r.type, n: Number(r.n) })), seq: Math.max(afterSeq, ...rows.map((r) => Number(r.seq))) }
    },
  }
}

export type WebhookEndpointsRepository = ReturnType<typeof createWebhookEndpointsRepository>
