import type { SubscriptionStatus } from '../../db/tables.ts'
import {
  couponAppliesTo,
  discountsPeriod,
  freshUsage,
  lineKey,
  targets,
  type CouponTerms,
  type CouponUsage,
} from './billing.coupons.ts'
import { itemAmount, unitAmount, type PricedItem, type PricingModel } from './billing.pricing.ts'

/**
 * The arithmetic of an invoice, behind both an estimate and the change an update applies, so they
 * cannot disagree. Integer minor units; each line is rounded on its own, half-up, and totals are
 * sums of rounded lines. Proration is an exact BigInt fraction of whole seconds.
 */

/** `currency_code`: the plan's, which the whole subscription bills in. */
export interface PricedPlan extends PricedItem {
  sku: string
  name: string
  period_unit: 'month' | 'year'
  currency_code: string
}
export interface PricedAddon extends PricedItem {
  id: string
  name: string
  quantity: number
}
export interface PricedCoupon extends CouponTerms {
  id: string
  code: string
  name: string
  discount_type: 'percentage' | 'fixed_amount'
  discount_value_minor: number
}

export interface PricedSelection {
  plan: PricedPlan
  quantity: number
  addons: PricedAddon[]
  coupon: PricedCoupon | null
}

/** Chargebee's `tax_exempt_reason` values this engine gives. */
export type TaxExemptReason = 'reverse_charge' | 'export' | 'tax_not_configured'

/** A rate in basis points (22 % = 2200); a reverse charge is rate 0 with a name, an export no line (name null). */
export interface TaxRate {
  name: string | null
  rate_bp: number
  exempt_reason: TaxExemptReason | null
}

/** `adhoc`: a one-off charge, as Chargebee names its lines. */
export interface LineItem {
  entity_type: 'plan' | 'addon' | 'adhoc'
  entity_id: string
  description: string
  /** Absent on lines made before pricing models, which were all per_unit. */
  pricing_model?: PricingModel
  unit_amount: number
  quantity: number
  amount: number
  tax_exempt_reason?: TaxExemptReason
  /** Chargebee's line item `discount_amount`. */
  discount_amount?: number
}

/** A coupon's discount, or (with `entity_type`) the promotional credits an invoice took, after tax. */
export interface Discount {
  description: string
  amount: number
  entity_type?: 'promotional_credits'
}

export const PROMOTIONAL_CREDITS = 'Promotional credits'

/** A one-off charge billed on an invoice: taxed as any line, never discounted by the coupon. */
export interface OneOffCharge {
  id: string
  description: string
  amount: number
}

/** What an invoice takes besides its selection: waiting one-off charges, the customer's promotional credits. */
export interface InvoiceExtras {
  charges?: OneOffCharge[]
  promotionalCredits?: number
}

export interface InvoiceEstimate {
  line_items: LineItem[]
  discounts: Discount[]
  sub_total: number
  taxes: { name: string; rate: number; amount: number }[]
  total: number
  credits_applied: number
  amount_due: number
  currency_code: string
}

export interface Estimate {
  subscription_estimate: { status: SubscriptionStatus; next_billing_at: number | null }
  invoice_estimate: InvoiceEstimate
}

/** Seconds left / seconds in the term; the whole term is 1/1. */
export interface Fraction {
  num: bigint
  den: bigint
}
export const WHOLE: Fraction = { num: 1n, den: 1n }

export function roundHalfUp(value: bigint, num: bigint, den: bigint): number {
  return Number((2n * value * num + den) / (2n * den))
}

export function prorate(amount: number, share: Fraction): number {
  return roundHalfUp(BigInt(amount), share.num, share.den)
}

export function remainingShare(termStart: Date, termEnd: Date, now: Date): Fraction {
  const length = Math.max(1, Math.floor((termEnd.getTime() - termStart.getTime()) / 1000))
  const left = Math.min(length, Math.max(0, Math.floor((termEnd.getTime() - now.getTime()) / 1000)))
  return { num: BigInt(left), den: BigInt(length) }
}

export interface CouponContext {
  periodStart: Date | null
  usage: CouponUsage
}

export const FIRST_PERIOD: CouponContext = { periodStart: null, usage: freshUsage(null) }

/**
 * What the coupon takes off lines already priced for the period. A fixed amount is whole, never
 * prorated, once per period per target, as Chargebee's. `perLine` is each line's part of `amount`,
 * which its tax is computed without.
 */
export function couponDiscount(
  coupon: PricedCoupon | null,
  all: Pick<LineItem, 'entity_type' | 'entity_id' | 'amount'>[],
  ctx: CouponContext,
): { amount: number; taken: Record<string, number>; perLine: number[] } {
  // A one-off charge is never the coupon's: it discounts the subscription's own lines.
  const lines = all.map((l) => ({
    entity_id: l.entity_id,
    entity_type: l.entity_type === 'adhoc' ? ('addon' as const) : l.entity_type,
    amount: l.entity_type === 'adhoc' ? 0 : l.amount,
  }))
  if (!coupon || !couponAppliesTo(coupon, ctx.usage, ctx.periodStart))
    return { amount: 0, taken: {}, perLine: lines.map(() => 0) }
  const taken: Record<string, number> = {}
  const off = (base: number, key: string): number => {
    if (coupon.discount_type === 'percentage')
      return Math.min(base, roundHalfUp(BigInt(base), BigInt(coupon.discount_value_minor), 10_000n))
    const used = discountsPeriod(ctx.usage, ctx.periodStart) ? (ctx.usage.period_discounts[key] ?? 0) : 0
    const amount = Math.min(base, Math.max(0, coupon.discount_value_minor - used))
    if (amount > 0) taken[key] = (taken[key] ?? 0) + amount
    return amount
  }
  if (coupon.apply_on === 'invoice_amount') {
    const amount = off(
      lines.reduce((sum, l) => sum + l.amount, 0),
      lineKey(coupon, null),
    )
    return {
      amount,
      taken,
      perLine: allocate(
        amount,
        lines.map((l) => l.amount),
      ),
    }
  }
  const perLine = lines.map((l) => (targets(coupon, l) ? off(l.amount, lineKey(coupon, l)) : 0))
  return { amount: perLine.reduce((sum, d) => sum + d, 0), taken, perLine }
}

export interface RecurringLine {
  entity_type: 'plan' | 'addon'
  entity_id: string
  description: string
  pricing_model: PricingModel
  quantity: number
  unit_amount: number
  /** A whole term, before coupons and tax. */
  amount: number
}

/** What a selection recurs at per term, line by line (the plan, then each addon by its own quantity). */
export function recurringLines(selection: Pick<PricedSelection, 'plan' | 'quantity' | 'addons'>): RecurringLine[] {
  const line = (
    entity_type: RecurringLine['entity_type'],
    entity_id: string,
    description: string,
    item: PricedItem,
    quantity: number,
  ): RecurringLine => ({
    entity_type,
    entity_id,
    description,
    pricing_model: item.pricing_model,
    quantity,
    unit_amount: unitAmount(item, quantity),
    amount: itemAmount(item, quantity),
  })
  return [
    line('plan', selection.plan.sku, selection.plan.name, selection.plan, selection.quantity),
    ...selection.addons.map((a) => line('addon', a.id, a.name, a, a.quantity)),
  ]
}

/**
 * The invoice of a selection for `share` of a term, with the extras' one-off charges; then its
 * promotional credits (after tax) and `credit` (refundable credits and excess payments) taken.
 */
export function invoiceFor(
  selection: PricedSelection,
  share: Fraction,
  tax: TaxRate | null,
  currency: string,
  credit = 0,
  period: CouponContext = FIRST_PERIOD,
  extras: InvoiceExtras = {},
): InvoiceEstimate {
  const lineItems: LineItem[] = recurringLines(selection).map((l) => ({
    entity_type: l.entity_type,
    entity_id: l.entity_id,
    description: l.description,
    pricing_model: l.pricing_model,
    unit_amount: l.unit_amount,
    quantity: l.quantity,
    amount: prorate(l.amount, share),
  }))
  const discounts: Discount[] = []
  const coupon = selection.coupon
  const { amount: discount, perLine } = couponDiscount(coupon, lineItems, period)
  if (coupon && discount > 0) discounts.push({ description: `${coupon.name} (${coupon.code})`, amount: discount })
  lineItems.forEach((l, i) => {
    if (perLine[i]! > 0) l.discount_amount = perLine[i]!
  })
  const charges = (extras.charges ?? []).map(chargeLine)
  return priced([...lineItems, ...charges], discounts, tax, currency, credit, extras.promotionalCredits ?? 0)
}

function chargeLine(charge: OneOffCharge): LineItem {
  const { id, description, amount } = charge
  return { entity_type: 'adhoc', entity_id: id, description, unit_amount: amount, quantity: 1, amount }
}

/**
 * Lines priced and discounted by a coupon, taxed per line; the promotional credits come off the
 * total after tax (decisions §9.2), then `credit` is applied to what is left.
 */
function priced(
  lineItems: LineItem[],
  discounts: Discount[],
  tax: TaxRate | null,
  currency: string,
  credit: number,
  promotional: number,
): InvoiceEstimate {
  const subTotal = lineItems.reduce((sum, l) => sum + l.amount, 0)
  const perLine = lineItems.map((l) => l.discount_amount ?? 0)
  const discount = perLine.reduce((sum, d) => sum + d, 0)
  const taxes = taxLines(lineItems, perLine, tax)
  if (tax?.exempt_reason) for (const l of lineItems) l.tax_exempt_reason = tax.exempt_reason
  const taxed = subTotal - discount + taxes.reduce((sum, t) => sum + t.amount, 0)
  const promo = Math.min(Math.max(0, promotional), taxed)
  const all = promo > 0 ? [...discounts, promotionalDiscount(promo)] : discounts
  const total = taxed - promo
  const creditsApplied = Math.min(Math.max(0, credit), total)
  return {
    line_items: lineItems,
    discounts: all,
    sub_total: subTotal,
    taxes,
    total,
    credits_applied: creditsApplied,
    amount_due: total - creditsApplied,
    currency_code: currency,
  }
}

const promotionalDiscount = (amount: number): Discount => ({
  description: PROMOTIONAL_CREDITS,
  amount,
  entity_type: 'promotional_credits',
})

/** The invoice of one-off charges billed now: taxed per line, then credits taken as on any invoice. */
export function chargesInvoice(
  charges: OneOffCharge[],
  tax: TaxRate | null,
  currency: string,
  credits: { promotional: number; credit: number },
): InvoiceEstimate {
  return priced(charges.map(chargeLine), [], tax, currency, credits.credit, credits.promotional)
}

/** The promotional credits an invoice took (its discount entry), 0 without. */
export const promotionalCreditsTaken = (discounts: Discount[]) =>
  discounts.filter((d) => d.entity_type === 'promotional_credits').reduce((sum, d) => sum + d.amount, 0)

/**
 * Tax rounded per line, as Chargebee does, so the tax line is a sum of rounded line taxes
 * (2.20 + 2.20 = 4.40 where 22 % of 20.04 would be 4.41).
 */
export function taxLines(lines: LineItem[], lineDiscounts: number[], tax: TaxRate | null): InvoiceEstimate['taxes'] {
  if (!tax || tax.name === null) return []
  const amount = lines.reduce(
    (sum, line, i) => sum + roundHalfUp(BigInt(line.amount - (lineDiscounts[i] ?? 0)), BigInt(tax.rate_bp), 10_000n),
    0,
  )
  return [{ name: tax.name, rate: tax.rate_bp / 100, amount }]
}

/**
 * `total` shared among `amounts` in proportion, in whole units that add up exactly and never exceed
 * their amount: shares round down, and leftover units go to the largest remainders.
 */
export function allocate(total: number, amounts: number[]): number[] {
  const sum = BigInt(amounts.reduce((a, b) => a + b, 0))
  if (total <= 0 || sum === 0n) return amounts.map(() => 0)
  const exact = amounts.map((a) => BigInt(total) * BigInt(a))
  const shares = exact.map((e) => Number(e / sum))
  let left = total - shares.reduce((a, b) => a + b, 0)
  const byRemainder = exact
    .map((e, i) => ({ i, r: e % sum }))
    .sort((x, y) => (x.r === y.r ? x.i - y.i : x.r > y.r ? -1 : 1))
  for (const { i } of byRemainder) {
    if (left === 0) break
    shares[i]! += 1
    left -= 1
  }
  return shares
}

export interface CreditFigures {
  line_items: LineItem[]
  discounts: Discount[]
  sub_total: number
  taxes: InvoiceEstimate['taxes']
  total: number
  currency_code: string
}

export interface ChargedInvoice {
  id: string
  line_items: LineItem[]
  discounts: Discount[]
  taxes: InvoiceEstimate['taxes']
  currency_code: string
  period_start: Date
  period_end: Date
}

/**
 * The unused share at `now` of what `invoice` charged, per line, prorated half-up; tax on what is
 * credited. Never more than was paid (docs/adr/0006-credit-never-exceeds-payment.md).
 */
export function creditFor(invoice: ChargedInvoice, now: Date): CreditFigures {
  const share = remainingShare(invoice.period_start, invoice.period_end, now)
  const coupons = invoice.discounts.filter((d) => d.entity_type !== 'promotional_credits')
  // An invoice whose lines carry no discount: its discounts spread over the lines.
  const recorded = invoice.line_items.some((l) => l.discount_amount !== undefined)
  const spread = allocate(
    coupons.reduce((sum, d) => sum + d.amount, 0),
    invoice.line_items.map((l) => l.amount),
  )
  const lines: LineItem[] = invoice.line_items.map((l, i) => {
    const amount = prorate(l.amount, share)
    const charged = prorate(l.amount - (recorded ? (l.discount_amount ?? 0) : spread[i]!), share)
    const { discount_amount: _, ...line } = l
    return { ...line, amount, ...(amount > charged ? { discount_amount: amount - charged } : {}) }
  })
  const perLine = lines.map((l) => l.discount_amount ?? 0)
  const discount = perLine.reduce((sum, d) => sum + d, 0)
  const subTotal = lines.reduce((sum, l) => sum + l.amount, 0)
  const tax = invoice.taxes[0]
  const taxes = tax
    ? taxLines(lines, perLine, { name: tax.name, rate_bp: Math.round(tax.rate * 100), exempt_reason: null })
    : []
  const taxed = subTotal - discount + taxes.reduce((sum, t) => sum + t.amount, 0)
  // Promotional credits paid part of the term: their unused share is not credited back as money.
  const promo = Math.min(taxed, prorate(promotionalCreditsTaken(invoice.discounts), share))
  const description = coupons.map((d) => d.description).join(', ')
  return {
    line_items: lines,
    discounts: [
      ...(discount > 0 ? [{ description, amount: discount }] : []),
      ...(promo > 0 ? [promotionalDiscount(promo)] : []),
    ],
    sub_total: subTotal,
    taxes,
    total: taxed - promo,
    currency_code: invoice.currency_code,
  }
}

/** What an estimate shows when the choice bills nothing. */
export function noInvoice(currency: string): InvoiceEstimate {
  return {
    line_items: [],
    discounts: [],
    sub_total: 0,
    taxes: [],
    total: 0,
    credits_applied: 0,
    amount_due: 0,
    currency_code: currency,
  }
}
