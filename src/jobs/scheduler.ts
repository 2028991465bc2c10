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
// Fastify's elapsedTime stops at 'finish', so a start computed in onResponse is slightly late;
// the margin only adds passes, never loses one.
const REQUEST_START_MARGIN_MS = 100
/** Node's timers fire at once past this delay, so no wait is set longer (a pass then comes sooner). */
const MAX_TIMER_MS = 2 ** 31 - 1
/** How often a pass looks again for companies with due work: the most one backlog holds another back. */
const LANES_REFRESH_MS = 200

/**
 * Jobs over PostgreSQL: a due job is claimed FOR UPDATE SKIP LOCKED in a transaction that also runs
 * its handler and marks it done, so its effect happens once across instances and a crash leaves it
 * claimable. Companies are served in turn, so one company's backlog delays another's job by one job.
 */
export function createScheduler(deps: {
  db: Kysely<DB>
  /** The business clock: jobs fall due by it (docs/test-clock.md). */
  clock: Clock
  /** Real time, for kinds registered with `realTime`; default `clock`. */
  realClock?: Clock
  log: FastifyBaseLogger
  pollMs: number
  /** Jobs the polling loop runs at once (1 on PGlite: one database session). */
  concurrency?: number
  onFailure?: (kind: string) => void
  /** The bound on a job's statements; unset: the pool's own. */
  statementTimeoutMs?: number
}) {
  const handlers = new Map<string, JobHandler>()
  // Platform housekeeping runs by real time: a test clock's advance must neither repeat it nor run it early.
  const realKinds = new Set<string>()
  const preparers = new Map<string, JobPreparer>()
  const realClock = deps.realClock ?? deps.clock
  const businessKinds = () => [...handlers.keys()].filter((kind) => !realKinds.has(kind))
  const { runOne } = createJobRunner({ ...deps, realClock, handlers, realKinds, preparers, businessKinds })
  let timer: NodeJS.Timeout | undefined
  let timerAt = Infinity
  let running: Promise<unknown> | undefined
  let wokenWhileRunning = false
  let stopped = true
  // When this process last wrote a job row: a request that began after it may have scheduled work
  // that its commit only now made visible (wakeAfterRequest).
  let lastScheduledAt = -Infinity

  /** Schedules a job unless one with the same kind and key exists. */
  async function schedule(executor: Executor, job: NewJob): Promise<void> {
    await executor
      .insertInto('jobs')
      .values({
        kind: job.kind,
        key: job.key,
        run_at: job.runAt,
        payload: JSON.stringify(job.payload ?? {}),
        company_id: job.companyId ?? null,
      })
      .onConflict((oc) => oc.columns(['kind', 'key']).doNothing())
      .execute()
    lastScheduledAt = performance.now()
    wakeFor(job.runAt, job.kind)
  }

  async function reschedule(executor: Executor, job: NewJob): Promise<void> {
    const companyId = job.companyId ?? null
    await executor
      .insertInto('jobs')
      .values({
        kind: job.kind,
        key: job.key,
        run_at: job.runAt,
        payload: JSON.stringify(job.payload ?? {}),
        company_id: companyId,
      })
      .onConflict((oc) =>
        oc.columns(['kind', 'key']).doUpdateSet({
          run_at: job.runAt,
          payload: JSON.stringify(job.payload ?? {}),
          company_id: companyId,
          done_at: null,
          attempts: 0,
          last_error: null,
        }),
      )
      .execute()
    lastScheduledAt = performance.now()
    wakeFor(job.runAt, job.kind)
  }

  // Besides every pollMs, the poll runs when the earliest pending job falls due.
  function wakeIn(delayMs: number) {
    if (stopped) return
    delayMs = Math.min(Math.max(0, delayMs), deps.pollMs, MAX_TIMER_MS)
    const at = Date.now() + delayMs
    if (timer && at >= timerAt) return
    if (timer) clearTimeout(timer)
    timerAt = at
    // The scheduler's passes are no request's work (request-transaction.ts).
    timer = outsideRequestScope(() => setTimeout(loop, delayMs))
  }

  const clockOf = (kind: string) => (realKinds.has(kind) ? realClock : deps.clock)

  function wakeFor(runAt: Date, kind: string) {
    // A few milliseconds at least: the job's row is often not committed yet.
    wakeIn(Math.max(WAKE_MIN_MS, runAt.getTime() - clockOf(kind).now().getTime()))
  }

  async function earliestOf(kinds: string[]): Promise<Date | undefined> {
    if (kinds.length === 0) return undefined
    const row = await deps.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.min('run_at').as('at'))
      .where('done_at', 'is', null)
      .where('kind', 'in', kinds)
      .executeTakeFirst()
    return row?.at ? new Date(row.at as unknown as string | Date) : undefined
  }

  const earliestPending = () => earliestOf(businessKinds())

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
    await executor
      .deleteFrom('jobs')
      .where('kind', '=', kind)
      .where('key', '=', key)
      .where('done_at', 'is', null)
      .execute()
  }

  /**
   * Runs every job due now (tests call this after moving the clock), companies in turn through a
   * shared queue refreshed every LANES_REFRESH_MS. `workers` claim at once: a job is a dozen round
   * trips, so throughput is bound by database latency; SKIP LOCKED keeps claims apart.
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
      // Nothing ran since the last look: what is still due is locked by another instance.
      if (queue.length === 0 && !ranSinceLook) {
        finished = true
        return
      }
      const queued = new Set(queue)
      const due = await dueLanes(deps.db, businessKinds(), deps.clock.now(), {
        kinds: [...realKinds],
        now: realClock.now(),
      })
      queue = [...due.filter((lane) => !queued.has(lane)), ...queue]
      lookedAt = performance.now()
      ranSinceLook = false
      if (queue.length === 0) finished = true
    }

    async function worker() {
      while (!finished && count < limit && !halted()) {
        if (queue.length === 0 || performance.now() - lookedAt >= LANES_REFRESH_MS) {
          looking ??= look().finally(() => {
            looking = undefined
          })
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
        // Yield to I/O between jobs: on PGlite queries settle as microtasks, so a backlog would
        // otherwise keep every HTTP request unread until it is over.
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
    if (running) {
      wokenWhileRunning = true
      return
    }
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

  /** For the metrics: business jobs due and not run, and the oldest one's wait. */
  async function backlog(): Promise<{ due: number; oldestDueSeconds: number }> {
    const now = deps.clock.now()
    const row = await deps.db
      .selectFrom('jobs')
      .select((eb) => [eb.fn.countAll<number>().as('due'), eb.fn.min('run_at').as('oldest')])
      .where('done_at', 'is', null)
      .where('run_at', '<=', now)
      .executeTakeFirstOrThrow()
    const oldest = row.oldest === null ? null : new Date(row.oldest as Date)
    return {
      due: Number(row.due),
      oldestDueSeconds: oldest ? Math.max(0, (now.getTime() - oldest.getTime()) / 1000) : 0,
    }
  }

  return {
    backlog,
    /** `realTime`: due by real time (housekeeping). `prepare`: slow reads before the handler's transaction. */
    register(kind: string, handler: JobHandler, options: { realTime?: boolean; prepare?: JobPreparer } = {}) {
      handlers.set(kind, handler)
      if (options.realTime) realKinds.add(kind)
      if (options.prepare) preparers.set(kind, options.prepare)
    },
    schedule,
    reschedule,
    cancel,
    runDue,
    nextDue: earliestPending,
    wake() {
      wakeIn(WAKE_COALESCE_MS)
    },
    /**
     * After a write request commits: a pass soon if this process scheduled a job since the request
     * began, since the job's own wake-up may have run before the commit. Requests that scheduled
     * nothing wake no pass, so idle passes do not eat CPU.
     */
    wakeAfterRequest(startedAt: number) {
      if (lastScheduledAt >= startedAt - REQUEST_START_MARGIN_MS) wakeIn(WAKE_COALESCE_MS)
    },
    start() {
      if (!stopped) return
      stopped = false
      wakeIn(0)
    },
    /** Stops polling and waits for the jobs in progress; jobs still due are left to other instances. */
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
