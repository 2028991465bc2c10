import type { PaymentSource } from '../../db/tables.ts'
import { ProviderError } from '../../core/errors.ts'
import { afterInvoice, freshUsage, usageColumns, usageOf } from './billing.coupons.ts'
import {
  couponDiscount,
  creditFor,
  invoiceFor,
  noInvoice,
  remainingShare,
  WHOLE,
  type Estimate,
  type PricedSelection,
} from './billing.estimate.ts'
import * as transitions from './billing.transitions.ts'
import type { BillingState } from './billing.transitions.ts'
import type { BillingProvider, ChangeRequest, UnusedCredit } from './billing.provider.ts'
import { termEnd, unixSeconds } from './billing.terms.ts'

function onlyTheCoupon(next: PricedSelection, current: PricedSelection): boolean {
  const addons = (sel: PricedSelection) => sel.addons.map((a) => `${a.id}×${a.quantity}`).join(',')
  return next.plan.sku === current.plan.sku && next.quantity === current.quantity && addons(next) === addons(current)
}

export type LocalHostedPages = Pick<BillingProvider, 'managerPage' | 'portalSession' | 'paymentPage'>

/**
 * The built-in engine: it behaves like Chargebee (statuses, terms, proration, credits) but runs
 * here, charging no card. Its hosted pages come from the hosted module (without it, 502).
 */
export function createLocalProvider(deps: { hostedPages?: LocalHostedPages } = {}): BillingProvider {
  function hosted(): LocalHostedPages {
    if (!deps.hostedPages)
      throw new ProviderError('The hosted pages of the local billing provider are not configured on this service')
    return deps.hostedPages
  }

  function plan(
    s: BillingState,
    change: ChangeRequest,
  ): { state: BillingState; estimate: Estimate; billNow?: boolean; unusedCredit?: UnusedCredit } {
    const { selection, current, tax, currency, now } = change
    // The same coupon keeps its history; another resumes where it stood if the company had it before.
    const couponCode = selection.coupon?.code ?? null
    const usage =
      couponCode === s.coupon_code
        ? usageOf(s)
        : couponCode === null
          ? freshUsage(null)
          : { ...(change.couponHistory ?? freshUsage(null)), applied_at: now }
    const credits = change.credits ?? 0
    const extras = { promotionalCredits: change.promotionalCredits ?? 0 }
    let state: BillingState = {
      ...s,
      plan_sku: selection.plan.sku,
      plan_quantity: selection.quantity,
      addons: selection.addons.map((a) => ({ id: a.id, quantity: a.quantity })),
      coupon_code: couponCode,
      ...usageColumns(usage),
      // A change made now replaces one scheduled, as at Chargebee.
      scheduled_change: null,
    }
    if (s.status === 'in_trial' || s.status === 'future' || !s.current_term_start || !s.current_term_end) {
      // A trial bills nothing until its end; one set to end cancelled bills nothing at all.
      const renews = !s.cancel_scheduled_at
      return {
        state,
        estimate: {
          subscription_estimate: { status: s.status, next_billing_at: renews ? unixSeconds(s.trial_end) : null },
          invoice_estimate: renews
            ? invoiceFor(selection, WHOLE, tax, currency, credits, { periodStart: s.trial_end, usage }, extras)
            : noInvoice(currency),
        },
      }
    }
    if (onlyTheCoupon(selection, current) && selection.coupon?.code !== current.coupon?.code) {
      // A coupon put on or taken off alone applies from the renewal's invoice.
      const renews = state.status !== 'non_renewing'
      return {
        state,
        estimate: {
          subscription_estimate: {
            status: state.status,
            next_billing_at: renews ? unixSeconds(state.current_term_end) : null,
          },
          invoice_estimate: renews
            ? invoiceFor(selection, WHOLE, tax, currency, credits, { periodStart: s.current_term_end, usage }, extras)
            : noInvoice(currency),
        },
      }
    }
    // The unused share of a paid term is credited against the new charge; what is left stays the
    // customer's refundable credit, as at Chargebee.
    const share = remainingShare(s.current_term_start, s.current_term_end, now)
    const unusedCredit = change.termInvoice
      ? { figures: creditFor(change.termInvoice, now), referenceInvoiceId: change.termInvoice.id }
      : undefined
    const credit = (unusedCredit?.figures.total ?? 0) + credits
    let invoice: ReturnType<typeof invoiceFor>
    let periodStart = s.current_term_start
    if (selection.plan.period_unit !== current.plan.period_unit) {
      // Another billing period starts a new term now, billed in full, as Chargebee does.
      const end = termEnd(now, selection.plan.period_unit)
      periodStart = now
      state = {
        ...state,
        current_term_start: now,
        current_term_end: end,
        billing_anchor_day: now.getUTCDate(),
        cancel_scheduled_at: state.status === 'non_renewing' ? end : state.cancel_scheduled_at,
      }
      invoice = invoiceFor(selection, WHOLE, tax, currency, credit, { periodStart, usage }, extras)
    } else {
      invoice = invoiceFor(selection, share, tax, currency, credit, { periodStart, usage }, extras)
    }
    // Remembered, so the coupon counts once in this period.
    if (selection.coupon) {
      const used = couponDiscount(selection.coupon, invoice.line_items, { periodStart, usage })
      state = { ...state, ...usageColumns(afterInvoice(selection.coupon, usage, periodStart, used.amount, used.taken)) }
    }
    return {
      state,
      estimate: {
        subscription_estimate: {
          status: state.status,
          next_billing_at: state.status === 'non_renewing' ? null : unixSeconds(state.current_term_end),
        },
        invoice_estimate: invoice,
      },
      billNow: true,
      ...(unusedCredit ? { unusedCredit } : {}),
    }
  }

  return {
    name: 'local',
    drivesTime: true,
    createSubscription: async ({ subscription }) => subscription,
    retrieve: async (s) => s,
    estimate: async (s, change) => plan(s, change).estimate,
    changeSubscription: async (s, change) => plan(s, change),
    async scheduleChange(s, change, scheduled) {
      const { selection, tax, currency } = change
      const at = s.current_term_end
      const couponCode = selection.coupon?.code ?? null
      const usage =
        couponCode === s.coupon_code ? usageOf(s) : { ...(change.couponHistory ?? freshUsage(null)), applied_at: at }
      const state = transitions.scheduleChange(s, scheduled)
      return {
        state,
        estimate: {
          subscription_estimate: { status: state.status, next_billing_at: unixSeconds(at) },
          invoice_estimate: invoiceFor(selection, WHOLE, tax, currency, change.credits ?? 0, {
            periodStart: at,
            usage,
          }),
        },
      }
    },
    removeScheduledChanges: async (s) => transitions.removeScheduledChanges(s),
    pause: async (s, p, now) => transitions.pause(s, p.option, p.resumeDate, now),
    resume: async (s, now, unit) => transitions.resume(s, now, unit),
    cancel: async (s, cancellation, now) => transitions.cancel(s, cancellation, now),
    removeScheduledCancellation: async (s) => transitions.removeScheduledCancellation(s),
    addPaymentSource: async (s, card: PaymentSource) => ({ ...s, payment_source: card }),
    managerPage: (subject, options) => hosted().managerPage(subject, options),
    portalSession: (subject, options) => hosted().portalSession(subject, options),
    paymentPage: (subject, options) => hosted().paymentPage(subject, options),
    atTrialEnd: transitions.atTrialEnd,
    atTermEnd: transitions.atTermEnd,
  }
}
