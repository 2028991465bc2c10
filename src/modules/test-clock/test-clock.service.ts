import type { BusinessClock } from './business-clock.ts'
import type { TestClockRepository } from './test-clock.repository.ts'
import type { Scheduler } from '../../jobs/scheduler.ts'
import { Conflict, ServiceUnavailable, ValidationError } from '../../core/errors.ts'
import type { TestClock } from './test-clock.schemas.ts'

/**
 * An advance stops after this many steps (one per distinct due time): a job that keeps failing, or a runaway series.
 */
const MAX_STEPS = 10_000
/** How far one advance may go: beyond, a series would take longer than anyone waits for an answer. */
const MAX_YEARS = 10
/**
 * How long due jobs held by another instance (their transactions running) are waited for, with none run here meanwhile.
 */
const HELD_WAIT_MS = 60_000

/**
 * Moves every instance's business clock forward in steps, one per due time, so each job runs with
 * its own due time as "now" and the jobs it makes run in turn; answers once all due jobs have run.
 */
export function createTestClockService(deps: {
  repo: TestClockRepository
  clock: BusinessClock
  scheduler: Pick<Scheduler, 'runDue' | 'nextDue'>
}) {
  const { repo, clock, scheduler } = deps

  function view(): TestClock {
    const state = clock.state()
    return {
      object: 'test_clock',
      now: clock.now().toISOString(),
      offset_seconds: Math.floor(state.offset_ms / 1000),
      status: state.status,
      advancing_to: state.advancing_to ? new Date(state.advancing_to).toISOString() : null,
    }
  }

  function refuseBackwards(to: Date) {
    const now = clock.now()
    if (to.getTime() < now.getTime()) {
      throw new ValidationError(
        `body/to must not be before the business time now (${now.toISOString()}): the test clock only moves forward`,
      )
    }
  }

  return {
    get: view,

    async advance(toText: string): Promise<TestClock> {
      const to = new Date(toText)
      if (Number.isNaN(to.getTime())) throw new ValidationError('body/to must be an ISO 8601 date-time')
      refuseBackwards(to)
      const limit = new Date(clock.now())
      limit.setUTCFullYear(limit.getUTCFullYear() + MAX_YEARS)
      if (to > limit)
        throw new ValidationError(
          `body/to must be at most ${MAX_YEARS} years after the business time now (${limit.toISOString()} at the ` +
            `latest)`,
        )

      const claimed = await repo.claim(to)
      if (!claimed) {
        const busy = clock.state().advancing_to
        throw new Conflict(
          `The test clock is already advancing${busy ? ` (to ${new Date(busy).toISOString()})` : ''}; ` +
            'advance again once GET /api/v1/test_clock shows status "ready"',
        )
      }
      clock.apply(claimed)
      try {
        // Another advance may have ended between the check above and the claim.
        refuseBackwards(to)
        /** Moves every instance's clock to `target` (never back), and beats the heart of this advance. */
        const stepTo = async (target: Date) => {
          const offset = Math.max(clock.offsetMs(), target.getTime() - (clock.now().getTime() - clock.offsetMs()))
          if (!(await repo.step(offset, to)))
            throw new Conflict(
              'The advance was taken over by another instance (this one had stopped stepping for 2 minutes)',
            )
          clock.apply({ offset_ms: offset })
        }
        /** Runs every job due now, waiting for those another instance holds. */
        const drain = async () => {
          let deadline = performance.now() + HELD_WAIT_MS
          for (;;) {
            // A long backlog is progress, not a wait: the deadline counts from the last job run here.
            if ((await scheduler.runDue()) > 0) deadline = performance.now() + HELD_WAIT_MS
            const next = await scheduler.nextDue()
            if (!next || next.getTime() > clock.now().getTime()) return
            if (performance.now() > deadline)
              throw new ServiceUnavailable(
                `Jobs due at ${next.toISOString()} are held by another instance; the test clock stopped at ` +
                  `${clock.now().toISOString()}`,
              )
            await stepTo(clock.now())
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
        }
        for (let steps = 0; ; steps++) {
          await drain()
          const next = await scheduler.nextDue()
          if (!next || next.getTime() > to.getTime()) break
          if (steps >= MAX_STEPS) {
            throw new Conflict(
              `The advance stopped at ${clock.now().toISOString()} after ${MAX_STEPS} steps (a job that keeps ` +
                `failing, or too many due times); advance again to go on`,
            )
          }
          await stepTo(next)
        }
        await stepTo(to)
        await drain()
      } finally {
        await repo.release(to)
        clock.apply({ status: 'ready', advancing_to: null })
      }
      return view()
    },
  }
}

export type TestClockService = ReturnType<typeof createTestClockService>
