import { sql, type Kysely } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import { outsideRequestScope } from './request-transaction.ts'

/** How often the tables' sizes are compared with their statistics. */
const CHECK_EVERY_MS = 1000
/** A table is analyzed once it has more pages than this share of those its statistics counted... */
const GROWTH = 1.2
/** ...plus these (64 kB): a small table is not analyzed for every page it gains. */
const SLACK_PAGES = 8
/** Taken, without waiting, by the instance that analyzes: the others skip that look (a session lock: it ends with its connection). */
export const ANALYZE_LOCK = 7_420_190_019

/**
 * Keeps the statistics of the service's tables in step with their growth, as autovacuum's
 * analyze would, without depending on it: it may be off (it is on the machines the tests and the
 * bench run on), and on a new database it first looks a minute after the start.
 *
 * Why it matters: a plan is chosen for the table's size when it is made, and a plan that a
 * connection caches (the pool's prepared statements past their fifth run, PostgreSQL's own
 * foreign-key checks) is kept until the table's statistics change. Made while the webhook
 * deliveries were a few pages, the foreign-key check of each new attempt read the whole table
 * once it had grown (164 pages a check, against 4), and the claim of due deliveries 108,000
 * pages a pass: under 1,000 changes a second the delivery loop fell 50 s behind and PostgreSQL's
 * CPU per change went from 1.4 to 6.7 ms (bench/findings.md, "Stale statistics"). An ANALYZE
 * replaces the statistics, and with them every cached plan that read them.
 *
 * The size is the table's file, read without a scan; the statistics' size is pg_class.relpages,
 * which ANALYZE and VACUUM set. Only growth is looked for: a table that shrinks keeps its file,
 * and churn without growth is autovacuum's. One instance analyzes at a time (an advisory lock
 * taken without waiting); ANALYZE blocks no read or write, only another ANALYZE, a VACUUM or a
 * schema change of the same table, for the table's sample (30,000 rows at most) only.
 */
export function createTableStatistics(deps: { db: Kysely<any>; log: FastifyBaseLogger }) {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<string[]> | undefined
  let stopped = true

  /** The tables of the service's schema grown past their statistics. */
  async function grown(): Promise<string[]> {
    const { rows } = await sql<{ name: string }>`
      SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
        AND pg_relation_size(c.oid) / current_setting('block_size')::int >= ${GROWTH}::float8 * greatest(c.relpages, 0) + ${SLACK_PAGES}::int
      ORDER BY c.relname`.execute(deps.db)
    return rows.map((r) => r.name)
  }

  /**
   * Analyzes the tables grown past their statistics (none while another instance does); answers
   * their names. One statement per table, each its own transaction: each table's statistics, and
   * the plans they replace, change as soon as it is analyzed, and its lock is held that long only.
   */
  async function check(): Promise<string[]> {
    const tables = await grown()
    if (tables.length === 0) return []
    return deps.db.connection().execute(async (conn) => {
      const { rows } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${ANALYZE_LOCK}::bigint) AS locked`.execute(conn)
      if (!rows[0]?.locked) return []
      try {
        for (const table of tables) await sql`ANALYZE ${sql.table(table)}`.execute(conn)
      } finally {
        await sql`SELECT pg_advisory_unlock(${ANALYZE_LOCK}::bigint)`.execute(conn)
      }
      return tables
    })
  }

  function runOnce(): Promise<string[]> {
    running ??= check().finally(() => { running = undefined })
    return running
  }

  function loop() {
    timer = undefined
    if (stopped) return
    void runOnce()
      .catch((err: unknown) => deps.log.warn({ err }, 'table statistics not refreshed'))
      .finally(() => { if (!stopped) timer = outsideRequestScope(() => setTimeout(loop, CHECK_EVERY_MS)) })
  }

  return {
    /** Starts the periodic look (with the scheduler: SCHEDULER_ENABLED). */
    start() {
      if (!stopped) return
      stopped = false
      timer = outsideRequestScope(() => setTimeout(loop, CHECK_EVERY_MS))
    },
    /** Stops looking; a look under way ends. */
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      timer = undefined
      await running?.catch(() => undefined)
    },
    /** One look now: the tables it analyzed (tests; the loop does this by itself). */
    runOnce,
  }
}

export type TableStatistics = ReturnType<typeof createTableStatistics>
