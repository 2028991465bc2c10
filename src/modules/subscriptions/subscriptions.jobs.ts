import type { SubscriptionRow } from '../../db/tables.ts'
import type { Executor, JobContext, Scheduler } from '../../jobs/scheduler.ts'
import {
  couponDiscount,
  invoiceFor,
  WHOLE,
  afterInvoice,
  freshUsage,
  transitions,
  usageColumns,
  usageOf,
  type ProviderRegistry,
} from '../billing/index.ts'
import type { Pricing } from './subscriptions.pricing.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import type { SubscriptionSteps } from './subscriptions.steps.ts'
import { creditsToApply, PAYMENT_RETRY_JOB, type Ledger, type RetryPayload } from '../invoices/index.ts'
import { RESUME_JOB, TERM_END_JOB, TRIAL_END_JOB } from './subscriptions.job-kinds.ts'

const SCHEDULER_ACTOR = 'scheduler'

/**
 * What time does to a subscription when this service drives it (the local engine): trials end,
 * terms renew with their invoice, failed payments are retried, and exhausted dunning cancels.
 * Runs inside a job's transaction, with no request to answer.
 */
export function createSubscriptionJobs(deps: {
  repo: Pick<SubscriptionsRepository, 'lockByCompany' | 'findPlan' | 'findCoupon' | 'redeemCoupon'>
  scheduler: Pick<Scheduler, 'schedule'>
  providers: ProviderRegistry
  pricing: Pick<Pricing, 'current' | 'tax'>
  ledger: Pick<Ledger, 'bill' | 'retry' | 'credits' | 'unbilledCharges'>
  steps: Pick<SubscriptionSteps, 'save' | 'customerOf'>
}) {
  const { repo, providers, pricing, ledger, scheduler } = deps
  const { save, customerOf } = deps.steps

  /** Chargebee's cancel_reason not_paid. */
  async function cancelForNonPayment(trx: Executor, s: SubscriptionRow, at: Date, invoiceId: string) {
    if (s.status === 'cancelled') return
    const next: SubscriptionRow = {
      ...s,
      status: 'cancelled',
      cancelled_at: at,
      cancel_scheduled_at: null,
      current_term_end: at,
      cancellation_reason: 'not_paid',
      cancellation_message: null,
    }
    await save(trx, s, next, {
      event: 'cancelled',
      actor: SCHEDULER_ACTOR,
      at,
      details: { cause: 'not_paid', invoice_id: invoiceId },
    })
  }

  /** An invoice left not_paid at once (no retries configured) cancels. */
  async function bill(trx: Executor, s: SubscriptionRow, input: Omit<Parameters<Ledger['bill']>[1], 'subscription'>) {
    const invoice = await ledger.bill(trx, { subscription: s, ...input })
    if (invoice.status === 'not_paid') await cancelForNonPayment(trx, s, input.date, invoice.id)
    return invoice
  }

  /**
   * Saves `next` with its event and, when it starts a paid term, bills that term in full: a trial's
   * conversion, a renewal, a resumption.
   */
  async function startTerm(
    trx: Executor,
    s: SubscriptionRow,
    next: SubscriptionRow,
    what: { event: string; actor: string; at: Date; cause: string; kind: 'activation' | 'renewal' },
  ) {
    let invoice: ReturnType<typeof invoiceFor> | undefined
    let state = next
    if (next.status === 'active') {
      const customer = await customerOf(trx, s.company_id)
      const selection = await pricing.current(trx, next)
      const period = { periodStart: next.current_term_start, usage: usageOf(next) }
      const currency = selection.plan.currency_code
      const [held, charges] = await Promise.all([
        ledger.credits(trx, s.company_id, currency),
        ledger.unbilledCharges(trx, s.company_id, s.id, currency),
      ])
      invoice = invoiceFor(selection, WHOLE, pricing.tax(customer), currency, creditsToApply(held), period, {
        charges,
        promotionalCredits: held.promotional_credits,
      })
      // Counted: the coupon's duration runs on periods discounted.
      if (selection.coupon && next.current_term_start) {
        const used = couponDiscount(selection.coupon, invoice.line_items, period)
        state = {
          ...next,
          ...usageColumns(
            afterInvoice(selection.coupon, period.usage, next.current_term_start, used.amount, used.taken),
          ),
        }
      }
    }
    await save(trx, s, state, {
      event: what.event,
      actor: what.actor,
      at: what.at,
      details: { cause: what.cause, ...(invoice ? { invoice } : {}) },
    })
    if (invoice) {
      await bill(trx, state, {
        kind: what.kind,
        invoice,
        date: what.at,
        periodStart: state.current_term_start!,
        periodEnd: state.current_term_end!,
      })
    }
  }

  /**
   * A change scheduled for the term's end takes effect first, with its own event; the renewal then
   * bills the new choice. A coupon chosen then that can no longer be redeemed is left off.
   */
  async function applyScheduledChange(trx: Executor, s: SubscriptionRow, at: Date): Promise<SubscriptionRow> {
    let next = transitions.withScheduledChange(s)
    if (next.coupon_code !== null && next.coupon_code !== s.coupon_code) {
      const coupon = await repo.findCoupon(trx, next.coupon_code)
      const redeemed = coupon && (await repo.redeemCoupon(trx, coupon.id, s.company_id, at.toISOString().slice(0, 10)))
      next = redeemed ? { ...next, ...usageColumns(freshUsage(at)) } : { ...next, coupon_code: null }
    }
    if (next.coupon_code === null && s.coupon_code !== null) next = { ...next, ...usageColumns(freshUsage(null)) }
    await save(trx, s, next, { event: 'changed', actor: SCHEDULER_ACTOR, at, details: { cause: 'scheduled_change' } })
    return next
  }

  async function advance(ctx: JobContext, which: 'trial_end' | 'term_end') {
    let s = await repo.lockByCompany(ctx.trx, String(ctx.payload.company_id))
    if (!s) return
    // A job about an earlier state (a cancelled trial, a replaced term) does nothing.
    if (which === 'trial_end' && s.id !== ctx.key) return
    if (
      which === 'term_end' &&
      (s.id !== ctx.payload.subscription_id || s.current_term_end?.toISOString() !== ctx.payload.term_end)
    )
      return
    const provider = providers.get(s.provider)
    if (!provider.drivesTime) return
    const at = (which === 'trial_end' ? s.trial_end : s.current_term_end)!
    if (which === 'term_end' && s.status === 'active' && s.scheduled_change)
      s = await applyScheduledChange(ctx.trx, s, at)
    const plan = await repo.findPlan(ctx.trx, s.plan_sku)
    if (!plan) throw new Error(`subscription ${s.id}: plan ${s.plan_sku} is missing from the catalogue`)
    const next =
      which === 'trial_end' ? provider.atTrialEnd?.(s, plan.period_unit) : provider.atTermEnd?.(s, plan.period_unit)
    if (!next) return
    const event =
      next.status === 'cancelled'
        ? 'cancelled'
        : next.status === 'paused'
          ? 'paused'
          : which === 'trial_end'
            ? 'activated'
            : 'renewed'
    await startTerm(ctx.trx, s, next, {
      event,
      actor: SCHEDULER_ACTOR,
      at,
      cause: which,
      kind: which === 'trial_end' ? 'activation' : 'renewal',
    })
    if (next.status === 'paused' && next.resume_date) await scheduleResume(ctx.trx, next)
  }

  async function scheduleResume(trx: Executor, s: SubscriptionRow) {
    const at = s.resume_date!
    await scheduler.schedule(trx, {
      kind: RESUME_JOB,
      key: `${s.id}@${at.toISOString()}`,
      runAt: at,
      companyId: s.company_id,
      payload: { company_id: s.company_id, subscription_id: s.id, resume_date: at.toISOString() },
    })
  }

  /** Resumes now: a new term from `at`, billed then. */
  async function resume(trx: Executor, s: SubscriptionRow, at: Date, actor: string, applied = () => {}) {
    const provider = providers.get(s.provider)
    const plan = await repo.findPlan(trx, s.plan_sku)
    if (!plan) throw new Error(`subscription ${s.id}: plan ${s.plan_sku} is missing from the catalogue`)
    const next = await provider.resume(s, at, plan.period_unit)
    applied()
    if (!provider.drivesTime) {
      await save(trx, s, next, { event: 'resumed', actor, at })
      return
    }
    await startTerm(trx, s, next, { event: 'resumed', actor, at, cause: 'resume', kind: 'renewal' })
  }

  async function resumeOnDate(ctx: JobContext) {
    const s = await repo.lockByCompany(ctx.trx, String(ctx.payload.company_id))
    if (!s || s.id !== ctx.payload.subscription_id || s.status !== 'paused') return
    if (s.resume_date?.toISOString() !== ctx.payload.resume_date) return
    if (!providers.get(s.provider).drivesTime) return
    await resume(ctx.trx, s, new Date(String(ctx.payload.resume_date)), SCHEDULER_ACTOR)
  }

  async function retryPayment(ctx: JobContext) {
    const payload = ctx.payload as unknown as RetryPayload
    const s = await repo.lockByCompany(ctx.trx, payload.company_id)
    if (!s) return
    const outcome = await ledger.retry(ctx.trx, s, payload, ctx.runAt)
    if (outcome === 'exhausted') await cancelForNonPayment(ctx.trx, s, ctx.runAt, payload.invoice_id)
  }

  function registerJobs(scheduler: Pick<Scheduler, 'register'>) {
    scheduler.register(TRIAL_END_JOB, (ctx) => advance(ctx, 'trial_end'))
    scheduler.register(TERM_END_JOB, (ctx) => advance(ctx, 'term_end'))
    scheduler.register(PAYMENT_RETRY_JOB, retryPayment)
    scheduler.register(RESUME_JOB, resumeOnDate)
  }

  return { registerJobs, bill, resume, scheduleResume }
}
