import type { SubscriptionRow } from '../../db/tables.ts'

// Coupon durations and targets as Chargebee has them. `limited_period` counts from the first period
// discounted, so a coupon added in a trial gives N whole periods; a discounted period keeps the coupon
// for every change within it.

export type DurationType = 'one_time' | 'forever' | 'limited_period'
export type ApplyOn = 'invoice_amount' | 'each_specified_item'

export interface CouponTerms {
  duration_type: DurationType
  duration_month: number | null
  apply_on: ApplyOn
  plan_ids: string[]
  addon_ids: string[]
}

/** Chargebee's subscription.coupons[], plus what fixed amounts took this period, by `lineKey`. */
export interface CouponUsage {
  applied_at: Date | null
  applied_count: number
  apply_till: Date | null
  period_start: Date | null
  period_discounts: Record<string, number>
}

export function freshUsage(appliedAt: Date | null): CouponUsage {
  return { applied_at: appliedAt, applied_count: 0, apply_till: null, period_start: null, period_discounts: {} }
}

export function discountsPeriod(usage: CouponUsage, periodStart: Date | null): boolean {
  return periodStart !== null && usage.period_start !== null && usage.period_start.getTime() === periodStart.getTime()
}

/** `periodStart` null: a period not placed in time yet (a new subscription's first term). */
export function couponAppliesTo(coupon: CouponTerms, usage: CouponUsage, periodStart: Date | null): boolean {
  if (discountsPeriod(usage, periodStart)) return true
  switch (coupon.duration_type) {
    case 'forever':
      return true
    case 'one_time':
      return usage.applied_count === 0
    case 'limited_period':
      if (usage.apply_till === null) return usage.applied_count === 0
      return periodStart === null || periodStart.getTime() < usage.apply_till.getTime()
  }
}

/** Every line, when the coupon applies on the invoice amount. */
export function targets(coupon: CouponTerms, line: { entity_type: 'plan' | 'addon'; entity_id: string }): boolean {
  if (coupon.apply_on === 'invoice_amount') return true
  return line.entity_type === 'plan'
    ? coupon.plan_ids.includes(line.entity_id)
    : coupon.addon_ids.includes(line.entity_id)
}

export function lineKey(
  coupon: CouponTerms,
  line: { entity_type: 'plan' | 'addon'; entity_id: string } | null,
): string {
  return coupon.apply_on === 'invoice_amount' || line === null ? 'invoice' : `${line.entity_type}:${line.entity_id}`
}

/** The usage after an invoice; one with no discount leaves it unchanged: the coupon was not used. */
export function afterInvoice(
  coupon: CouponTerms,
  usage: CouponUsage,
  periodStart: Date,
  discounted: number,
  taken: Record<string, number>,
): CouponUsage {
  if (discounted <= 0) return usage
  const same = discountsPeriod(usage, periodStart)
  const sums: Record<string, number> = same ? { ...usage.period_discounts } : {}
  for (const [key, amount] of Object.entries(taken)) sums[key] = (sums[key] ?? 0) + amount
  return {
    applied_at: usage.applied_at ?? periodStart,
    applied_count: same ? usage.applied_count : usage.applied_count + 1,
    apply_till:
      usage.apply_till ??
      (coupon.duration_type === 'limited_period' && coupon.duration_month !== null
        ? monthsAfter(periodStart, coupon.duration_month)
        : null),
    period_start: periodStart,
    period_discounts: sums,
  }
}

/** Same day, or the month's last day (Jan 31 + 1 → Feb 28/29), in UTC. */
export function monthsAfter(start: Date, months: number): Date {
  const total = start.getUTCFullYear() * 12 + start.getUTCMonth() + months
  const year = Math.floor(total / 12)
  const month = total % 12
  const day = Math.min(start.getUTCDate(), new Date(Date.UTC(year, month + 1, 0)).getUTCDate())
  return new Date(
    Date.UTC(
      year,
      month,
      day,
      start.getUTCHours(),
      start.getUTCMinutes(),
      start.getUTCSeconds(),
      start.getUTCMilliseconds(),
    ),
  )
}

export function usageOf(s: SubscriptionRow): CouponUsage {
  return {
    applied_at: s.coupon_applied_at,
    applied_count: s.coupon_applied_count,
    apply_till: s.coupon_apply_till,
    period_start: s.coupon_period_start,
    period_discounts: s.coupon_period_discounts ?? {},
  }
}

export function usageColumns(
  u: CouponUsage,
): Pick<
  SubscriptionRow,
  'coupon_applied_at' | 'coupon_applied_count' | 'coupon_apply_till' | 'coupon_period_start' | 'coupon_period_discounts'
> {
  return {
    coupon_applied_at: u.applied_at,
    coupon_applied_count: u.applied_count,
    coupon_apply_till: u.apply_till,
    coupon_period_start: u.period_start,
    coupon_period_discounts: u.period_discounts,
  }
}

export function usageToJson(u: CouponUsage): string {
  return JSON.stringify(u)
}

export function usageFromJson(value: Record<string, unknown> | null | undefined): CouponUsage | null {
  if (!value) return null
  const at = (v: unknown) => (typeof v === 'string' ? new Date(v) : null)
  return {
    applied_at: at(value.applied_at),
    applied_count: Number(value.applied_count ?? 0),
    apply_till: at(value.apply_till),
    period_start: at(value.period_start),
    period_discounts: (value.period_discounts as Record<string, number> | undefined) ?? {},
  }
}
