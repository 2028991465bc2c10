import type { SubscriptionRow } from '../../../db/tables.ts'

/**
 * Coupon durations and targets, as Chargebee has them, for the local engine: which billing
 * periods a coupon discounts, and what the subscription remembers of it. Pure functions; the
 * amounts are computed by the invoice arithmetic (estimate.ts `couponDiscount`), which asks
 * `couponAppliesTo` first.
 *
 * - `forever`: every period while the subscription holds the coupon.
 * - `one_time`: the first period it discounts, only.
 * - `limited_period` of N months: the periods that start before N months after the start of
 *   the first period it discounts (`apply_till`, set then): N periods of a monthly plan, one of
 *   a yearly plan (N ≤ 12). Counted from the first period discounted, not from when it was put
 *   on, so a coupon added during a trial gives N whole periods from the trial's end.
 * - A period it discounts keeps it for every change made within that period (a mid-term change
 *   and the credit of the unused part are computed with the same coupon state).
 */

export type DurationType = 'one_time' | 'forever' | 'limited_period'
export type ApplyOn = 'invoice_amount' | 'each_specified_item'

/** The coupon fields that decide when and on what it applies. */
export interface CouponTerms {
  duration_type: DurationType
  duration_month: number | null
  apply_on: ApplyOn
  plan_ids: string[]
  addon_ids: string[]
}

/**
 * What a subscription remembers of its coupon (Chargebee's subscription.coupons[]: `applied_count`,
 * `apply_till`): when it was put on, how many billing periods it has discounted, until when a
 * limited_period one applies, which period it discounted last, and what a fixed amount has
 * already taken off in that period, by line key (`lineKey`).
 */
export interface CouponUsage {
  applied_at: Date | null
  applied_count: number
  apply_till: Date | null
  period_start: Date | null
  period_discounts: Record<string, number>
}

/** A coupon just put on (or none): nothing discounted yet. */
export function freshUsage(appliedAt: Date | null): CouponUsage {
  return { applied_at: appliedAt, applied_count: 0, apply_till: null, period_start: null, period_discounts: {} }
}

/** The period starting at `periodStart` is one the coupon has already discounted. */
export function discountsPeriod(usage: CouponUsage, periodStart: Date | null): boolean {
  return periodStart !== null && usage.period_start !== null && usage.period_start.getTime() === periodStart.getTime()
}

/**
 * True when the coupon discounts the billing period starting at `periodStart` (null: a period
 * not placed in time yet, as a new subscription's first term).
 */
export function couponAppliesTo(coupon: CouponTerms, usage: CouponUsage, periodStart: Date | null): boolean {
  if (discountsPeriod(usage, periodStart)) return true
  switch (coupon.duration_type) {
    case 'forever': return true
    case 'one_time': return usage.applied_count === 0
    case 'limited_period':
      if (usage.apply_till === null) return usage.applied_count === 0
      return periodStart === null || periodStart.getTime() < usage.apply_till.getTime()
  }
}

/** Whether a line is one the coupon targets (every line when it applies on the invoice amount). */
export function targets(coupon: CouponTerms, line: { entity_type: 'plan' | 'addon'; entity_id: string }): boolean {
  if (coupon.apply_on === 'invoice_amount') return true
  return line.entity_type === 'plan' ? coupon.plan_ids.includes(line.entity_id) : coupon.addon_ids.includes(line.entity_id)
}

/** The key under which a fixed amount's use in a period is remembered. */
export function lineKey(coupon: CouponTerms, line: { entity_type: 'plan' | 'addon'; entity_id: string } | null): string {
  return coupon.apply_on === 'invoice_amount' || line === null ? 'invoice' : `${line.entity_type}:${line.entity_id}`
}

/**
 * The usage after an invoice for the period starting at `periodStart` took `taken` off (by
 * line key; fixed amounts only, percentages need no memory) and `discounted` in all. An invoice
 * with no discount leaves it as it was: a coupon that discounted nothing has not been used.
 */
export function afterInvoice(coupon: CouponTerms, usage: CouponUsage, periodStart: Date, discounted: number, taken: Record<string, number>): CouponUsage {
  if (discounted <= 0) return usage
  const same = discountsPeriod(usage, periodStart)
  const sums: Record<string, number> = same ? { ...usage.period_discounts } : {}
  for (const [key, amount] of Object.entries(taken)) sums[key] = (sums[key] ?? 0) + amount
  return {
    applied_at: usage.applied_at ?? periodStart,
    applied_count: same ? usage.applied_count : usage.applied_count + 1,
    apply_till: usage.apply_till ?? (coupon.duration_type === 'limited_period' && coupon.duration_month !== null ? monthsAfter(periodStart, coupon.duration_month) : null),
    period_start: periodStart,
    period_discounts: sums,
  }
}

/** `months` months after `start`, on the same day or the month's last day (Jan 31 + 1 → Feb 28/29), in UTC. */
export function monthsAfter(start: Date, months: number): Date {
  const total = start.getUTCFullYear() * 12 + start.getUTCMonth() + months
  const year = Math.floor(total / 12)
  const month = total % 12
  const day = Math.min(start.getUTCDate(), new Date(Date.UTC(year, month + 1, 0)).getUTCDate())
  return new Date(Date.UTC(year, month, day, start.getUTCHours(), start.getUTCMinutes(), start.getUTCSeconds(), start.getUTCMilliseconds()))
}

/** The usage a stored subscription carries (migration 0015). */
export function usageOf(s: SubscriptionRow): CouponUsage {
  return {
    applied_at: s.coupon_applied_at, applied_count: s.coupon_applied_count, apply_till: s.coupon_apply_till,
    period_start: s.coupon_period_start, period_discounts: s.coupon_period_discounts ?? {},
  }
}

/** The columns of a usage, to spread into a subscription state. */
export function usageColumns(u: CouponUsage): Pick<SubscriptionRow, 'coupon_applied_at' | 'coupon_applied_count' | 'coupon_apply_till' | 'coupon_period_start' | 'coupon_period_discounts'> {
  return {
    coupon_applied_at: u.applied_at, coupon_applied_count: u.applied_count, coupon_apply_till: u.apply_till,
    coupon_period_start: u.period_start, coupon_period_discounts: u.period_discounts,
  }
}

/** A usage as stored beside the company's redemption of the coupon (dates as ISO strings). */
export function usageToJson(u: CouponUsage): string {
  return JSON.stringify(u)
}

/** A usage read back from its JSON; null when none was kept. */
export function usageFromJson(value: Record<string, unknown> | null | undefined): CouponUsage | null {
  if (!value) return null
  const at = (v: unknown) => (typeof v === 'string' ? new Date(v) : null)
  return {
    applied_at: at(value.applied_at), applied_count: Number(value.applied_count ?? 0), apply_till: at(value.apply_till),
    period_start: at(value.period_start), period_discounts: (value.period_discounts as Record<string, number> | undefined) ?? {},
  }
}
