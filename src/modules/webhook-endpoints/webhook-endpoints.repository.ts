import { randomUUID } from 'node:crypto'
import { keyset, type KeysetPage } from '../../db/keyset.ts'
import { cutPage } from '../../http/pagination.ts'
import { sql, type Kysely, type Transaction } from 'kysely'
import type { AttemptOutcome, DB } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'

export const ENDPOINT_COLUMNS = ['id', 'company_id', 'url', 'event_types', 'description', 'enabled', 'disabled_reason', 'previous_secret_expires_at', 'created_at'] as const

/** Webhook endpoints, their deliveries and attempts (migration 0019). */
export function createWebhookEndpointsRepository(db: Kysely<DB>) {
  const owned = (companyId: string | null) => companyId === null
    ? db.selectFrom('webhook_endpoints').where('company_id', 'is', null)
    : db.selectFrom('webhook_endpoints').where('company_id', '=', companyId)

  return {
    insert: (row: { id: string; company_id: string | null; url: string; event_types: string[]; description: string | null; secret: string; enabled: boolean; resources: string[] | null }) =>
      db.insertInto('webhook_endpoints').values(row).returning(ENDPOINT_COLUMNS).executeTakeFirstOrThrow(),

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

    /** A page of the endpoint's attempts, newest first (a cursor's key: the last attempt's id). */
    async attempts(endpointId: string, page: KeysetPage) {
      const query = db.selectFrom('webhook_attempts as a').innerJoin('events as e', 'e.id', 'a.event_id')
        .select(['a.id', 'a.delivery_id', 'a.event_id', 'e.type as event_type', 'a.attempt', 'a.started_at', 'a.outcome', 'a.status_code', 'a.duration_ms', 'a.error', 'a.next_retry_at'])
        .where('a.endpoint_id', '=', endpointId)
      return cutPage(await keyset(query, [{ column: 'a.id', desc: true }], page).execute(), page, (row) => [Number(row.id)])
    },

    /** A `ping` for one endpoint only: the event, its one delivery, the delivery's job, in one transaction. */
    ping: (endpoint: { id: string; company_id: string | null }) => db.transaction().execute(async (trx) => {
      const eventId = randomUUID()
      const deliveryId = randomUUID()
      const event = await trx.insertInto('events').values({
        id: eventId, type: 'ping', company_id: endpoint.company_id,
        data: JSON.stringify({ object: { endpoint_id: endpoint.id, message: 'A test event sent by POST .../webhook_endpoints/{id}/test' } }),
      }).returning(['id', 'type', 'company_id', 'data', 'created_at']).executeTakeFirstOrThrow()
      await trx.insertInto('webhook_deliveries').values({ id: deliveryId, endpoint_id: endpoint.id, event_id: eventId, company_id: endpoint.company_id }).execute()
      await sql`INSERT INTO jobs (kind, key, run_at, company_id, payload)
        VALUES ('webhook.deliver', ${`${deliveryId}/0`}, now(), ${endpoint.company_id}, ${JSON.stringify({ delivery_id: deliveryId, seq: 0 })}::jsonb)`.execute(trx)
      return event
    }),

    /** The delivery with its endpoint and event, locked until the transaction ends. */
    lockDelivery: (trx: Transaction<DB>, id: string) =>
      trx.selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
        .innerJoin('events as e', 'e.id', 'd.event_id')
        .select(['d.id', 'd.status', 'd.attempts', 'd.job_seq', 'd.company_id', 'd.endpoint_id', 'w.url', 'w.secret', 'w.previous_secret', 'w.previous_secret_expires_at', 'w.enabled',
          'e.id as event_id', 'e.type', 'e.company_id as event_company_id', 'e.data', 'e.created_at'])
        .where('d.id', '=', id).forUpdate('d').executeTakeFirst(),

    /** Starts attempt `attempt` under job `seq`: an attempt of an earlier job still pending was lost with its instance. */
    async startAttempt(trx: Executor, d: { id: string; endpointId: string; eventId: string; attempt: number; seq: number; at: Date }): Promise<number> {
      await trx.updateTable('webhook_attempts').set({ outcome: 'lost', error: 'No outcome recorded: the delivering instance stopped' })
        .where('delivery_id', '=', d.id).where('outcome', '=', 'pending').execute()
      await trx.updateTable('webhook_deliveries').set({ attempts: d.attempt, job_seq: d.seq, next_attempt_at: null }).where('id', '=', d.id).execute()
      const row = await trx.insertInto('webhook_attempts')
        .values({ delivery_id: d.id, endpoint_id: d.endpointId, event_id: d.eventId, attempt: d.attempt, started_at: d.at })
        .returning('id').executeTakeFirstOrThrow()
      return row.id
    },

    /** Hands the delivery to job `seq` without an attempt (its endpoint has too many calls under way here). */
    deferDelivery: (trx: Executor, id: string, seq: number) =>
      trx.updateTable('webhook_deliveries').set({ job_seq: seq }).where('id', '=', id).execute(),

    finishAttempt: (trx: Executor, attemptId: number, outcome: { outcome: AttemptOutcome; statusCode: number | null; durationMs: number; error: string | null; nextRetryAt: Date | null }) =>
      trx.updateTable('webhook_attempts').set({
        outcome: outcome.outcome, status_code: outcome.statusCode, duration_ms: outcome.durationMs, error: outcome.error?.slice(0, 1000) ?? null, next_retry_at: outcome.nextRetryAt,
      }).where('id', '=', attemptId).execute(),

    settleDelivery: (trx: Executor, id: string, values: { status: 'pending' | 'delivered' | 'failed'; nextAttemptAt: Date | null; deliveredAt?: Date }) =>
      trx.updateTable('webhook_deliveries').set({ status: values.status, next_attempt_at: values.nextAttemptAt, delivered_at: values.deliveredAt ?? null })
        .where('id', '=', id).execute(),

    disableEndpoint: (trx: Executor, id: string, reason: string) =>
      trx.updateTable('webhook_endpoints').set({ enabled: false, disabled_reason: reason, updated_at: new Date() }).where('id', '=', id).execute(),

    /** For the metrics: each endpoint's oldest pending delivery. */
    oldestPending: () => db.selectFrom('webhook_deliveries').select(['endpoint_id', (eb) => eb.fn.min('created_at').as('oldest')])
      .where('status', '=', 'pending').groupBy('endpoint_id').execute(),

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
