import { it } from 'node:test'
import assert from 'node:assert/strict'
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { company } from './helpers/factories.ts'
import { postgresOnly } from './helpers/requires.ts'
import { withDatabase } from './helpers/databases.ts'
import { ANALYZE_LOCK, SLACK_PAGES, createTableStatistics } from '../src/jobs/table-statistics.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * A table's statistics taken when it was empty or small make every plan cached then (a pooled
 * connection's prepared statements, PostgreSQL's own foreign-key checks) read the whole table
 * once it has grown: with autovacuum off, or before its first pass, the webhook deliveries' checks
 * read ever more buffers and the delivery loop fell behind. The service analyzes a table that has
 * grown by a fifth (and 8 pages) since its statistics were taken, which replaces those plans
 * (docs/adr/0017-table-statistics-follow-growth.md).
 */
onEachEngine('table statistics', (t, engine) => {
  /** Grows events through the API: each holiday written writes its event. */
  async function growEvents(count: number) {
    const c = await company(t)
    for (let i = 0; i < count; i++) {
      const res = await t.call({
        method: 'POST',
        url: `/api/v1/companies/${c.id}/holidays`,
        token: c.token,
        body: { name: `Closure ${i} ${'x'.repeat(150)}`, day: '2027-03-03' },
      })
      assert.equal(res.statusCode, 202, res.body)
    }
  }

  const statsOf = async (table: string) =>
    (
      await sql<{ relpages: number; reltuples: number; pages: number }>`
    SELECT relpages, reltuples::float8 AS reltuples, (pg_relation_size(oid) / current_setting('block_size')::int)::int AS pages
    FROM pg_class WHERE oid = ${table}::regclass`.execute(t.app.database.db)
    ).rows[0]!

  /** A logger that drops every line: the keeper's own in the failure test. */
  const silentLog = {
    debug() {},
    info() {},
    warn() {},
    error() {},
    fatal() {},
    trace() {},
    child() {
      return silentLog
    },
    level: 'silent',
    silent() {},
  } as any

  const pastThreshold = (s: { relpages: number; pages: number }) => s.pages >= 1.2 * s.relpages + SLACK_PAGES

  it('analyzes a table once it has grown past its statistics, once, and leaves the others', async () => {
    const keeper = t.app.services.tableStatistics
    // What the migrations and the app's start wrote is taken in first.
    await keeper.runOnce()
    assert.deepEqual(await keeper.runOnce(), [], 'nothing grew since the last look')
    const untouched = async () => {
      const { relpages, reltuples } = await statsOf('coupons')
      return { relpages, reltuples }
    }
    const couponsBefore = await untouched()

    // A few rows: grown, but by less than the threshold's pages.
    await growEvents(5)
    const little = await statsOf('events')
    assert.ok(!pastThreshold(little), `events at ${little.pages} pages from statistics of ${little.relpages}`)
    assert.deepEqual(await keeper.runOnce(), [], 'a few rows are not worth an analysis')

    await growEvents(300)
    const grown = await statsOf('events')
    assert.ok(pastThreshold(grown), `events grew to ${grown.pages} pages from statistics of ${grown.relpages}`)
    assert.equal(grown.reltuples, little.reltuples, 'nothing analyzed events meanwhile')

    const analyzed = await keeper.runOnce()
    assert.ok(analyzed.includes('events'), `analyzed: ${analyzed.join(', ')}`)
    assert.ok(!analyzed.includes('coupons'), 'no coupon was written')
    const after = await statsOf('events')
    const count = Number(
      (await sql<{ n: string }>`SELECT count(*) AS n FROM events`.execute(t.app.database.db)).rows[0]!.n,
    )
    assert.equal(after.reltuples, count, 'the statistics count the rows')
    assert.equal(after.relpages, grown.pages)
    assert.deepEqual(await untouched(), couponsBefore, 'a table that did not grow keeps its statistics')

    assert.deepEqual(await keeper.runOnce(), [], 'analyzed once: it has not grown since')
  })

  it("keeps no statistics of the columns no query reads by: the events' payload, the batch rows' arrays (migration 0037)", async () => {
    await growEvents(3)
    await sql`ANALYZE events`.execute(t.app.database.db)
    const columns = (
      await sql<{
        attname: string
      }>`SELECT attname FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'events'`.execute(
        t.app.database.db,
      )
    ).rows
      .map((r) => r.attname)
      .sort()
    assert.ok(
      columns.includes('type') && columns.includes('company_id') && columns.includes('created_at'),
      `events' statistics: ${columns.join(', ')}`,
    )
    assert.ok(!columns.includes('data'), 'no statistics of the payload')
    const targets = (
      await sql<{ attname: string }>`
      SELECT attname FROM pg_attribute WHERE attrelid = 'webhook_delivered_batches'::regclass AND attnum > 0 AND NOT attisdropped AND attstattarget = 0`.execute(
        t.app.database.db,
      )
    ).rows
      .map((r) => r.attname)
      .sort()
    assert.deepEqual(targets, [
      'attempt_ids',
      'delivery_ids',
      'durations_ms',
      'event_ids',
      'started_ats',
      'status_codes',
    ])
  })

  it(
    'leaves a table to the instance that is analyzing, and lets the lock go after each table',
    postgresOnly(engine),
    async () => {
      const keeper = t.app.services.tableStatistics
      await keeper.runOnce()
      const before = await statsOf('events')
      await growEvents(300)
      assert.ok(pastThreshold(await statsOf('events')), 'events grew past the threshold')
      // Another instance's transaction holds the lock (PGlite has one session: PostgreSQL only).
      const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!
        .name
      const other = new pg.Client({ connectionString: withDatabase(process.env.TEST_DATABASE_URL!, name) })
      await other.connect()
      try {
        await other.query('BEGIN')
        assert.equal(
          (await other.query('SELECT pg_try_advisory_xact_lock($1) AS locked', [ANALYZE_LOCK])).rows[0].locked,
          true,
        )
        assert.deepEqual(await keeper.runOnce(), [], 'skipped while another holds the lock')
        assert.equal((await statsOf('events')).reltuples, before.reltuples)
        await other.query('COMMIT')
        assert.ok((await keeper.runOnce()).includes('events'), 'taken up once the lock is free')
        // Without waiting: a lock the keeper kept would answer false here.
        assert.equal(
          (await other.query('SELECT pg_try_advisory_lock($1) AS locked', [ANALYZE_LOCK])).rows[0].locked,
          true,
        )
        await other.query('SELECT pg_advisory_unlock($1)', [ANALYZE_LOCK])
      } finally {
        await other.end()
      }
    },
  )

  it(
    'fails a look whose analysis fails, after the other tables, and lets the lock go',
    postgresOnly(engine),
    async () => {
      await t.app.services.tableStatistics.runOnce()
      // Until both are past the threshold: each holiday row is smaller than its event's.
      for (
        let i = 0;
        i < 20 && !(pastThreshold(await statsOf('events')) && pastThreshold(await statsOf('holidays')));
        i++
      )
        await growEvents(100)
      const events = await statsOf('events')
      const holidays = await statsOf('holidays')
      assert.ok(
        pastThreshold(events) && pastThreshold(holidays),
        'events and holidays (after it) grew past the threshold',
      )
      // A keeper of this test's own, on connections that give up a lock wait after 200 ms.
      const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!
        .name
      const url = withDatabase(process.env.TEST_DATABASE_URL!, name)
      const db = new Kysely<any>({
        dialect: new PostgresDialect({
          pool: new pg.Pool({ connectionString: url, options: '-c lock_timeout=200ms' }),
        }),
      })
      const keeper = createTableStatistics({ db, log: silentLog })
      const other = new pg.Client({ connectionString: url })
      await other.connect()
      try {
        // What an ANALYZE of events must wait for: another's ANALYZE, VACUUM or schema change.
        await other.query('BEGIN')
        await other.query('LOCK TABLE events IN SHARE UPDATE EXCLUSIVE MODE')
        await assert.rejects(keeper.runOnce(), /lock timeout/)
        await other.query('COMMIT')
        assert.equal((await statsOf('events')).reltuples, events.reltuples, 'events was not analyzed')
        assert.notEqual((await statsOf('holidays')).relpages, holidays.relpages, 'holidays, after it, was')
        assert.equal(
          (await other.query('SELECT pg_try_advisory_lock($1) AS locked', [ANALYZE_LOCK])).rows[0].locked,
          true,
          'the failed table let the lock go',
        )
        await other.query('SELECT pg_advisory_unlock($1)', [ANALYZE_LOCK])
        assert.deepEqual(await keeper.runOnce(), ['events'], 'analyzed at the next look')
      } finally {
        await other.end()
        await db.destroy()
      }
    },
  )
})
