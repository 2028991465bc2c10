import type { PaymentSource, SubscriptionStatus } from '../../db/tables.ts'
import type {
  BillingState,
  Estimate,
  InvoiceEstimate,
  LineItem,
  PricedSelection,
  PricingModel,
} from '../billing/index.ts'

/**
 * Chargebee's objects (API v2, Product Catalog 2.0) as far as this service reads them, and their
 * mapping to ours. A plan's `sku`, an addon's `id` and a coupon's `code` are Chargebee's ids.
 */
export interface CbSubscriptionItem {
  item_price_id: string
  item_type: 'plan' | 'addon' | 'charge'
  quantity?: number
}
export interface CbSubscription {
  id: string
  customer_id: string
  status: SubscriptionStatus
  subscription_items?: CbSubscriptionItem[]
  coupons?: { coupon_id: string; applied_count?: number; apply_till?: number }[]
  trial_start?: number
  trial_end?: number
  current_term_start?: number
  current_term_end?: number
  cancelled_at?: number
  has_scheduled_changes?: boolean
  pause_date?: number
  resume_date?: number
  resource_version?: number
  updated_at?: number
}
export interface CbCard {
  card_type?: string
  brand?: string
  last4: string
  expiry_month: number
  expiry_year: number
}
export interface CbPaymentSource {
  type: string
  card?: CbCard
}

const SUBSCRIPTION_STATUSES: readonly SubscriptionStatus[] = [
  'future',
  'in_trial',
  'active',
  'non_renewing',
  'paused',
  'cancelled',
]

const date = (seconds: number | undefined | null): Date | null =>
  typeof seconds === 'number' ? new Date(seconds * 1000) : null

export function cardOf(card: CbCard | undefined | null): PaymentSource | null {
  if (!card || typeof card.last4 !== 'string') return null
  return {
    brand: card.brand ?? card.card_type ?? 'card',
    last4: card.last4,
    expiry_month: card.expiry_month,
    expiry_year: card.expiry_year,
  }
}

export function isCbSubscription(value: unknown): value is CbSubscription {
  const s = value as CbSubscription
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.id === 'string' &&
    typeof s.customer_id === 'string' &&
    SUBSCRIPTION_STATUSES.includes(s.status) &&
    Array.isArray(s.subscription_items ?? [])
  )
}

/**
 * Our stored state updated from Chargebee's subscription; what Chargebee does not hold stays. Its
 * future `cancelled_at` is our `cancel_scheduled_at`; a cancelled subscription's `current_term_end`
 * is when it ended, as with the local engine.
 */
export function stateFrom(stored: BillingState, s: CbSubscription, card?: PaymentSource | null): BillingState {
  const items = s.subscription_items ?? []
  const plan = items.find((i) => i.item_type === 'plan')
  const cancelledAt = date(s.cancelled_at)
  const cancelled = s.status === 'cancelled'
  const scheduled = !cancelled && cancelledAt !== null
  return {
    ...stored,
    status: s.status,
    plan_sku: plan?.item_price_id ?? stored.plan_sku,
    plan_quantity: plan?.quantity ?? stored.plan_quantity,
    addons: items
      .filter((i) => i.item_type === 'addon')
      .map((i) => ({ id: i.item_price_id, quantity: i.quantity ?? 1 })),
    coupon_code: s.coupons?.[0]?.coupon_id ?? null,
    ...(s.coupons?.[0]
      ? { coupon_applied_count: s.coupons[0].applied_count ?? 0, coupon_apply_till: date(s.coupons[0].apply_till) }
      : {}),
    trial_start: date(s.trial_start),
    trial_end: date(s.trial_end),
    current_term_start: date(s.current_term_start) ?? (cancelled ? stored.current_term_start : null),
    current_term_end: cancelled ? (cancelledAt ?? stored.current_term_end) : date(s.current_term_end),
    cancelled_at: cancelled ? cancelledAt : null,
    cancel_scheduled_at: scheduled ? cancelledAt : null,
    cancellation_reason: cancelled || scheduled ? stored.cancellation_reason : null,
    cancellation_message: cancelled || scheduled ? stored.cancellation_message : null,
    payment_source: card === undefined || card === null ? stored.payment_source : card,
    // Chargebee tells only that a change is scheduled; what it is, this service recorded when asking.
    scheduled_change: s.has_scheduled_changes ? (stored.scheduled_change ?? null) : null,
    pause_date: s.status === 'paused' || s.status === 'active' ? date(s.pause_date) : null,
    resume_date: s.status === 'paused' || s.status === 'active' ? date(s.resume_date) : null,
  }
}

interface CbLineItem {
  entity_type: string
  entity_id?: string
  description?: string
  unit_amount?: number
  quantity?: number
  amount?: number
}
interface CbInvoiceEstimate {
  line_items?: CbLineItem[]
  discounts?: { description?: string; amount?: number; entity_type?: string; entity_id?: string }[]
  sub_total?: number
  taxes?: { name: string; amount?: number; description?: string }[]
  line_item_taxes?: { tax_name: string; tax_rate?: number }[]
  total?: number
  credits_applied?: number
  amount_due?: number
  currency_code?: string
}
export interface CbEstimate {
  subscription_estimate?: { status?: SubscriptionStatus; next_billing_at?: number }
  invoice_estimate?: CbInvoiceEstimate
  next_invoice_estimate?: CbInvoiceEstimate
  credit_note_estimates?: { type?: string; total?: number; amount_allocated?: number; amount_available?: number }[]
}

/** Credits are named as credits, never taken for a coupon. */
function discountLabel(d: NonNullable<CbInvoiceEstimate['discounts']>[number]): string {
  if (d.entity_type === 'prorated_credits')
    return d.description ? `Prorated credits: ${d.description}` : 'Prorated credits'
  if (d.entity_type === 'promotional_credits')
    return d.description ? `Promotional credits: ${d.description}` : 'Promotional credits'
  return d.description ?? d.entity_id ?? 'Discount'
}

function entityType(type: string): LineItem['entity_type'] {
  return type.startsWith('addon') ? 'addon' : 'plan'
}

/** Each item's pricing model and the quantity its line shows, by item price id (our plan sku or addon id). */
export type ItemModels = ReadonlyMap<string, { pricing_model: PricingModel; quantity: number }>

/** The selection's items, for `estimateFrom`: Chargebee's lines carry no pricing model. */
export function itemModels(selection: PricedSelection): ItemModels {
  return new Map([
    [selection.plan.sku, { pricing_model: selection.plan.pricing_model, quantity: selection.quantity }],
    ...selection.addons.map((a) => [a.id, { pricing_model: a.pricing_model, quantity: a.quantity }] as const),
  ])
}

/**
 * The immediate invoice when the change bills now, else the next one (a trial's first term). A flat
 * fee's line, which Chargebee gives quantity 1, shows the subscription's quantity, as ours do.
 */
export function estimateFrom(
  e: CbEstimate,
  fallback: { status: SubscriptionStatus; currency: string; models?: ItemModels },
): Estimate {
  const inv = e.invoice_estimate ?? e.next_invoice_estimate ?? {}
  const rate = (name: string) => inv.line_item_taxes?.find((t) => t.tax_name === name)?.tax_rate ?? 0
  const invoice: InvoiceEstimate = {
    line_items: (inv.line_items ?? []).map((l) => {
      const item = fallback.models?.get(l.entity_id ?? '')
      return {
        entity_type: entityType(l.entity_type),
        entity_id: l.entity_id ?? '',
        description: l.description ?? '',
        ...(item ? { pricing_model: item.pricing_model } : {}),
        unit_amount: l.unit_amount ?? 0,
        quantity: item?.pricing_model === 'flat_fee' ? item.quantity : (l.quantity ?? 1),
        amount: l.amount ?? 0,
      }
    }),
    discounts: (inv.discounts ?? []).map((d) => ({ description: discountLabel(d), amount: d.amount ?? 0 })),
    sub_total: inv.sub_total ?? 0,
    taxes: (inv.taxes ?? []).map((t) => ({ name: t.name, rate: rate(t.name), amount: t.amount ?? 0 })),
    total: inv.total ?? 0,
    credits_applied:
      inv.credits_applied ??
      (e.invoice_estimate ? (e.credit_note_estimates ?? []).reduce((sum, c) => sum + (c.amount_allocated ?? 0), 0) : 0),
    amount_due: inv.amount_due ?? 0,
    currency_code: inv.currency_code ?? fallback.currency,
  }
  const se = e.subscription_estimate ?? {}
  return {
    subscription_estimate: { status: se.status ?? fallback.status, next_billing_at: se.next_billing_at ?? null },
    invoice_estimate: invoice,
  }
}
