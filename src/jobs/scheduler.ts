import { sql, type Kysely, type Transaction } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import type { DB } from '../db/tables.ts'
import { outsideRequestScope } from '../db/request-transaction.ts'
import { ANNOUNCE_SETTING } from '../db/database.ts'
import type { Clock } from '../clock.ts'

export type Executor = Kysely<DB> | Transaction<DB>

export interface JobContext {
  /** The transaction the job runs in: its writes commit together with the job's completion. */
  trx: Transaction<DB>
  /** When the job was due (not when it runs). */
  runAt: Date
  now: Date
  payload: Record<string, unknown>
  key: string
  /**
   * Runs `work` once the job's transaction has committed, outside it and outside the pass: for
   * what must not hold a transaction or delay the next job (an HTTP call to a webhook receiver).
   * Dropped if the job fails. Its outcome is the work's own to record.
   */
  afterCommit(work: () => Promise<unknown>): void
  /**
   * Runs `undo` if the job's writes do not commit (the handler threw, or the commit failed): to
   * give back what the handler took in this process's memory for its afterCommit work.
   */
  onAbort(undo: () => void): void
  /** What the kind's `prepare` returned (registered with one), read before this transaction began. */
  prepared?: unknown
}

export type JobHandler = (ctx: JobContext) => Promise<void>

/**
 * Slow reads a job needs before it writes (a provider's API): run after the claim, outside any
 * transaction, so that they hold no connection and no lock; the handler then gets their result.
 * Thrown errors fail the job as the handler's do (retried with backoff).
 */
export type JobPreparer = (job: { payload: Record<string, unknown>; key: string }) => Promise<unknown>

export interface NewJob {
  kind: string
  key: string
  runAt: Date
  payload?: Record<string, unknown>
  /** The company whose work it is; left out for the platform's own work. Companies are served in turn. */
  companyId?: string | null
}

/** Who a job is for: a company's id, or null for the platform's own work. */
type Lane = string | null

const MAX_BACKOFF_MS = 15 * 60_000
/**
 * How long a job whose kind prepares outside a transaction is taken by its claimer: a process that
 * dies during the reads leaves it due again after this; one whose reads outlast it may see the job
 * run twice, which a preparing kind must bear (it re-reads its rows under their lock).
 */
const PREPARE_LEASE_MS = 10 * 60_000
const WAKE_MIN_MS = 5
const WAKE_COALESCE_MS = 25
/** Node's timers hold 2^31-1 ms at most (24.8 days); a longer delay fires at once with a TimeoutOverflowWarning. */
const MAX_TIMER_MS = 2 ** 31 - 1
/**
 * How often a pass looks again for the companies with due work. A company whose job falls due
 * during a long pass (another company's backlog) joins the rotation at the next look: this,
 * plus one job of each company ahead of it, is how long one company's work can hold it back.
 */
const LANES_REFRESH_MS = 200

/**
 * Jobs over PostgreSQL. A due job is claimed with FOR UPDATE SKIP LOCKED inside a transaction
 * that also runs its handler and marks it done: the handler's writes and the completion commit
 * together, so a job's effect happens once even with several instances, and a process that dies
 * mid-job leaves it to be claimed again (its transaction rolls back, its row lock is released).
 *
 * Companies are served in turn: a pass takes one due job of each company with due work (the
 * company with the oldest due job first), then goes round again, so a company's backlog of a
 * thousand due jobs delays another company's one due job by one job, not a thousand. Several
 * instances each run their own rotation over the same rows; SKIP LOCKED keeps them apart.
 */
export function createScheduler(deps: {
  db: Kysely<DB>
  /** The business clock: jobs fall due by it, so a test clock's advance makes them due (docs/test-clock.md). */
  clock: Clock
  /** Real time, for the kinds registered with `realTime` (the platform's housekeeping); default `clock`. */
  realClock?: Clock
  log: FastifyBaseLogger
  pollMs: number
  /** Jobs the polling loop runs at once (SCHEDULER_CONCURRENCY; 1 on PGlite, one database session). */
  concurrency?: number
  /** Told the kind of each failed job (the metrics count failures by kind). */
  onFailure?: (kind: string) => void
}) {
  const handlers = new Map<string, JobHandler>()
  // Kinds due by real time, not by the business clock: the platform's own housekeeping (the
  // idempotency keys' purge), which a test clock's advance must neither run hourly through a
  // year nor run early. Platform jobs only (no company), so the companies' claims stay as they are.
  const realKinds = new Set<string>()
  const preparers = new Map<string, JobPreparer>()
  const realClock = deps.realClock ?? deps.clock
  const businessKinds = () => [...handlers.keys()].filter((kind) => !realKinds.has(kind))
  let timer: NodeJS.Timeout | undefined
  // When the timer fires (ms since the epoch): a wake-up asked for later than that changes nothing.
  let timerAt = Infinity
  let running: Promise<unknown> | undefined
  // A wake-up that came while a pass was running: another pass follows at once.
  let wokenWhileRunning = false
  let stopped = true

  /** Schedules a job unless one with the same kind and key exists (idempotent). */
  async function schedule(executor: Executor, job: NewJob): Promise<void> {
    await executor.insertInto('jobs')
      .values({ kind: job.kind, key: job.key, run_at: job.runAt, payload: JSON.stringify(job.payload ?? {}), company_id: job.companyId ?? null })
      .onConflict((oc) => oc.columns(['kind', 'key']).doNothing())
      .execute()
    wakeFor(job.runAt, job.kind)
  }

  /** Moves a pending job to another time, or creates it. */
  async function reschedule(executor: Executor, job: NewJob): Promise<void> {
    const companyId = job.companyId ?? null
    await executor.insertInto('jobs')
      .values({ kind: job.kind, key: job.key, run_at: job.runAt, payload: JSON.stringify(job.payload ?? {}), company_id: companyId })
      .onConflict((oc) => oc.columns(['kind', 'key']).doUpdateSet({ run_at: job.runAt, payload: JSON.stringify(job.payload ?? {}), company_id: companyId, done_at: null, attempts: 0, last_error: null }))
      .execute()
    wakeFor(job.runAt, job.kind)
  }

  /**
   * The poll runs again in `delayMs` unless it is already due sooner. Besides every pollMs, it
   * runs when the earliest pending job falls due (learned after each pass, and from the jobs this
   * instance schedules), so a job waits for its time, not for the next poll.
   */
  function wakeIn(delayMs: number) {
    if (stopped) return
    // Never later than the next poll (a pass then finds what is due anyway), and never past what
    // a Node timer holds: a monthly job's delay (2.6e9 ms) overflowed it.
    delayMs = Math.min(Math.max(0, delayMs), deps.pollMs, MAX_TIMER_MS)
    const at = Date.now() + delayMs
    if (timer && at >= timerAt) return
    if (timer) clearTimeout(timer)
    timerAt = at
    // Outside any request's scope: the scheduler's passes are no request's work (request-transaction.ts).
    timer = outsideRequestScope(() => setTimeout(loop, delayMs))
  }


  const clockOf = (kind: string) => (realKinds.has(kind) ? realClock : deps.clock)

  function wakeFor(runAt: Date, kind: string) {
    // A few milliseconds at least: the job's row is often in a transaction that has yet to commit.
    wakeIn(Math.max(WAKE_MIN_MS, runAt.getTime() - clockOf(kind).now().getTime()))
  }

  /** When the earliest pending job of `kinds` falls due, if any. */
  async function earliestOf(kinds: string[]): Promise<Date | undefined> {
    if (kinds.length === 0) return undefined
    const row = await deps.db.selectFrom('jobs').select((eb) => eb.fn.min('run_at').as('at'))
      .where('done_at', 'is', null).where('kind', 'in', kinds)
      .executeTakeFirst()
    return row?.at ? new Date(row.at as unknown as string | Date) : undefined
  }

  /** When the earliest pending business job of this instance's kinds falls due, if any (real-time kinds left out). */
  const earliestPending = () => earliestOf(businessKinds())

  /** How long until a pending job of this instance's kinds falls due (ms, each kind by its clock), if any. */
  async function nextWakeIn(): Promise<number | undefined> {
    const business = await earliestPending()
    const real = realKinds.size > 0 ? await earliestOf([...realKinds]) : undefined
    const delays = [
      ...(business ? [business.getTime() - deps.clock.now().getTime()] : []),
      ...(real ? [real.getTime() - realClock.now().getTime()] : []),
    ]
    return delays.length > 0 ? Math.min(...delays) : undefined
  }

  async function cancel(executor: Executor, kind: string, key: string): Promise<void> {
    await executor.deleteFrom('jobs').where('kind', '=', kind).where('key', '=', key).where('done_at', 'is', null).execute()
  }

  /**
   * The companies (null: the platform) with a job of `kinds` due at `now`, the one whose oldest
   * due job is oldest first. A loose index scan over jobs_company_due_idx (0009_fair_jobs.sql):
   * each step jumps to the next company with a due job, so one company's due backlog costs one
   * probe, not one row per job (EXPLAIN in docs/architecture.md). A company whose pending jobs
   * all lie in the future is still walked entry by entry (the index cannot skip past it on
   * run_at): the cost grows with the pending jobs of companies with no due work, a job or two
   * each today (a renewal, a series' next occurrence). A table of each company's next due time
   * would bound it by the companies with due work, if scale ever asks for it.
   */
  async function dueLanes(kinds: string[], now: Date, real: { kinds: string[]; now: Date }): Promise<Lane[]> {
    const { rows } = await sql<{ company_id: string | null; run_at: Date | string }>`
      WITH RECURSIVE lanes AS (
        (SELECT company_id, run_at FROM jobs
         WHERE done_at IS NULL AND company_id IS NOT NULL
           AND ((run_at <= ${now} AND kind = ANY(${kinds}::text[])) OR (run_at <= ${real.now} AND kind = ANY(${real.kinds}::text[])))
         ORDER BY company_id, run_at LIMIT 1)
        UNION ALL
        SELECT next.company_id, next.run_at FROM lanes CROSS JOIN LATERAL (
          SELECT company_id, run_at FROM jobs
          WHERE done_at IS NULL AND company_id > lanes.company_id
            AND ((run_at <= ${now} AND kind = ANY(${kinds}::text[])) OR (run_at <= ${real.now} AND kind = ANY(${real.kinds}::text[])))
          ORDER BY company_id, run_at LIMIT 1) next
      )
      SELECT company_id, run_at FROM lanes
      UNION ALL
      (SELECT company_id, run_at FROM jobs
       WHERE done_at IS NULL AND company_id IS NULL
         AND ((run_at <= ${now} AND kind = ANY(${kinds}::text[])) OR (run_at <= ${real.now} AND kind = ANY(${real.kinds}::text[])))
       ORDER BY run_at LIMIT 1)`.execute(deps.db)
    return rows
      .map((r) => ({ lane: r.company_id, at: new Date(r.run_at).getTime() }))
      .sort((x, y) => x.at - y.at)
      .map((r) => r.lane)
  }

  type JobRow = Awaited<ReturnType<typeof claimDue>> & {}

  /** Locks the oldest due job of one company (null: of the platform) that no one else holds. */
  function claimDue(trx: Transaction<DB>, lane: Lane, now: Date, realNow: Date) {
    const kinds = businessKinds()
    let claim = trx.selectFrom('jobs').selectAll().where('done_at', 'is', null)
    // A job of a real-time kind is due by real time (realKinds), in the platform's lane or a company's.
    claim = (lane === null ? claim.where('company_id', 'is', null) : claim.where('company_id', '=', lane)).where((eb) => eb.or([
      eb.and([eb('run_at', '<=', now), eb('kind', '=', eb.fn.any(eb.val(kinds)))]),
      eb.and([eb('run_at', '<=', realNow), eb('kind', '=', eb.fn.any(eb.val([...realKinds])))]),
    ]))
    return claim.orderBy('run_at').orderBy('id').limit(1).forUpdate().skipLocked().executeTakeFirst()
  }

  /** A failed job: tried again after a backoff that doubles with its attempts. */
  async function recordFailure(trx: Transaction<DB>, job: JobRow, at: Date, err: unknown) {
    const attempts = job.attempts + 1
    const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(attempts, 20))
    await trx.updateTable('jobs')
      .set({ attempts, last_error: (err as Error).message.slice(0, 2000), run_at: new Date(at.getTime() + backoff) })
      .where('id', '=', job.id).execute()
    deps.log.error({ err, job: { kind: job.kind, key: job.key } }, 'job failed')
    deps.onFailure?.(job.kind)
  }

  /** What a handler asked to run once its transaction commits, and to undo if it does not. */
  interface Hooks { after: (() => Promise<unknown>)[]; abort: (() => void)[] }
  const abort = (hooks: Hooks) => { for (const undo of hooks.abort.splice(0)) undo(); hooks.after = [] }

  /** Runs a claimed job's handler in `trx` and marks it done, or records its failure. */
  async function runHandler(trx: Transaction<DB>, job: JobRow, now: Date, prepared: unknown, hooks: Hooks): Promise<void> {
    // A job's changes to cached reads are announced by the tables' triggers, in its transaction
    // (migration 0008): no request answers for them, and no code here knows which company they touch.
    await sql`SELECT set_config(${ANNOUNCE_SETTING}, 'in_transaction', true)`.execute(trx)
    try {
      await sql`SAVEPOINT job`.execute(trx)
      await handlers.get(job.kind)!({ trx, runAt: job.run_at, now, payload: job.payload as Record<string, unknown>, key: job.key, prepared, afterCommit: (work) => { hooks.after.push(work) }, onAbort: (undo) => { hooks.abort.push(undo) } })
      await trx.updateTable('jobs').set({ done_at: now, attempts: job.attempts + 1, last_error: null }).where('id', '=', job.id).execute()
    } catch (err) {
      abort(hooks)
      await sql`ROLLBACK TO SAVEPOINT job`.execute(trx)
      await recordFailure(trx, job, now, err)
    }
  }

  /**
   * Runs the oldest due job of one company (null: of the platform); false when none is free. A
   * kind with a `prepare` is claimed by a lease (its run_at moved PREPARE_LEASE_MS ahead, committed),
   * prepared with no transaction open, then run in a transaction of its own that locks it again.
   */
  async function runOne(lane: Lane): Promise<boolean> {
    const now = deps.clock.now()
    const realNow = realClock.now()
    const nowOf = (kind: string) => (realKinds.has(kind) ? realNow : now)
    const hooks: Hooks = { after: [], abort: [] }
    const claimed = await committed(hooks, (trx) => claimDue(trx, lane, now, realNow).then(async (job) => {
      if (!job) return undefined
      if (preparers.has(job.kind)) {
        await trx.updateTable('jobs').set({ run_at: new Date(nowOf(job.kind).getTime() + PREPARE_LEASE_MS) }).where('id', '=', job.id).execute()
      } else {
        await runHandler(trx, job, nowOf(job.kind), undefined, hooks)
      }
      return job
    }))
    if (!claimed) return false
    const prepare = preparers.get(claimed.kind)
    if (prepare) await runPrepared(claimed, prepare, nowOf(claimed.kind), hooks)
    for (const work of hooks.after) {
      outsideRequestScope(() => work()).catch((err: unknown) => deps.log.error({ err }, 'work after a job failed'))
    }
    return true
  }

  /** `work` in a transaction; the handler's undos run if it does not commit. */
  async function committed<T>(hooks: Hooks, work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    try {
      return await deps.db.transaction().execute(work)
    } catch (err) {
      abort(hooks)
      throw err
    }
  }

  async function runPrepared(leased: JobRow, prepare: JobPreparer, now: Date, hooks: Hooks): Promise<void> {
    let prepared: unknown
    try {
      prepared = await outsideRequestScope(() => prepare({ payload: leased.payload as Record<string, unknown>, key: leased.key }))
    } catch (err) {
      await deps.db.transaction().execute((trx) => recordFailure(trx, leased, now, err))
      return
    }
    await committed(hooks, async (trx) => {
      // Cancelled meanwhile, or run by another instance after the lease ran out: nothing to do.
      const job = await trx.selectFrom('jobs').selectAll().where('id', '=', leased.id).where('done_at', 'is', null).forUpdate().executeTakeFirst()
      if (job) await runHandler(trx, job, now, prepared, hooks)
    })
  }

  /**
   * Runs every job due now (tests call this after moving the clock), companies in turn: a queue
   * of the companies with due work; each claim takes the company at its head and puts it at the
   * back, and a company with no job free leaves the queue. The queue is looked up again when it
   * empties and every LANES_REFRESH_MS: a company that was not in it (new due work) joins at the
   * head, so it comes before every company served since.
   *
   * `halted` tells the workers to claim no more (the polling loop's stop()).
   * `workers` claims run at once (the polling loop's SCHEDULER_CONCURRENCY; 1 for the tests'
   * explicit passes, which then run in a set order). One job is a transaction of a dozen round
   * trips, so one worker is bounded by the database's latency, not by CPU: a webhook backlog on a
   * loaded machine went at 20 deliveries a second with one (bench/findings.md, events). The
   * workers share the queue, so one company's backlog is served by all of them when it is the
   * only work, and SKIP LOCKED keeps their claims apart as it keeps instances'.
   */
  async function runDue(limit = 10_000, workers = 1, halted: () => boolean = () => false): Promise<number> {
    if (handlers.size === 0) return 0
    let count = 0
    let queue: Lane[] = []
    let lookedAt = -Infinity
    let ranSinceLook = true
    let finished = false
    let looking: Promise<void> | undefined

    async function look() {
      // Nothing ran since the last look: what is left due is another instance's (locked).
      if (queue.length === 0 && !ranSinceLook) { finished = true; return }
      const queued = new Set(queue)
      const due = await dueLanes(businessKinds(), deps.clock.now(), { kinds: [...realKinds], now: realClock.now() })
      queue = [...due.filter((lane) => !queued.has(lane)), ...queue]
      lookedAt = performance.now()
      ranSinceLook = false
      if (queue.length === 0) finished = true
    }

    async function worker() {
      // Once halted (stop()), a worker claims nothing more: its job in flight finishes, the rest stay due.
      while (!finished && count < limit && !halted()) {
        if (queue.length === 0 || performance.now() - lookedAt >= LANES_REFRESH_MS) {
          looking ??= look().finally(() => { looking = undefined })
          await looking
          continue
        }
        const lane = queue.shift()!
        queue.push(lane)
        if (await runOne(lane)) {
          count++
          ranSinceLook = true
        } else {
          queue = queue.filter((l) => l !== lane)
        }
        // Let the event loop read sockets between jobs. On PGlite a query is WebAssembly in this
        // process whose promises settle as microtasks, so back-to-back jobs never yielded to I/O:
        // a backlog kept every HTTP request unread until it was over (another company's POST,
        // 5.3 s behind 90 deliveries, in the reliability suite's scenario 13).
        await new Promise((resolve) => setImmediate(resolve))
      }
    }

    await Promise.all(Array.from({ length: Math.max(1, workers) }, worker))
    return count
  }

  function loop() {
    timer = undefined
    timerAt = Infinity
    if (stopped) return
    if (running) { wokenWhileRunning = true; return }
    let next = deps.pollMs
    running = (async () => {
      await runDue(1000, deps.concurrency ?? 1, () => stopped)
      if (stopped) return
      const dueIn = await nextWakeIn()
      if (dueIn !== undefined) next = Math.min(deps.pollMs, Math.max(0, dueIn))
    })()
      .catch((err) => deps.log.warn({ err }, 'scheduler poll failed'))
      .finally(() => {
        running = undefined
        wakeIn(wokenWhileRunning ? 0 : next)
        wokenWhileRunning = false
      })
  }

  /** For the metrics: the jobs due by the business clock and not run yet, and the oldest one's wait. */
  async function backlog(): Promise<{ due: number; oldestDueSeconds: number }> {
    const now = deps.clock.now()
    const row = await deps.db.selectFrom('jobs')
      .select((eb) => [eb.fn.countAll<number>().as('due'), eb.fn.min('run_at').as('oldest')])
      .where('done_at', 'is', null).where('run_at', '<=', now)
      .executeTakeFirstOrThrow()
    const oldest = row.oldest === null ? null : new Date(row.oldest as Date)
    return { due: Number(row.due), oldestDueSeconds: oldest ? Math.max(0, (now.getTime() - oldest.getTime()) / 1000) : 0 }
  }

  return {
    backlog,
    /**
     * `realTime`: due by real time, never moved by a test clock (housekeeping, webhook deliveries).
     * `prepare`: slow reads run before the handler's transaction (JobPreparer).
     */
    register(kind: string, handler: JobHandler, options: { realTime?: boolean; prepare?: JobPreparer } = {}) {
      handlers.set(kind, handler)
      if (options.realTime) realKinds.add(kind)
      if (options.prepare) preparers.set(kind, options.prepare)
    },
    schedule,
    reschedule,
    cancel,
    runDue,
    /** When the earliest pending business job falls due, if any (the test clock's advance steps to it). */
    nextDue: earliestPending,
    /**
     * A pass soon: the business clock moved, or work was just written by another path than
     * schedule() (a trigger's webhook deliveries). Within WAKE_COALESCE_MS, so that a stream of
     * writes makes a pass every few dozen milliseconds, not one per write.
     */
    wake() { wakeIn(WAKE_COALESCE_MS) },
    start() {
      if (!stopped) return
      stopped = false
      wakeIn(0)
    },
    /**
     * Stops polling and waits for the jobs in progress to finish: each worker claims no other job
     * once stop() is called, so the jobs still due are left to the next instance, not run here.
     */
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      timer = undefined
      timerAt = Infinity
      await running
    },
  }
}

export type Scheduler = ReturnType<typeof createScheduler>
