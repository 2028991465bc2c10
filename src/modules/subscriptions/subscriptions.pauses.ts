import type { Clock } from '../../core/clock.ts'
import { Conflict, ValidationError } from '../../core/errors.ts'
import { transitions, unixSeconds } from '../billing/index.ts'
import type { SubscriptionPause } from './subscriptions.schemas.ts'
import type { createRemoteChanges } from './subscriptions.remote-changes.ts'
import type { createSubscriptionJobs } from './subscriptions.jobs.ts'
import type { SubscriptionSteps } from './subscriptions.steps.ts'

/**
 * What waits for a term's end or stops time: removing a scheduled change, pausing and resuming.
 * Checked against the lifecycle here whatever the provider; the local engine bills a resumption.
 */
export function createSubscriptionPauses(deps: {
  clock: Clock
  steps: Pick<SubscriptionSteps, 'save'>
  remote: Pick<ReturnType<typeof createRemoteChanges>, 'remoteChange'>
  jobs: Pick<ReturnType<typeof createSubscriptionJobs>, 'resume' | 'scheduleResume'>
}) {
  const { clock, jobs } = deps
  const { save } = deps.steps
  const { remoteChange } = deps.remote

  return {
    async removeScheduledChanges(companyId: string, actor: string) {
      const event = 'scheduled_changes_removed'
      await remoteChange(
        companyId,
        undefined,
        async (trx, s, provider, applied) => {
          const refusal = transitions.removalOfChangesRefusal(s)
          if (refusal) throw new Conflict(refusal)
          const now = clock.now()
          const next = await provider.removeScheduledChanges(s, now)
          applied()
          await save(trx, s, next, { event, actor, at: now })
        },
        async (trx, s, provider) => {
          await save(
            trx,
            s,
            { ...(await provider.retrieve(s)), scheduled_change: null },
            { event, actor, at: clock.now() },
          )
        },
      )
    },

    /** A resume date comes after the pause starts: now, or the term's end. */
    async pause(companyId: string, body: SubscriptionPause, actor: string) {
      const option = body.pause_option
      const resumeDate = body.resume_date === undefined ? null : new Date(body.resume_date * 1000)
      await remoteChange(
        companyId,
        undefined,
        async (trx, s, provider, applied) => {
          const refusal = transitions.pauseRefusal(s)
          if (refusal) throw new Conflict(refusal)
          const now = clock.now()
          const starts = option === 'immediately' ? now : s.current_term_end!
          if (resumeDate && resumeDate.getTime() <= starts.getTime()) {
            throw new ValidationError(
              `body/resume_date must come after the pause starts (${unixSeconds(starts)}, ` +
                `${option === 'immediately' ? 'now' : "the term's end"})`,
            )
          }
          const next = await provider.pause(s, { option, resumeDate }, now)
          applied()
          const event = next.status === 'paused' ? 'paused' : 'pause_scheduled'
          await save(trx, s, next, { event, actor, at: now })
          if (provider.drivesTime && next.status === 'paused' && next.resume_date) await jobs.scheduleResume(trx, next)
        },
        async (trx, s, provider) => {
          const next = await provider.retrieve(s)
          const event = next.status === 'paused' ? 'paused' : 'pause_scheduled'
          await save(trx, s, next, { event, actor, at: clock.now() })
        },
      )
    },

    async resume(companyId: string, actor: string) {
      await remoteChange(
        companyId,
        undefined,
        async (trx, s, _provider, applied) => {
          const refusal = transitions.resumeRefusal(s)
          if (refusal) throw new Conflict(refusal)
          await jobs.resume(trx, s, clock.now(), actor, applied)
        },
        async (trx, s, provider) => {
          await save(trx, s, await provider.retrieve(s), { event: 'resumed', actor, at: clock.now() })
        },
      )
    },
  }
}
