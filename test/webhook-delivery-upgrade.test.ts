import { it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { PGlite } from '@electric-sql/pglite'
import { createPgConfig } from '@electric-sql/pglite/node-postgres'
import { Kysely, PostgresDialect, sql, type RawBuilder } from 'kysely'
import { migrate, readMigrations } from '../src/db/migrate.ts'
import type { DB } from '../src/db/tables.ts'
import { createWebhookEndpointsRepository } from '../src/modules/webhook-endpoints/webhook-endpoints.repository.ts'
import { withDatabase } from './helpers/databases.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

/** The migration that made the deliveries their own queue, and the one before it. */
const QUEUE = '0030_webhook_delivery_queue'
/** The migration that records first deliveries in batches, and shortens the fan-outs' lists as their outcomes come. */
const BATCHES = '0036_webhook_delivered_batches'

/** A database of the engine, migrated up to (not including) `before`, by the same SQL the service runs. */
async function databaseBefore(engine: string, before: string): Promise<{ db: Kysely<DB>; close(): Promise<void> }> {
  let db: Kysely<DB>
  let close: () => Promise<void>
  if (engine === 'pglite') {
    const pglite = new PGlite()
    await pglite.waitReady
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: new pg.Pool({ ...createPgConfig(pglite), max: 1 }) }) })
    close = async () => {
      await db.destroy()
      await pglite.close()
    }
  } else {
    const admin = process.env.TEST_DATABASE_URL!
    const name = `cai_upgrade_${process.pid}_${randomBytes(3).toString('hex')}`
    const client = new pg.Client({ connectionString: admin })
    await client.connect()
    await client.query(`CREATE DATABASE ${name}`)
    const pool = new pg.Pool({ connectionString: withDatabase(admin, name), max: 2 })
    // The drop below ends what is left of the pool's sessions: not an error of the test.
    pool.on('error', () => {})
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) })
    close = async () => {
      await db.destroy()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
    }
  }
  await sql`CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`.execute(
    db,
  )
  for (const m of readMigrations().filter((m) => m.version < before)) {
    await sql
      .raw(`BEGIN;\n${m.sql}\n;INSERT INTO schema_migrations (version) VALUES ('${m.version}');\nCOMMIT;`)
      .execute(db)
  }
  return { db, close }
}

// Its own setup: a database migrated only up to before the migration under test.
forEachEngine('the upgrade to the delivery queue', (engine) => {
  it("folds every pending webhook.deliver job into its delivery's due time, drops the jobs, and write_event() writes none", async () => {
    const { db, close } = await databaseBefore(engine, QUEUE)
    try {
      const q = async <T>(query: RawBuilder<T>) => (await query.execute(db)).rows
      await sql`INSERT INTO webhook_endpoints (id, url, secret) VALUES ('7d4f1c2e-9a8b-4c6d-8e0f-1a2b3c4d5e6f', 'https://example.com/hook', 'whsec_x')`.execute(
        db,
      )
      // Four deliveries as the job-per-delivery code left them (0019's write_event, then its claims):
      // due now; in flight (attempt pending, its lease's job 70 s ahead); waiting for a retry; delivered.
      const ids: string[] = []
      for (let i = 0; i < 4; i++) {
        const [event] = await q(sql<{ id: string }>`SELECT write_event('ping', NULL, '{}'::jsonb) AS id`)
        ids.push((await q(sql<{ id: string }>`SELECT id FROM webhook_deliveries WHERE event_id = ${event!.id}`))[0]!.id)
      }
      const [due, inFlight, retrying, delivered] = ids as [string, string, string, string]
      assert.equal((await q(sql`SELECT 1 FROM jobs WHERE kind = 'webhook.deliver' AND done_at IS NULL`)).length, 4)
      for (const [id, runAt] of [
        [inFlight, sql`now() + interval '70 seconds'`],
        [retrying, sql`now() + interval '5 minutes'`],
      ] as const) {
        await sql`UPDATE jobs SET done_at = now() WHERE key = ${`${id}/0`}`.execute(db)
        await sql`INSERT INTO jobs (kind, key, run_at, payload) VALUES ('webhook.deliver', ${`${id}/1`}, ${runAt}, ${JSON.stringify({ delivery_id: id, seq: 1 })}::jsonb)`.execute(
          db,
        )
        await sql`UPDATE webhook_deliveries SET attempts = 1, job_seq = 1 WHERE id = ${id}`.execute(db)
        await sql`INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_id, attempt, started_at, outcome)
          SELECT id, endpoint_id, event_id, 1, now(), ${id === inFlight ? 'pending' : 'failed'} FROM webhook_deliveries WHERE id = ${id}`.execute(
          db,
        )
      }
      await sql`UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now() WHERE id = ${delivered}`.execute(
        db,
      )
      await sql`DELETE FROM jobs WHERE key = ${`${delivered}/0`}`.execute(db)
      const runAt = new Map(
        (
          await q(
            sql<{
              key: string
              run_at: Date
            }>`SELECT key, run_at FROM jobs WHERE kind = 'webhook.deliver' AND done_at IS NULL`,
          )
        ).map((r) => [r.key, new Date(r.run_at).getTime()]),
      )

      assert.ok((await migrate(db)).includes(QUEUE))

      const rows = new Map(
        (
          await q(
            sql<{
              id: string
              status: string
              seq: number
              next_attempt_at: Date | null
            }>`SELECT id, status, seq, next_attempt_at FROM webhook_deliveries`,
          )
        ).map((r) => [r.id, r]),
      )
      const dueAt = (id: string) => rows.get(id)!.next_attempt_at && new Date(rows.get(id)!.next_attempt_at!).getTime()
      assert.equal(dueAt(due), runAt.get(`${due}/0`))
      assert.equal(dueAt(inFlight), runAt.get(`${inFlight}/1`))
      assert.equal(dueAt(retrying), runAt.get(`${retrying}/1`))
      assert.deepEqual([rows.get(inFlight)!.status, rows.get(inFlight)!.seq], ['pending', 1])
      assert.deepEqual([rows.get(delivered)!.status, dueAt(delivered)], ['delivered', null])
      assert.equal((await q(sql`SELECT 1 FROM jobs WHERE kind = 'webhook.deliver'`)).length, 0)

      // A new event (the migrations after the queue's included): due to be fanned out at once, no
      // delivery written yet (migration 0034), and no job.
      const [event] = await q(sql<{ id: string }>`SELECT write_event('ping', NULL, '{}'::jsonb) AS id`)
      assert.equal((await q(sql`SELECT 1 FROM webhook_deliveries WHERE event_id = ${event!.id}`)).length, 0)
      assert.equal((await q(sql`SELECT 1 FROM webhook_fanouts WHERE event_id = ${event!.id}`)).length, 1)
      assert.equal((await q(sql`SELECT 1 FROM jobs`)).length, 0)

      // The queue takes them over: past the lease, the due one and the one in flight (its attempt
      // lost) are claimed, the retry 5 minutes out is not; the new one is fanned out to its endpoint.
      const now = new Date(Date.now() + 71_000)
      const repo = createWebhookEndpointsRepository(db)
      const claimed = await repo.claimDue({
        now,
        leaseUntil: new Date(now.getTime() + 70_000),
        bound: 16,
        busy: [],
        dropBatch: 10,
      })
      assert.deepEqual(claimed.map((c) => c.id).sort(), [due, inFlight].sort())
      const fanned = await repo.fanOutDue({
        now,
        leaseUntil: new Date(now.getTime() + 70_000),
        bound: 16,
        busy: [],
        batch: 10,
      })
      assert.deepEqual(
        fanned.map((e) => [e.event_id, e.direct.map((d) => d?.id)]),
        [[event!.id, ['7d4f1c2e-9a8b-4c6d-8e0f-1a2b3c4d5e6f']]],
      )
      assert.equal(claimed.find((c) => c.id === inFlight)!.attempt, 2)
      assert.equal(claimed.find((c) => c.id === inFlight)!.seq, 2)
      const outcomes = await q(
        sql<{
          attempt: number
          outcome: string
        }>`SELECT attempt, outcome FROM webhook_attempts WHERE delivery_id = ${inFlight} ORDER BY attempt`,
      )
      assert.deepEqual(
        outcomes.map((a) => `${a.attempt}:${a.outcome}`),
        ['1:lost', '2:pending'],
      )
    } finally {
      await close()
    }
  })
})

// Its own setup: a database migrated only up to before the migration under test.
forEachEngine('the upgrade to first deliveries in batches', (engine) => {
  it("takes off the fan-outs' lists the calls whose delivery was written before; a list left empty goes with its row", async () => {
    const { db, close } = await databaseBefore(engine, BATCHES)
    try {
      const q = async <T>(query: RawBuilder<T>) => (await query.execute(db)).rows
      const [a, b] = ['7d4f1c2e-9a8b-4c6d-8e0f-1a2b3c4d5e61', '7d4f1c2e-9a8b-4c6d-8e0f-1a2b3c4d5e62']
      for (const id of [a, b])
        await sql`INSERT INTO webhook_endpoints (id, url, secret) VALUES (${id}, 'https://example.com/hook', 'whsec_x')`.execute(
          db,
        )
      // Two events fanned out to both endpoints as 0034 left them: one with A's outcome written
      // (its delivery) and B's call open; one with both outcomes written.
      const events: string[] = []
      for (let i = 0; i < 2; i++)
        events.push((await q(sql<{ id: string }>`SELECT write_event('ping', NULL, '{}'::jsonb) AS id`))[0]!.id)
      const [open, done] = events as [string, string]
      await sql`UPDATE webhook_fanouts SET fanned_at = now(), lease_until = now() + interval '70 seconds', direct = ARRAY[${a}, ${b}]::uuid[]`.execute(
        db,
      )
      for (const [event, endpoint] of [
        [open, a],
        [done, a],
        [done, b],
      ] as const) {
        await sql`INSERT INTO webhook_deliveries (id, endpoint_id, event_id, status, attempts, seq, delivered_at)
          VALUES (gen_random_uuid(), ${endpoint}, ${event}, 'delivered', 1, 1, now())`.execute(db)
      }

      assert.ok((await migrate(db)).includes(BATCHES))

      const lists = await q(sql<{ event_id: string; direct: string[] }>`SELECT event_id, direct FROM webhook_fanouts`)
      assert.deepEqual(
        lists.map((r) => [r.event_id, r.direct]),
        [[open, [b]]],
      )
      // Past the lease, only B's call gets its delivery, to be sent again.
      const now = new Date(Date.now() + 71_000)
      await createWebhookEndpointsRepository(db).fanOutDue({
        now,
        leaseUntil: new Date(now.getTime() + 70_000),
        bound: 16,
        busy: [],
        batch: 10,
      })
      const pending = await q(
        sql<{
          endpoint_id: string
        }>`SELECT endpoint_id FROM webhook_deliveries WHERE event_id = ${open} AND status = 'pending'`,
      )
      assert.deepEqual(
        pending.map((r) => r.endpoint_id),
        [b],
      )
    } finally {
      await close()
    }
  })
})
