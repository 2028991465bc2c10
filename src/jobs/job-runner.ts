import { sql, type Kysely, type Transaction } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import type { DB } from '../db/tables.ts'
import { outsideRequestScope } from '../db/request-transaction.ts'
import { ANNOUNCE_SETTING, withStatementTimeout } from '../db/database.ts'
import type { Clock } from '../core/clock.ts'
import type { JobHandler, JobPreparer, Lane } from './job.ts'

const MAX_BACKOFF_MS = 15 * 60_000
/**
 * The lease of a job that prepares outside a transaction: a claimer that dies leaves it due again
 * after this; a preparing kind must bear running twice (it re-reads its rows under their lock).
 */
const PREPARE_LEASE_MS = 10 * 60_000

/** Claims and runs one job: the claim, the handler with its completion in one transaction, the failure's backoff. */
export function createJobRunner(deps: {
  db: Kysely<DB>
  clock: Clock
  realClock: Clock
  log: FastifyBaseLogger
  onFailure?: (kind: string) => void
  handlers: ReadonlyMap<string, JobHandler>
  realKinds: ReadonlySet<string>
  preparers: ReadonlyMap<string, JobPreparer>
  businessKinds: () => string[]
  /** Longer than a request's: a sweep deletes thousands of rows. */
  statementTimeoutMs?: number
}) {
  const { handlers, realKinds, preparers, businessKinds, realClock } = deps

  type JobRow = Awaited<ReturnType<typeof claimDue>> & {}

  /** The oldest due job of one company (null: the platform) that no one else holds. */
  function claimDue(trx: Transaction<DB>, lane: Lane, now: Date, realNow: Date) {
    const kinds = businessKinds()
    let claim = trx.selectFrom('jobs').selectAll().where('done_at', 'is', null)
    claim = (lane === null ? claim.where('company_id', 'is', null) : claim.where('company_id', '=', lane)).where((eb) =>
      eb.or([
        eb.and([eb('run_at', '<=', now), eb('kind', '=', eb.fn.any(eb.val(kinds)))]),
        eb.and([eb('run_at', '<=', realNow), eb('kind', '=', eb.fn.any(eb.val([...realKinds])))]),
      ]),
    )
    return claim.orderBy('run_at').orderBy('id').limit(1).forUpdate().skipLocked().executeTakeFirst()
  }

  /** Retried after a backoff that doubles with its attempts. */
  async function recordFailure(trx: Transaction<DB>, job: JobRow, at: Date, err: unknown) {
    const attempts = job.attempts + 1
    const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(attempts, 20))
    await trx
      .updateTable('jobs')
      .set({ attempts, last_error: (err as Error).message.slice(0, 2000), run_at: new Date(at.getTime() + backoff) })
      .where('id', '=', job.id)
      .execute()
    deps.log.error({ err, job: { kind: job.kind, key: job.key } }, 'job failed')
    deps.onFailure?.(job.kind)
  }

  async function runHandler(trx: Transaction<DB>, job: JobRow, now: Date, prepared: unknown): Promise<void> {
    // The job's changes to cached reads are announced by the tables' triggers in its transaction. The
    // jobs' statement bound is set on the server too: the connection keeps the pool's.
    const bound =
      deps.statementTimeoutMs === undefined
        ? sql``
        : sql`, set_config('statement_timeout', ${String(deps.statementTimeoutMs)}, true)`
    await sql`SELECT set_config(${ANNOUNCE_SETTING}, 'in_transaction', true)${bound}`.execute(trx)
    try {
      await sql`SAVEPOINT job`.execute(trx)
      await handlers.get(job.kind)!({
        trx,
        runAt: job.run_at,
        now,
        payload: job.payload as Record<string, unknown>,
        key: job.key,
        prepared,
      })
      await trx
        .updateTable('jobs')
        .set({ done_at: now, attempts: job.attempts + 1, last_error: null })
        .where('id', '=', job.id)
        .execute()
    } catch (err) {
      await sql`ROLLBACK TO SAVEPOINT job`.execute(trx)
      await recordFailure(trx, job, now, err)
    }
  }

  /**
   * Runs the oldest due job of one company; false when none is free. A kind with `prepare` is leased
   * (committed), prepared with no transaction open, then run in its own transaction.
   */
  function runOne(lane: Lane): Promise<boolean> {
    return deps.statementTimeoutMs === undefined
      ? runOneBounded(lane)
      : withStatementTimeout(deps.statementTimeoutMs, () => runOneBounded(lane))
  }

  async function runOneBounded(lane: Lane): Promise<boolean> {
    const now = deps.clock.now()
    const realNow = realClock.now()
    const nowOf = (kind: string) => (realKinds.has(kind) ? realNow : now)
    const claimed = await deps.db.transaction().execute((trx) =>
      claimDue(trx, lane, now, realNow).then(async (job) => {
        if (!job) return undefined
        if (preparers.has(job.kind)) {
          await trx
            .updateTable('jobs')
            .set({ run_at: new Date(nowOf(job.kind).getTime() + PREPARE_LEASE_MS) })
            .where('id', '=', job.id)
            .execute()
        } else {
          await runHandler(trx, job, nowOf(job.kind), undefined)
        }
        return job
      }),
    )
    if (!claimed) return false
    const prepare = preparers.get(claimed.kind)
    if (prepare) await runPrepared(claimed, prepare, nowOf(claimed.kind))
    return true
  }

  async function runPrepared(leased: JobRow, prepare: JobPreparer, now: Date): Promise<void> {
    let prepared: unknown
    try {
      prepared = await outsideRequestScope(() =>
        prepare({ payload: leased.payload as Record<string, unknown>, key: leased.key }),
      )
    } catch (err) {
      await deps.db.transaction().execute((trx) => recordFailure(trx, leased, now, err))
      return
    }
    await deps.db.transaction().execute(async (trx) => {
      // Cancelled meanwhile, or run by another instance after the lease ran out.
      const job = await trx
        .selectFrom('jobs')
        .selectAll()
        .where('id', '=', leased.id)
        .where('done_at', 'is', null)
        .forUpdate()
        .executeTakeFirst()
      if (job) await runHandler(trx, job, now, prepared)
    })
  }

  return { runOne }
}
