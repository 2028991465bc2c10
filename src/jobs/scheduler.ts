import type { Kysely } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import type { DB } from '../db/tables.ts'
import { outsideRequestScope } from '../db/request-transaction.ts'
import type { Clock } from '../core/clock.ts'
import type { Executor, JobHandler, JobPreparer, Lane, NewJob } from './job.ts'
import { dueLanes } from './due-lanes.ts'
import { createJobRunner } from './job-runner.ts'

export type { Executor, JobContext, JobHandler, JobPreparer, NewJob } from './job.ts'

const WAKE_MIN_MS = 5
const WAKE_COALESCE_MS = 25
/**
 * A request's start is measured back from its end: Fastify's elapsedTime stops at the answer's
 * 'finish', so the start computed in onResponse is late by the time from 'finish' to the hook
 * (microseconds). The margin covers that many times over; it only adds passes, never loses one.
 */
const REQUEST_START_MARGIN_MS = 100
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
  /** The bound on a job's statements (DATABASE_JOB_STATEMENT_TIMEOUT_MS); unset: the pool's own. */
  statementTimeoutMs?: number
}) {
  const handlers = new Map<string, JobHandler>()
  // Kinds due by real time, not by the business clock: the platform's own housekeeping (the
  // idempotency keys' purge), which a test clock's advance must neither run hourly through a
  // year nor run early. Platform jobs only (no company), so the companies' claims stay as they are.
  const realKinds = new Set<string>()
  const preparers = new Map<string, JobPreparer>()
  const realClock = deps.realClock ?? deps.clock
  const businessKinds = () => [...handlers.keys()].filter((kind) => !realKinds.has(kind))
  const { runOne } = createJobRunner({ ...deps, realClock, handlers, realKinds, preparers, businessKinds })
  let timer: NodeJS.Timeout | undefined
  // When the timer fires (ms since the epoch): a wake-up asked for later than that changes nothing.
  let timerAt = Infinity
  let running: Promise<unknown> | undefined
  // A wake-up that came while a pass was running: another pass follows at once.
  let wokenWhileRunning = false
  let stopped = true
  // When this process last wrote a job row (performance.now()): a request that began after it may
  // have scheduled work that its commit has only now made visible (wakeAfterRequest).
  let lastScheduledAt = -Infinity

  /** Schedules a job unless one with the same kind and key exists (idempotent). */
  async function schedule(executor: Executor, job: NewJob): Promise<void> {
    await executor.insertInto('jobs')
      .values({ kind: job.kind, key: job.key, run_at: job.runAt, payload: JSON.stringify(job.payload ?? {}), company_id: job.companyId ?? null })
      .onConflict((oc) => oc.columns(['kind', 'key']).doNothing())
      .execute()
    lastScheduledAt = performance.now()
    wakeFor(job.runAt, job.kind)
  }

  /** Moves a pending job to another time, or creates it. */
  async function reschedule(executor: Executor, job: NewJob): Promise<void> {
    const companyId = job.companyId ?? null
    await executor.insertInto('jobs')
      .values({ kind: job.kind, key: job.key, run_at: job.runAt, payload: JSON.stringify(job.payload ?? {}), company_id: companyId })
      .onConflict((oc) => oc.columns(['kind', 'key']).doUpdateSet({ run_at: job.runAt, payload: JSON.stringify(job.payload ?? {}), company_id: companyId, done_at: null, attempts: 0, last_error: null }))
      .execute()
    lastScheduledAt = performance.now()
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
   * Runs every job due now (tests call this after moving the clock), companies in turn: a queue
   * of the companies with due work; each claim takes the company at its head and puts it at the
   * back, and a company with no job free leaves the queue. The queue is looked up again when it
   * empties and every LANES_REFRESH_MS: a company that was not in it (new due work) joins at the
   * head, so it comes before every company served since.
   *
   * `halted` tells the workers to claim no more (the polling loop's stop()).
   * `workers` claims run at once (the polling loop's SCHEDULER_CONCURRENCY; 1 for the tests'
   * explicit passes, which then run in a set order). One job is a transaction of a dozen round
   * trips, so one worker is bounded by the database's latency, not by CPU: a backlog of webhook
   * deliveries, when they were jobs, went at 20 a second with one on a loaded machine
   * (bench/findings.md, events). The
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
      const due = await dueLanes(deps.db, businessKinds(), deps.clock.now(), { kinds: [...realKinds], now: realClock.now() })
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
     * `realTime`: due by real time, never moved by a test clock (the platform's housekeeping).
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
    /** A pass soon (within WAKE_COALESCE_MS): the business clock moved. */
    wake() { wakeIn(WAKE_COALESCE_MS) },
    /**
     * After a write request's answer (its work committed): a pass soon if this process scheduled
     * a job since the request began (`startedAt`, performance.now()), since the job's own wake-up
     * may have run before the commit made it visible. Within WAKE_COALESCE_MS, so that a stream
     * of such writes makes a pass every few dozen milliseconds, not one per write. A request that
     * scheduled nothing (most writes, every token) wakes no pass: in a mix of writes over 1,000
     * companies, these passes and the delivery loop's found nothing and cost ~9 % of the server's
     * CPU (bench/findings.md). A concurrent request's job may wake a pass for one that scheduled
     * nothing; never the reverse.
     */
    wakeAfterRequest(startedAt: number) { if (lastScheduledAt >= startedAt - REQUEST_START_MARGIN_MS) wakeIn(WAKE_COALESCE_MS) },
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
