import { sql, type Kysely, type Transaction } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import { outsideRequestScope } from '../db/request-transaction.ts'
import { withStatementTimeout } from '../db/database.ts'

const CHECK_EVERY_MS = 1000
const MAX_BACKOFF_MS = 60_000
/** A table is analyzed past this share of the pages its statistics counted... */
const GROWTH = 1.2
/** ...plus these, so a small table is not analyzed for every page it gains. */
export const SLACK_PAGES = 8
/** Advisory lock of an analyzing transaction: other instances skip the table meanwhile. */
export const ANALYZE_LOCK = 7_420_190_019

/**
 * Keeps table statistics in step with growth without relying on autovacuum: cached plans keep the
 * plan made for a table's old size until its statistics change. Each ANALYZE runs under a
 * non-waiting advisory lock, so instances do not repeat it; it blocks no read or write.
 */
export function createTableStatistics(deps: {
  db: Kysely<any>
  log: FastifyBaseLogger
  /** The bound on an ANALYZE (a large table's sample outlasts a request's); unset: the pool's. */
  statementTimeoutMs?: number
}) {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<string[]> | undefined
  let stopped = true
  let waitMs = CHECK_EVERY_MS

  async function grown(
    db: Kysely<any> | Transaction<any>,
    only?: string,
  ): Promise<Array<{ schema: string; name: string }>> {
    const { rows } = await sql<{ schema: string; name: string }>`
      SELECT n.nspname AS schema, c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind = 'r' AND pg_has_role(c.relowner, 'USAGE')
        AND pg_relation_size(c.oid) / current_setting('block_size')::int
          >= ${GROWTH}::float8 * c.relpages + ${SLACK_PAGES}::int
        ${only === undefined ? sql`` : sql`AND c.relname = ${only}`}
      ORDER BY c.relname`.execute(db)
    return rows
  }

  // A table whose analysis fails does not stop the others; the look then fails with the first error.
  async function check(): Promise<string[]> {
    const analyzed: string[] = []
    let failure: unknown
    for (const { schema, name } of await grown(deps.db)) {
      const done = await deps.db
        .transaction()
        .execute(async (trx) => {
          const { rows } = await sql<{
            locked: boolean
          }>`SELECT pg_try_advisory_xact_lock(${ANALYZE_LOCK}::bigint) AS locked`.execute(trx)
          // Another instance is analyzing it; under the lock, look again: it may have just been analyzed.
          if (!rows[0]?.locked || (await grown(trx, name)).length === 0) return false
          if (deps.statementTimeoutMs !== undefined)
            await sql`SELECT set_config('statement_timeout', ${String(deps.statementTimeoutMs)}, true)`.execute(trx)
          await sql`ANALYZE ${sql.id(schema, name)}`.execute(trx)
          return true
        })
        .catch((err: unknown) => {
          failure ??= err
          return false
        })
      if (done) analyzed.push(name)
    }
    if (analyzed.length > 0) deps.log.debug({ tables: analyzed }, 'tables analyzed: they had outgrown their statistics')
    if (failure !== undefined) throw failure
    return analyzed
  }

  function runOnce(): Promise<string[]> {
    const bounded = () =>
      deps.statementTimeoutMs === undefined ? check() : withStatementTimeout(deps.statementTimeoutMs, check)
    running ??= outsideRequestScope(bounded).finally(() => {
      running = undefined
    })
    return running
  }

  function loop() {
    timer = undefined
    if (stopped) return
    void runOnce()
      .then(
        () => {
          waitMs = CHECK_EVERY_MS
        },
        (err: unknown) => {
          // A lasting failure is retried less and less often.
          waitMs = Math.min(MAX_BACKOFF_MS, waitMs * 2)
          deps.log.warn({ err, retry_in_ms: waitMs }, 'table statistics not refreshed')
        },
      )
      .finally(() => {
        if (!stopped) timer = outsideRequestScope(() => setTimeout(loop, waitMs))
      })
  }

  return {
    start() {
      if (!stopped) return
      stopped = false
      timer = outsideRequestScope(() => setTimeout(loop, CHECK_EVERY_MS))
    },
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      timer = undefined
      await running?.catch(() => undefined)
    },
    runOnce,
  }
}

export type TableStatistics = ReturnType<typeof createTableStatistics>
