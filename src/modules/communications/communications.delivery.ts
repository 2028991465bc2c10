import type { Transaction } from 'kysely'
import type { ChangeLogEntry, DB } from '../../db/tables.ts'
import type { Executor, JobContext, Scheduler } from '../../jobs/scheduler.ts'
import type { CommunicationsRepository } from './communications.repository.ts'
import { nextOccurrence } from './communications.recurrence.ts'

export const DELIVERY_JOB = 'communication.delivery'

/** Who the change log names for what the server does by itself. */
export const SCHEDULER_ACTOR = 'scheduler'

const jobKey = (communicationId: string, at: Date) => `${communicationId}:${at.toISOString()}`

/**
 * Delivery of occurrences through the scheduler: one job per occurrence. The job runs in the
 * transaction that claimed it (FOR UPDATE SKIP LOCKED), so the messages, the occurrence record,
 * the communication's new status and the job of the next occurrence commit together with the
 * job's completion, or not at all: a process that dies mid-delivery leaves the job to be claimed
 * again, and two instances never both deliver it. The occurrence record stops a second run
 * (recordOccurrence finds it); the messages' unique key would fail one rather than let a
 * recipient have the occurrence twice.
 */
export function createCommunicationDelivery(deps: {
  repo: CommunicationsRepository
  scheduler: Pick<Scheduler, 'reschedule'>
}) {
  const { repo } = deps

  /** Makes `at` the pending occurrence: its job runs when due (at once if `at` is past). */
  async function schedule(executor: Executor, companyId: string, communicationId: string, at: Date) {
    // reschedule, not schedule: a job of the same key that already ran while stale must run again.
    await deps.scheduler.reschedule(executor, {
      kind: DELIVERY_JOB, key: jobKey(communicationId, at), runAt: at, companyId,
      payload: { company_id: companyId, communication_id: communicationId, send_at: at.toISOString() },
    })
  }

  return {
    schedule,

    /**
     * Drops the job of an occurrence no longer pending, in the transaction that changed the
     * communication (under its lock, so no concurrent change can want it back meanwhile). A job
     * left behind (being run right now) finds itself stale and does nothing.
     */
    async cancel(trx: Transaction<DB>, communicationId: string, at: Date) {
      await repo.cancelPendingJob(trx, DELIVERY_JOB, jobKey(communicationId, at))
    },

    /** The job handler: delivers the occurrence the job names, if it is still the pending one. */
    async deliverOccurrence(ctx: JobContext) {
      const { trx, now } = ctx
      const companyId = String(ctx.payload.company_id)
      const communicationId = String(ctx.payload.communication_id)
      const sendAt = new Date(String(ctx.payload.send_at))
      const comm = await repo.findForUpdate(trx, companyId, communicationId)
      // Changed since this job was scheduled (rescheduled, back to draft, discontinued): nothing to do.
      if (!comm || (comm.status !== 'scheduled' && comm.status !== 'active')) return
      if (comm.next_send_at?.getTime() !== sendAt.getTime() || comm.next_index === null) return
      if (!(await repo.recordOccurrence(trx, { company_id: companyId, communication_id: communicationId, send_at: sendAt, delivered_at: now }))) return
      await repo.insertMessages(trx, {
        companyId, communicationId, sendAt, now,
        teamIds: comm.destination_team_ids, subsidiaryIds: comm.destination_subsidiary_ids,
      })
      const timeZone = (await repo.companyTimezone(companyId, trx)) ?? 'UTC'
      const next = nextOccurrence(comm, comm.next_index, timeZone)
      const status = next ? 'active' : 'submitted'
      const entry: ChangeLogEntry = {
        at: now.toISOString(), by: SCHEDULER_ACTOR, action: 'delivered',
        changes: status === comm.status ? {} : { status: [comm.status, status] },
        occurrence: sendAt.toISOString(),
      }
      await repo.update(trx, companyId, communicationId, {
        status, change_log: JSON.stringify([...comm.change_log, entry]),
        next_send_at: next?.at ?? null, next_index: next?.index ?? null, updated_at: now,
      })
      if (next) await schedule(trx, companyId, communicationId, next.at)
    },
  }
}

export type CommunicationDelivery = ReturnType<typeof createCommunicationDelivery>
