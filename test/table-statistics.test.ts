import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { buildTestApp, engines, type TestApp } from './helpers/app.ts'
import { company } from './helpers/factories.ts'
import { postgresOnly } from './helpers/requires.ts'
import { withDatabase } from './helpers/databases.ts'
import pg from 'pg'
import { ANALYZE_LOCK } from '../src/db/table-statistics.ts'

/**
 * A table's statistics taken when it was empty or small make every plan cached then (a pooled
 * connection's prepared statements, PostgreSQL's own foreign-key checks) read the whole table
 * once it has grown: with autovacuum off, or before its first pass, the webhook deliveries' checks
 * grew to 164 pages read each and the delivery loop fell 50 s behind (bench/findings.md, "Stale
 * statistics"). The service analyzes a table that has grown by a fifth (and 8 pages) since its
 * statistics were taken, which invalidates those plans.
 */
for (const engine of engines) {
  describe(`table statistics on ${engine}`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(engine) })
    after(async () => { await t?.close() })

    /** Grows events through the API: each holiday written writes its event. */
    async function growEvents(count: number) {
      const c = await company(t)
      for (let i = 0; i < count; i++) {
        const res = await t.call({ method: 'POST', url: `/api/v1/companies/${c.id}/holidays`, token: c.token, body: { name: `Closure ${i} ${'x'.repeat(150)}`, day: '2027-03-03' } })
        assert.equal(res.statusCode, 202, res.body)
      }
    }

    const statsOf = async (table: string) => (await sql<{ relpages: number; reltuples: number; pages: number }>`
      SELECT relpages, reltuples::float8 AS reltuples, (pg_relation_size(oid) / current_setting('block_size')::int)::int AS pages
      FROM pg_class WHERE oid = ${table}::regclass`.execute(t.app.database.db)).rows[0]!

    it('analyzes a table that grew past its statistics, once, and leaves the others', async () => {
      const keeper = t.app.services.tableStatistics
      // What the migrations and the app's start wrote is taken in first.
      await keeper.runOnce()
      assert.deepEqual(await keeper.runOnce(), [], 'nothing grew since the last look')
      const before = await statsOf('events')

      await growEvents(300)
      const grown = await statsOf('events')
      assert.ok(grown.pages >= 1.2 * Math.max(before.relpages, 0) + 8, `events grew to ${grown.pages} pages from statistics of ${before.relpages}`)
      assert.equal(grown.reltuples, before.reltuples, 'nothing analyzed events meanwhile')

      const analyzed = await keeper.runOnce()
      assert.ok(analyzed.includes('events'), `analyzed: ${analyzed.join(', ')}`)
      const after = await statsOf('events')
      const count = Number((await sql<{ n: string }>`SELECT count(*) AS n FROM events`.execute(t.app.database.db)).rows[0]!.n)
      assert.equal(after.reltuples, count, 'the statistics count the rows')
      assert.equal(after.relpages, grown.pages)

      assert.deepEqual(await keeper.runOnce(), [], 'analyzed once: it has not grown since')
    })

    it('leaves the analysis to the instance that is already doing it', postgresOnly(engine), async () => {
      const keeper = t.app.services.tableStatistics
      await keeper.runOnce()
      const before = await statsOf('events')
      await growEvents(300)
      // Another instance's session holds the lock (PGlite has one session: PostgreSQL only).
      const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!.name
      const other = new pg.Client({ connectionString: withDatabase(process.env.TEST_DATABASE_URL!, name) })
      await other.connect()
      try {
        await other.query('SELECT pg_advisory_lock($1)', [ANALYZE_LOCK])
        assert.deepEqual(await keeper.runOnce(), [], 'skipped while another holds the lock')
        assert.equal((await statsOf('events')).reltuples, before.reltuples)
        await other.query('SELECT pg_advisory_unlock($1)', [ANALYZE_LOCK])
        assert.ok((await keeper.runOnce()).includes('events'), 'taken up once the lock is free')
      } finally {
        await other.end()
      }
    })
  })
}
