import { liveFeatures } from '../oauth/scopes.ts'
import type { PlanRow, ProductRow, SubscriptionRow } from '../../db/tables.ts'
import { planView, productView } from '../catalogue/catalogue.service.ts'
import { type BillingCustomer, unixSeconds } from '../billing/index.ts'
import type { SubscriptionDetails, SubscriptionStatusBody } from './subscriptions.schemas.ts'

export function nextBillingAt(s: SubscriptionRow): number | null {
  if (s.cancel_scheduled_at) return null
  if (s.status === 'paused' || s.pause_date) return unixSeconds(s.resume_date)
  if (s.status === 'in_trial') return unixSeconds(s.trial_end)
  if (s.status === 'active') return unixSeconds(s.current_term_end)
  return null
}

/**
 * Chargebee's `cancelled_at`: when it was cancelled or, while a cancellation is scheduled, when it
 * is set to be. The row keeps the two apart (`cancel_scheduled_at`, `cancelled_at`).
 */
export function cancelledAt(s: SubscriptionRow): number | null {
  return unixSeconds(s.cancelled_at ?? s.cancel_scheduled_at)
}

/** The company keeps its base scopes. */
export function featuresOf(s: SubscriptionRow, plan: PlanRow | undefined): string[] {
  return [...liveFeatures(s.status, plan?.features)]
}

export interface CustomerCredits {
  promotional_credits: number
  refundable_credits: number
  excess_payments: number
}

/** Times in Unix seconds. */
export function subscriptionView(s: SubscriptionRow): SubscriptionDetails['subscription'] {
  return {
    id: s.id,
    customer_id: s.customer_id,
    provider: s.provider,
    status: s.status,
    product_sku: s.product_sku,
    plan_id: s.plan_sku,
    plan_quantity: s.plan_quantity,
    addons: s.addons,
    coupon_code: s.coupon_code,
    coupons:
      s.coupon_code === null
        ? []
        : [
            {
              coupon_code: s.coupon_code,
              applied_at: unixSeconds(s.coupon_applied_at),
              applied_count: s.coupon_applied_count,
              apply_till: unixSeconds(s.coupon_apply_till),
            },
          ],
    trial_start: unixSeconds(s.trial_start),
    trial_end: unixSeconds(s.trial_end),
    current_term_start: unixSeconds(s.current_term_start),
    current_term_end: unixSeconds(s.current_term_end),
    next_billing_at: nextBillingAt(s),
    cancelled_at: cancelledAt(s),
    scheduled_cancellation_at: unixSeconds(s.cancel_scheduled_at),
    cancellation_reason: s.cancellation_reason,
    cancellation_message: s.cancellation_message,
    has_scheduled_changes: s.scheduled_change !== null,
    scheduled_change: s.scheduled_change
      ? {
          at: unixSeconds(s.current_term_end),
          subscription_plan: s.scheduled_change.plan_sku,
          plan_quantity: s.scheduled_change.plan_quantity,
          addons: s.scheduled_change.addons,
          coupon_code: s.scheduled_change.coupon_code,
        }
      : null,
    pause_date: unixSeconds(s.pause_date),
    resume_date: unixSeconds(s.resume_date),
    created_at: unixSeconds(s.created_at)!,
    updated_at: unixSeconds(s.updated_at)!,
  }
}

export function detailsView(
  s: SubscriptionRow,
  plan: PlanRow,
  product: ProductRow,
  customer: BillingCustomer,
  credits: CustomerCredits,
): SubscriptionDetails {
  const card = s.payment_source
  return {
    subscription: subscriptionView(s),
    plan: planView(plan).plan,
    product: productView(product).product,
    customer: {
      id: customer.id,
      company_id: customer.company_id,
      name: customer.name,
      email: customer.email,
      country: customer.country,
      payment_method: card
        ? {
            type: 'card',
            brand: card.brand,
            last4: card.last4,
            expiry_month: card.expiry_month,
            expiry_year: card.expiry_year,
          }
        : null,
      promotional_credits: credits.promotional_credits,
      refundable_credits: credits.refundable_credits,
      excess_payments: credits.excess_payments,
    },
  }
}

export function statusView(s: SubscriptionRow, plan: PlanRow | undefined): SubscriptionStatusBody {
  return {
    subscription_id: s.id,
    status: s.status,
    plan: s.plan_sku,
    current_term_end: unixSeconds(s.current_term_end),
    trial_end: unixSeconds(s.trial_end),
    cancelled_at: cancelledAt(s),
    scheduled_cancellation_at: unixSeconds(s.cancel_scheduled_at),
    features: featuresOf(s, plan),
  }
}
