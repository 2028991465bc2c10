import type { SubscriptionStatus } from '../../../db/tables.ts'
import { couponAppliesTo, discountsPeriod, freshUsage, lineKey, targets, type CouponTerms, type CouponUsage } from './coupons.ts'

/**
 * The arithmetic of an invoice, in integer cents: the one function behind both an estimate (9)
 * and the change an update (6) applies, so that they cannot disagree.
 *
 * Rounding: every line is rounded on its own, half-up, to the cent (a prorated line, a
 * discount, a tax); totals are sums of rounded lines. Proration multiplies by a fraction of
 * whole seconds (seconds left in the term / seconds in the term), exactly, in BigInt.
 */

export interface PricedPlan { sku: string; name: string; price_cents: number; period_unit: 'month' | 'year' }
export interface PricedAddon { id: string; name: string; price_cents: number; quantity: number }
export interface PricedCoupon extends CouponTerms { id: string; code: string; name: string; discount_type: 'percentage' | 'fixed_amount'; discount_value_minor: number }

/** What a subscription is made of, with the catalogue's prices: the input of every invoice. */
export interface PricedSelection {
  plan: PricedPlan
  quantity: number
  addons: PricedAddon[]
  coupon: PricedCoupon | null
}

/** A VAT rate in basis points (22 % = 2200) and the name its tax line carries. */
export interface TaxRate { name: string; rate_bp: number }

export interface LineItem { entity_type: 'plan' | 'addon'; entity_id: string; description: string; unit_amount: number; quantity: number; amount: number }

export interface InvoiceEstimate {
  line_items: LineItem[]
  discounts: { description: string; amount: number }[]
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

/** A share of a term: `num / den` (seconds left / seconds in the term); the whole term is 1/1. */
export interface Fraction { num: bigint; den: bigint }
export const WHOLE: Fraction = { num: 1n, den: 1n }

/** `value × num / den` rounded half-up to an integer (non-negative values only). */
export function roundHalfUp(value: bigint, num: bigint, den: bigint): number {
  return Number((2n * value * num + den) / (2n * den))
}

export function prorate(amount: number, share: Fraction): number {
  return roundHalfUp(BigInt(amount), share.num, share.den)
}

/** The seconds left in a term at `now` over the term's seconds (0 when it is over). */
export function remainingShare(termStart: Date, termEnd: Date, now: Date): Fraction {
  const length = Math.max(1, Math.floor((termEnd.getTime() - termStart.getTime()) / 1000))
  const left = Math.min(length, Math.max(0, Math.floor((termEnd.getTime() - now.getTime()) / 1000)))
  return { num: BigInt(left), den: BigInt(length) }
}

/**
 * The billing period an invoice belongs to and what the subscription's coupon has done so far
 * (coupons.ts). `credit`: the invoice is the unused part of charges already billed, to be
 * credited: a fixed amount applies whole once per period and is not given back, so only a
 * percentage discounts it.
 */
export interface CouponContext { periodStart: Date | null; usage: CouponUsage; credit?: boolean }

/** A new subscription's first period: a coupon that has discounted nothing yet. */
export const FIRST_PERIOD: CouponContext = { periodStart: null, usage: freshUsage(null) }

/**
 * What the coupon takes off lines already priced for the period: nothing unless it applies to
 * the period (`couponAppliesTo`); a percentage of each targeted amount (of the sub-total when it
 * applies on the invoice amount), half-up; a fixed amount whole, never prorated, once per period
 * per target: what an earlier invoice of the same period took is deducted, so only a surplus
 * comes back (Chargebee's fixed amount coupons). `taken`: the fixed amounts taken, by line key.
 */
export function couponDiscount(coupon: PricedCoupon | null, lines: Pick<LineItem, 'entity_type' | 'entity_id' | 'amount'>[], ctx: CouponContext): { amount: number; taken: Record<string, number> } {
  if (!coupon || !couponAppliesTo(coupon, ctx.usage, ctx.periodStart)) return { amount: 0, taken: {} }
  const taken: Record<string, number> = {}
  const off = (base: number, key: string): number => {
    if (coupon.discount_type === 'percentage') return Math.min(base, roundHalfUp(BigInt(base), BigInt(coupon.discount_value_minor), 10_000n))
    if (ctx.credit) return 0
    const used = discountsPeriod(ctx.usage, ctx.periodStart) ? ctx.usage.period_discounts[key] ?? 0 : 0
    const amount = Math.min(base, Math.max(0, coupon.discount_value_minor - used))
    if (amount > 0) taken[key] = (taken[key] ?? 0) + amount
    return amount
  }
  const amount = coupon.apply_on === 'invoice_amount'
    ? off(lines.reduce((sum, l) => sum + l.amount, 0), lineKey(coupon, null))
    : lines.filter((l) => targets(coupon, l)).reduce((sum, l) => sum + off(l.amount, lineKey(coupon, l)), 0)
  return { amount, taken }
}

/**
 * The invoice of a selection for `share` of a term, less `credit` (cents) of unused earlier
 * charges; `period` places it in time for the coupon (default: a first period, nothing used).
 */
export function invoiceFor(selection: PricedSelection, share: Fraction, tax: TaxRate | null, currency: string, credit = 0, period: CouponContext = FIRST_PERIOD): InvoiceEstimate {
  const line = (entity_type: LineItem['entity_type'], entity_id: string, description: string, unit: number, quantity: number): LineItem =>
    ({ entity_type, entity_id, description, unit_amount: unit, quantity, amount: prorate(unit * quantity, share) })
  const lineItems = [
    line('plan', selection.plan.sku, selection.plan.name, selection.plan.price_cents, selection.quantity),
    ...selection.addons.map((a) => line('addon', a.id, a.name, a.price_cents, a.quantity)),
  ]
  const subTotal = lineItems.reduce((sum, l) => sum + l.amount, 0)

  const discounts: InvoiceEstimate['discounts'] = []
  const coupon = selection.coupon
  const discount = couponDiscount(coupon, lineItems, period).amount
  if (coupon && discount > 0) discounts.push({ description: `${coupon.name} (${coupon.code})`, amount: discount })

  const taxable = subTotal - discount
  const taxes = tax ? [{ name: tax.name, rate: tax.rate_bp / 100, amount: roundHalfUp(BigInt(taxable), BigInt(tax.rate_bp), 10_000n) }] : []
  const total = taxable + taxes.reduce((sum, t) => sum + t.amount, 0)
  const creditsApplied = Math.min(Math.max(0, credit), total)
  return {
    line_items: lineItems, discounts, sub_total: subTotal, taxes, total,
    credits_applied: creditsApplied, amount_due: total - creditsApplied, currency_code: currency,
  }
}

/** No invoice: what an estimate shows when the choice bills nothing (a trial set to end cancelled). */
export function noInvoice(currency: string): InvoiceEstimate {
  return { line_items: [], discounts: [], sub_total: 0, taxes: [], total: 0, credits_applied: 0, amount_due: 0, currency_code: currency }
}

/** `IT:22,DE:19,CH:8.1` → country → rate in basis points. */
export function parseVatRates(setting: string): Map<string, number> {
  const rates = new Map<string, number>()
  for (const entry of setting.split(',').map((s) => s.trim()).filter(Boolean)) {
    const match = /^([A-Z]{2}):(\d{1,3}(?:\.\d{1,2})?)$/.exec(entry)
    if (!match) throw new Error(`Invalid configuration: VAT_RATES entry "${entry}" must look like IT:22`)
    rates.set(match[1]!, Math.round(Number(match[2]) * 100))
  }
  return rates
}
