import { sql, type Kysely, type Transaction } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import { outsideRequestScope } from '../db/request-transaction.ts'
import { withStatementTimeout } from '../db/database.ts'

/** How often the tables' sizes are compared with their statistics. */
const CHECK_EVERY_MS = 1000
/** After a look that failed, the next waits twice as long as the last, up to this. */
const MAX_BACKOFF_MS = 60_000
/** A table is analyzed once it has more pages than this share of those its statistics counted... */
const GROWTH = 1.2
/** ...plus these (64 kB): a small table is not analyzed for every page it gains. */
export const SLACK_PAGES = 8
/** Taken, without waiting, by the transaction that analyzes a table: another instance's look skips the table meanwhile. */
export const ANALYZE_LOCK = 7_420_190_019

/**
 * Keeps the statistics of the service's tables in step with their growth, as autovacuum's
 * analyze would, without depending on it: autovacuum may be off (it is off on the machines the
 * tests and the bench run on), and on a new database it first looks a minute after the start.
 *
 * Why it matters: a plan is chosen for the table's size when it is made, and a plan that a
 * connection caches (the pool's prepared statements past their fifth run, PostgreSQL's own
 * foreign-key checks) is kept until the table's statistics change. Made while the webhook
 * deliveries were a few pages, the foreign-key check of each new attempt read the whole table
 * once it had grown (164 buffers a check, against 4), and the claim of due deliveries 108,000
 * buffers a pass: under 1,000 changes a second the delivery loop fell 50 s behind and
 * PostgreSQL's CPU per change went from 1.4 to 6.7 ms (bench/findings.md, "Session of
 * 2026-11-28: stale statistics"). An ANALYZE replaces the statistics, and with them every cached
 * plan that read them.
 *
 * The size is the table's file, read without a scan; the size the statistics know is
 * pg_class.relpages, which ANALYZE and VACUUM set. Only growth is looked for: churn without growth
 * is autovacuum's. Only the tables this role may analyze (it owns them when it ran the
 * migrations): on another's, ANALYZE would only warn, every second. Each table is analyzed in a
 * transaction of its own under an advisory lock taken without waiting, so two instances do not
 * analyze it twice, and the commit (or the connection's end) always lets the lock go. ANALYZE
 * blocks no read or write; only another ANALYZE, a VACUUM or a schema change of the same table
 * waits, for the table's sample (30,000 rows at most).
 */
export function createTableStatistics(deps: {
  db: Kysely<any>
  log: FastifyBaseLogger
  /** The bound on an ANALYZE (the jobs' bound: a large table's sample outlasts a request's); unset: the pool's. */
  statementTimeoutMs?: number
}) {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<string[]> | undefined
  let stopped = true
  let waitMs = CHECK_EVERY_MS

  /** The tables of the service's schema grown past their statistics (`only`: that one, if it still is). */
  async function grown(db: Kysely<any> | Transaction<any>, only?: string): Promise<Array<{ schema: string; name: string }>> {
    const { rows } = await sql<{ schema: string; name: string }>`
      SELECT n.nspname AS schema, c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind = 'r' AND pg_has_role(c.relowner, 'USAGE')
        AND pg_relation_size(c.oid) / current_setting('block_size')::int >= ${GROWTH}::float8 * c.relpages + ${SLACK_PAGES}::int
        ${only === undefined ? sql`` : sql`AND c.relname = ${only}`}
      ORDER BY c.relname`.execute(db)
    return rows
  }

  /**
   * Analyzes the tables grown past their statistics, but those another instance is analyzing;
   * answers their names. A table whose analysis fails does not keep the others from theirs: the
   * look fails after them, with the first error.
   */
  async function check(): Promise<string[]> {
    const analyzed: string[] = []
    let failure: unknown
    for (const { schema, name } of await grown(deps.db)) {
      const done = await deps.db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${ANALYZE_LOCK}::bigint) AS locked`.execute(trx)
        // Another instance analyzes a table now; this one looks again in a second. Under the
        // lock, the table is looked at again: the other may have just analyzed it.
        if (!rows[0]?.locked || (await grown(trx, name)).length === 0) return false
        if (deps.statementTimeoutMs !== undefined) await sql`SELECT set_config('statement_timeout', ${String(deps.statementTimeoutMs)}, true)`.execute(trx)
        await sql`ANALYZE ${sql.id(schema, name)}`.execute(trx)
        return true
      }).catch((err: unknown) => { failure ??= err; return false })
      if (done) analyzed.push(name)
    }
    if (analyzed.length > 0) deps.log.debug({ tables: analyzed }, 'tables analyzed: they had outgrown their statistics')
    if (failure !== undefined) throw failure
    return analyzed
  }

  /** One look now, outside any request's transaction; answers the tables it analyzed. */
  function runOnce(): Promise<string[]> {
    const bounded = () => (deps.statementTimeoutMs === undefined ? check() : withStatementTimeout(deps.statementTimeoutMs, check))
    running ??= outsideRequestScope(bounded).finally(() => { running = undefined })
    return running
  }

  function loop() {
    timer = undefined
    if (stopped) return
    void runOnce()
      .then(() => { waitMs = CHECK_EVERY_MS }, (err: unknown) => {
        // A failure that lasts (a statement timeout shorter than a big table's sample) is logged
        // and tried again less and less often, not every second.
        waitMs = Math.min(MAX_BACKOFF_MS, waitMs * 2)
        deps.log.warn({ err, retry_in_ms: waitMs }, 'table statistics not refreshed')
      })
      .finally(() => { if (!stopped) timer = outsideRequestScope(() => setTimeout(loop, waitMs)) })
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
