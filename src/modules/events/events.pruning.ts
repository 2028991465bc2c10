import type { Clock } from '../../core/clock.ts'
import type { Executor } from '../../db/executor.ts'
import type { JobContext, Scheduler } from '../../jobs/scheduler.ts'
import type { EventsRepository } from './events.repository.ts'

export const PRUNE_JOB = 'events.prune'
const EVERY_MS = 3_600_000
/**
 * Events one run deletes at most (with their deliveries and attempts), and rows of each other kind it keeps; more left:
 * another run a minute later.
 */
const BATCH = 20_000

/** Deletes up to `batch` rows dated before `cutoff` in the job's transaction; answers how many. */
export type Pruner = (executor: Executor, cutoff: Date, batch: number) => Promise<number>

/**
 * Hourly retention: events older than EVENTS_RETENTION_DAYS go, with their deliveries and attempts.
 * One job per hour's key, so instances agree on one run. By real time: a test clock must not prune the log.
 */
export function createEventPruning(deps: {
  repo: EventsRepository
  alsoPrune?: readonly Pruner[]
  scheduler: Pick<Scheduler, 'schedule' | 'register'>
  /** Real time (the events are dated by it). */
  clock: Clock
  retentionDays: number
}) {
  async function scheduleAt(executor: Executor, at: Date) {
    await deps.scheduler.schedule(executor, { kind: PRUNE_JOB, key: at.toISOString(), runAt: at })
  }
  const nextHour = (now: Date) => new Date(Math.floor(now.getTime() / EVERY_MS) * EVERY_MS + EVERY_MS)

  deps.scheduler.register(
    PRUNE_JOB,
    async (ctx: JobContext) => {
      const cutoff = new Date(ctx.now.getTime() - deps.retentionDays * 86_400_000)
      let deleted = await deps.repo.prune(ctx.trx, cutoff, BATCH)
      for (const prune of deps.alsoPrune ?? []) deleted = Math.max(deleted, await prune(ctx.trx, cutoff, BATCH))
      await scheduleAt(ctx.trx, deleted >= BATCH ? new Date(ctx.now.getTime() + 60_000) : nextHour(ctx.now))
    },
    { realTime: true },
  )

  return {
    /** At start: the next hour's run, unless another instance scheduled it already. */
    start: (executor: Executor) => scheduleAt(executor, nextHour(deps.clock.now())),
  }
}
