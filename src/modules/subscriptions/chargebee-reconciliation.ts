import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../../core/clock.ts'
import type { Executor, JobContext, Scheduler } from '../../jobs/scheduler.ts'
import type { ProviderLedger, CopyOutcome } from '../invoices/provider-ledger.service.ts'
import { MissingAtChargebee, type ChargebeeReconcileReader } from './billing/chargebee-reconcile-reader.ts'
import { chargebeeState, saveChargebeeState } from './chargebee-state.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import { changesBetween } from './subscriptions.events.ts'
import type { ChargebeeWebhooksRepository } from './chargebee-webhooks.repository.ts'

/** What the reconciliation reads of one subscription at Chargebee. */
type ChargebeeSide = Awaited<ReturnType<ChargebeeReconcileReader['subscription']>> & {
  invoices: Awaited<ReturnType<ChargebeeReconcileReader['invoices']>>
  creditNotes: Awaited<ReturnType<ChargebeeReconcileReader['creditNotes']>>
}

export const RECONCILE_JOB = 'chargebee.reconcile'
export const RECONCILE_SUBSCRIPTION_JOB = 'chargebee.reconcile_subscription'

/** What the reconciliation found out of step: a subscription's fields, a ledger copy, a subscription Chargebee does not know. */
export type DriftKind = 'subscription' | 'invoice' | 'credit_note' | 'missing_subscription'
export type DriftObserver = (kind: DriftKind) => void

/**
 * The reconciliation (decisions §8.4: Chargebee is the truth for its subscriptions). Webhooks
 * can be lost (Chargebee gives up after its retries, an endpoint was misconfigured for a while):
 * every CHARGEBEE_RECONCILE_INTERVAL_SECONDS a platform job schedules one job per
 * Chargebee-managed subscription, in its company's lane (fair to the others). That job first reads
 * the subscription, its invoices and credit notes from Chargebee with no transaction open (the
 * scheduler's `prepare`: up to 21 calls of CHARGEBEE_TIMEOUT_MS each must hold no connection and
 * no lock a webhook or a request waits on), then locks the subscription's row in a short
 * transaction and applies what differs from the row as it is then: the subscription as a
 * `reconciled` subscription event (its previous_attributes say what drifted), the ledger copies
 * as the webhooks would (their triggers write invoice.* events). Each drift is logged and
 * counted (chargebee_reconciliation_drift_total). A webhook applied between the read and the lock
 * with a newer resource_version wins: the subscription is left as that webhook made it (the next
 * run compares again), never moved back to the older state read; the ledger copies keep their
 * own resource_version guard.
 *
 * A subscription Chargebee answers 404 for is reported, never cancelled here: a wrong site or key
 * must not end every customer's service; a deletion arrives as subscription_deleted.
 *
 * By real time, as the platform's housekeeping: a test clock's advance does not make Chargebee
 * move, so it has nothing to do with when Chargebee is compared.
 */
export function createChargebeeReconciliation(deps: {
  scheduler: Pick<Scheduler, 'schedule' | 'reschedule' | 'register'>
  clock: Clock
  intervalSeconds: number
  reader: ChargebeeReconcileReader
  subscriptions: SubscriptionsRepository
  webhooksRepo: Pick<ChargebeeWebhooksRepository, 'advanceVersion' | 'appliedVersion'>
  ledger: ProviderLedger
  log: FastifyBaseLogger
  onDrift: DriftObserver
}) {
  const everyMs = deps.intervalSeconds * 1000
  const nextSlot = (now: Date) => new Date(Math.floor(now.getTime() / everyMs) * everyMs + everyMs)
  const scheduleRun = (executor: Executor, at: Date) => deps.scheduler.schedule(executor, { kind: RECONCILE_JOB, key: at.toISOString(), runAt: at })

  type Payload = { company_id: string; subscription_id: string }

  /** Chargebee's side of one subscription, read with no transaction open; null when Chargebee does not know it. */
  async function readChargebee({ payload }: { payload: Record<string, unknown> }): Promise<ChargebeeSide | null> {
    const { subscription_id: subscriptionId } = payload as Payload
    let remote
    try {
      remote = await deps.reader.subscription(subscriptionId)
    } catch (err) {
      if (err instanceof MissingAtChargebee) return null
      throw err
    }
    return { ...remote, invoices: await deps.reader.invoices(subscriptionId), creditNotes: await deps.reader.creditNotes(subscriptionId) }
  }

  async function reconcileSubscription(ctx: JobContext) {
    const { company_id: companyId, subscription_id: subscriptionId } = ctx.payload as Payload
    const remote = ctx.prepared as ChargebeeSide | null
    const before = await deps.subscriptions.lockByCompany(ctx.trx, companyId)
    if (!before || before.id !== subscriptionId || before.provider !== 'chargebee') return
    const where = { company_id: companyId, subscription_id: subscriptionId }
    if (remote === null) {
      deps.onDrift('missing_subscription')
      deps.log.warn({ reconciliation: { ...where, drift: 'missing_subscription' } }, 'chargebee reconciliation: Chargebee does not know this subscription; left as it is')
      return
    }
    const version = remote.subscription.resource_version
    const known = Number.isSafeInteger(version)
    // Under the row's lock: a webhook that applied a newer state since the read is not undone.
    const overtaken = known && ((await deps.webhooksRepo.appliedVersion(ctx.trx, subscriptionId)) ?? -1n) > BigInt(version!)
    if (known && !overtaken) await deps.webhooksRepo.advanceVersion(ctx.trx, subscriptionId, BigInt(version!), ctx.now)
    const after = chargebeeState(before, remote.subscription, remote.card)
    const drifted = overtaken ? [] : Object.keys(changesBetween(before, after))
    if (drifted.length > 0) {
      await saveChargebeeState(ctx.trx, deps.subscriptions, before, after, { event: 'reconciled', at: ctx.now, now: ctx.now, details: { reconciled: { fields: drifted } } })
      deps.onDrift('subscription')
      deps.log.warn({ reconciliation: { ...where, drift: 'subscription', fields: drifted } }, 'chargebee reconciliation corrected the subscription')
    }
    const owner = { companyId, subscriptionId }
    const report = (kind: 'invoice' | 'credit_note', chargebeeId: string, outcome: CopyOutcome) => {
      if (outcome !== 'applied') return
      deps.onDrift(kind)
      deps.log.warn({ reconciliation: { ...where, drift: kind, chargebee_id: chargebeeId } }, `chargebee reconciliation corrected a${kind === 'invoice' ? 'n invoice' : ' credit note'}`)
    }
    for (const invoice of remote.invoices) report('invoice', invoice.id, await deps.ledger.applyInvoice(ctx.trx, owner, invoice, ctx.now))
    for (const note of remote.creditNotes) report('credit_note', note.id, await deps.ledger.applyCreditNote(ctx.trx, owner, note, ctx.now))
  }

  deps.scheduler.register(RECONCILE_JOB, async (ctx) => {
    for (const s of await deps.ledger.chargebeeSubscriptions(ctx.trx)) {
      // One job row per subscription, due again at each run (not a row per run: the jobs table keeps done jobs).
      await deps.scheduler.reschedule(ctx.trx, {
        kind: RECONCILE_SUBSCRIPTION_JOB, key: s.id, runAt: ctx.now, companyId: s.company_id,
        payload: { company_id: s.company_id, subscription_id: s.id },
      })
    }
    await scheduleRun(ctx.trx, nextSlot(ctx.now))
  }, { realTime: true })
  deps.scheduler.register(RECONCILE_SUBSCRIPTION_JOB, reconcileSubscription, { realTime: true, prepare: readChargebee })

  return {
    /** At start: the next run, unless another instance scheduled it already (one key per slot). */
    start: (executor: Executor) => scheduleRun(executor, nextSlot(deps.clock.now())),
  }
}
