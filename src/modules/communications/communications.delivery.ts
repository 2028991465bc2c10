import type { Transaction } from 'kysely'
import type { ChangeLogEntry, DB } from '../../db/tables.ts'
import type { Executor, JobContext, Scheduler } from '../../jobs/scheduler.ts'
import type { CommunicationsRepository } from './communications.repository.ts'
import { nextOccurrence } from './communications.recurrence.ts'

export const DELIVERY_JOB = 'communication.delivery'

export const SCHEDULER_ACTOR = 'scheduler'

const jobKey = (communicationId: string, at: Date) => `${communicationId}:${at.toISOString()}`

/**
 * One scheduler job per occurrence, run in the claiming transaction, so the messages, the
 * occurrence record, the new status and the next occurrence's job commit together with the job.
 * The occurrence record stops a second run.
 */
export function createCommunicationDelivery(deps: {
  repo: CommunicationsRepository
  scheduler: Pick<Scheduler, 'reschedule'>
}) {
  const { repo } = deps

  /** At once if `at` is past. */
  async function schedule(executor: Executor, companyId: string, communicationId: string, at: Date) {
    // reschedule, not schedule: a job of the same key that ran while stale must run again.
    await deps.scheduler.reschedule(executor, {
      kind: DELIVERY_JOB,
      key: jobKey(communicationId, at),
      runAt: at,
      companyId,
      payload: { company_id: companyId, communication_id: communicationId, send_at: at.toISOString() },
    })
  }

  return {
    schedule,

    /** Under the communication's lock; a job being run right now finds itself stale and does nothing. */
    async cancel(trx: Transaction<DB>, communicationId: string, at: Date) {
      await repo.cancelPendingJob(trx, DELIVERY_JOB, jobKey(communicationId, at))
    },

    async deliverOccurrence(ctx: JobContext) {
      const { trx, now } = ctx
      const companyId = String(ctx.payload.company_id)
      const communicationId = String(ctx.payload.communication_id)
      const sendAt = new Date(String(ctx.payload.send_at))
      const comm = await repo.findForUpdate(trx, companyId, communicationId)
      if (!comm || (comm.status !== 'scheduled' && comm.status !== 'active')) return
      if (comm.next_send_at?.getTime() !== sendAt.getTime() || comm.next_index === null) return
      if (
        !(await repo.recordOccurrence(trx, {
          company_id: companyId,
          communication_id: communicationId,
          send_at: sendAt,
          delivered_at: now,
        }))
      )
        return
      await repo.insertMessages(trx, {
        companyId,
        communicationId,
        sendAt,
        now,
        teamIds: comm.destination_team_ids,
        subsidiaryIds: comm.destination_subsidiary_ids,
      })
      const timeZone = (await repo.companyTimezone(companyId, trx)) ?? 'UTC'
      const next = nextOccurrence(comm, comm.next_index, timeZone)
      const status = next ? 'active' : 'submitted'
      const entry: ChangeLogEntry = {
        at: now.toISOString(),
        by: SCHEDULER_ACTOR,
        action: 'delivered',
        changes: status === comm.status ? {} : { status: [comm.status, status] },
        occurrence: sendAt.toISOString(),
      }
      await repo.update(trx, companyId, communicationId, {
        status,
        change_log: JSON.stringify([...comm.change_log, entry]),
        next_send_at: next?.at ?? null,
        next_index: next?.index ?? null,
        updated_at: now,
      })
      if (next) await schedule(trx, companyId, communicationId, next.at)
    },
  }
}

export type CommunicationDelivery = ReturnType<typeof createCommunicationDelivery>
