import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../../core/clock.ts'
import type { Executor, JobContext, Scheduler } from '../../jobs/scheduler.ts'
import type { ProviderLedger, CopyOutcome } from './chargebee-ledger.service.ts'
import { MissingAtChargebee, type ChargebeeReconcileReader } from './chargebee.reconcile-reader.ts'
import { chargebeeState, saveChargebeeState } from './chargebee.state.ts'
import { changesBetween, type SubscriptionsService } from '../subscriptions/index.ts'
import type { ChargebeeWebhooksRepository } from './chargebee-webhooks.repository.ts'

type ChargebeeSide = Awaited<ReturnType<ChargebeeReconcileReader['subscription']>> & {
  invoices: Awaited<ReturnType<ChargebeeReconcileReader['invoices']>>
  creditNotes: Awaited<ReturnType<ChargebeeReconcileReader['creditNotes']>>
}

export const RECONCILE_JOB = 'chargebee.reconcile'
export const RECONCILE_SUBSCRIPTION_JOB = 'chargebee.reconcile_subscription'

export type DriftKind = 'subscription' | 'invoice' | 'credit_note' | 'missing_subscription'
export type DriftObserver = (kind: DriftKind) => void

/**
 * Chargebee is the truth and webhooks can be lost: a periodic job reads each subscription with no
 * transaction open, then applies differences under the row's lock (a newer webhook wins). An unknown
 * subscription is reported, never cancelled: a wrong key must not end every customer's service.
 */
export function createChargebeeReconciliation(deps: {
  scheduler: Pick<Scheduler, 'schedule' | 'reschedule' | 'register'>
  clock: Clock
  intervalSeconds: number
  reader: ChargebeeReconcileReader
  subscriptions: Pick<
    SubscriptionsService,
    'lockForProvider' | 'heldByProvider' | 'planExists' | 'recordProviderChange'
  >
  webhooksRepo: Pick<ChargebeeWebhooksRepository, 'advanceVersion' | 'appliedVersion'>
  ledger: ProviderLedger
  log: FastifyBaseLogger
  onDrift: DriftObserver
}) {
  const everyMs = deps.intervalSeconds * 1000
  const nextSlot = (now: Date) => new Date(Math.floor(now.getTime() / everyMs) * everyMs + everyMs)
  const scheduleRun = (executor: Executor, at: Date) =>
    deps.scheduler.schedule(executor, { kind: RECONCILE_JOB, key: at.toISOString(), runAt: at })

  type Payload = { company_id: string; subscription_id: string }

  /** null when Chargebee does not know it. */
  async function readChargebee({ payload }: { payload: Record<string, unknown> }): Promise<ChargebeeSide | null> {
    const { subscription_id: subscriptionId } = payload as Payload
    let remote: Awaited<ReturnType<ChargebeeReconcileReader['subscription']>>
    try {
      remote = await deps.reader.subscription(subscriptionId)
    } catch (err) {
      if (err instanceof MissingAtChargebee) return null
      throw err
    }
    return {
      ...remote,
      invoices: await deps.reader.invoices(subscriptionId),
      creditNotes: await deps.reader.creditNotes(subscriptionId),
    }
  }

  async function reconcileSubscription(ctx: JobContext) {
    const { company_id: companyId, subscription_id: subscriptionId } = ctx.payload as Payload
    const remote = ctx.prepared as ChargebeeSide | null
    const before = await deps.subscriptions.lockForProvider(ctx.trx, companyId)
    if (!before || before.id !== subscriptionId || before.provider !== 'chargebee') return
    const where = { company_id: companyId, subscription_id: subscriptionId }
    if (remote === null) {
      deps.onDrift('missing_subscription')
      deps.log.warn(
        { reconciliation: { ...where, drift: 'missing_subscription' } },
        'chargebee reconciliation: Chargebee does not know this subscription; left as it is',
      )
      return
    }
    const version = remote.subscription.resource_version
    const known = Number.isSafeInteger(version)
    // Under the row's lock: a webhook that applied a newer state since the read is not undone.
    const overtaken =
      known && ((await deps.webhooksRepo.appliedVersion(ctx.trx, subscriptionId)) ?? -1n) > BigInt(version!)
    if (known && !overtaken) await deps.webhooksRepo.advanceVersion(ctx.trx, subscriptionId, BigInt(version!), ctx.now)
    const after = chargebeeState(before, remote.subscription, remote.card)
    const drifted = overtaken ? [] : Object.keys(changesBetween(before, after))
    if (drifted.length > 0) {
      await saveChargebeeState(ctx.trx, deps.subscriptions, before, after, {
        event: 'reconciled',
        at: ctx.now,
        now: ctx.now,
        details: { reconciled: { fields: drifted } },
      })
      deps.onDrift('subscription')
      deps.log.warn(
        { reconciliation: { ...where, drift: 'subscription', fields: drifted } },
        'chargebee reconciliation corrected the subscription',
      )
    }
    const owner = { companyId, subscriptionId }
    const report = (kind: 'invoice' | 'credit_note', chargebeeId: string, outcome: CopyOutcome) => {
      if (outcome !== 'applied') return
      deps.onDrift(kind)
      deps.log.warn(
        { reconciliation: { ...where, drift: kind, chargebee_id: chargebeeId } },
        `chargebee reconciliation corrected a${kind === 'invoice' ? 'n invoice' : ' credit note'}`,
      )
    }
    for (const invoice of remote.invoices)
      report('invoice', invoice.id, await deps.ledger.applyInvoice(ctx.trx, owner, invoice, ctx.now))
    for (const note of remote.creditNotes)
      report('credit_note', note.id, await deps.ledger.applyCreditNote(ctx.trx, owner, note, ctx.now))
  }

  deps.scheduler.register(
    RECONCILE_JOB,
    async (ctx) => {
      for (const s of await deps.subscriptions.heldByProvider(ctx.trx, 'chargebee')) {
        // One job row per subscription, due again at each run: the jobs table keeps done jobs.
        await deps.scheduler.reschedule(ctx.trx, {
          kind: RECONCILE_SUBSCRIPTION_JOB,
          key: s.id,
          runAt: ctx.now,
          companyId: s.company_id,
          payload: { company_id: s.company_id, subscription_id: s.id },
        })
      }
      await scheduleRun(ctx.trx, nextSlot(ctx.now))
    },
    { realTime: true },
  )
  deps.scheduler.register(RECONCILE_SUBSCRIPTION_JOB, reconcileSubscription, { realTime: true, prepare: readChargebee })

  return {
    /** One key per slot, so only one instance schedules the next run. */
    start: (executor: Executor) => scheduleRun(executor, nextSlot(deps.clock.now())),
  }
}
