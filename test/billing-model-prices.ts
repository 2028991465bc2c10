/**
 * The catalogue and the arithmetic of the billing model (billing-model.ts), written from
 * docs/billing.md: prices in minor units, proration to the second, half-up per line, coupons,
 * per-line tax and the term calendar. Independent of the engine's code on purpose.
 */

export type Unit = 'month' | 'year'
export interface PlanSpec {
  price: number
  unit: Unit
}
export interface AddonSpec {
  price: number
  unit: Unit
}

/** Catalogue prices in minor units (cents), with odd cents so that proration rounds. */
export const PLANS = {
  monthly: { price: 2990, unit: 'month' },
  monthlyLow: { price: 1501, unit: 'month' },
  yearly: { price: 30000, unit: 'year' },
  yearlyLow: { price: 9999, unit: 'year' },
} as const satisfies Record<string, PlanSpec>
export type PlanKey = keyof typeof PLANS
export const ADDONS = {
  month: { price: 499, unit: 'month' },
  year: { price: 4999, unit: 'year' },
} as const satisfies Record<Unit, AddonSpec>

/**
 * Coupons: a percentage (of every invoice it applies to) and fixed amounts (whole, once per
 * billing period and target; a credit gives back the unused share of what was charged, so of
 * what they took off too),
 * forever, one_time or limited_period (3 months); on the invoice amount, or on specified items
 * (`on`: the plans and addons it names; each named line is discounted and taxed on its own).
 */
export interface CouponSpec {
  type: 'percentage' | 'fixed_amount'
  value: number
  duration: 'forever' | 'one_time' | 'limited_period'
  on?: { plans: PlanKey[]; addons: Unit[] }
}
export const COUPONS = {
  percent: { type: 'percentage', value: 2500, duration: 'forever' },
  fixed: { type: 'fixed_amount', value: 1000, duration: 'forever' },
  percentOnce: { type: 'percentage', value: 5000, duration: 'one_time' },
  fixedThreeMonths: { type: 'fixed_amount', value: 700, duration: 'limited_period' },
  fixedEachItem: {
    type: 'fixed_amount',
    value: 1000,
    duration: 'forever',
    on: { plans: ['monthly', 'yearlyLow'], addons: ['month', 'year'] },
  },
  percentItems: {
    type: 'percentage',
    value: 2000,
    duration: 'limited_period',
    on: { plans: ['monthlyLow', 'yearly'], addons: [] },
  },
} as const satisfies Record<string, CouponSpec>
export const LIMITED_MONTHS = 3
export type CouponKey = keyof typeof COUPONS

/** What a company's use of a coupon is (kept while the coupon is off, resumed when it is back); `taken` by target. */
export interface CouponUse {
  count: number
  till: number | null
  periodStart: number | null
  taken: Record<string, number>
}

/** plan × quantity, plus the addon of the plan's period (quantity 1) when `addon`, and a coupon. */
export interface Selection {
  plan: PlanKey
  quantity: number
  addon: boolean
  coupon: CouponKey | null
}

export type CardKind = 'none' | 'good' | 'fails'
export type Status = 'in_trial' | 'active' | 'non_renewing' | 'cancelled'

export const DAY_MS = 86_400_000
export const RETRY_DAYS = [1, 3, 5]

/** v × num / den, half-up, in integers. */
function roundHalfUp(v: number, num: number, den: number): number {
  return Number((2n * BigInt(v) * BigInt(num) + BigInt(den)) / (2n * BigInt(den)))
}

/**
 * `total` shared among `amounts` in proportion, rounded down, the units left going one each to
 * the largest remainders (the first on a tie): how a discount on the invoice amount is spread
 * over the lines before each line's tax (docs/billing.md, "Per line").
 */
function spread(total: number, amounts: number[]): number[] {
  const sum = amounts.reduce((a, b) => a + b, 0)
  if (total <= 0 || sum === 0) return amounts.map(() => 0)
  const shares = amounts.map((a) => Math.floor((total * a) / sum))
  let left = total - shares.reduce((a, b) => a + b, 0)
  const order = amounts.map((a, i) => ({ i, r: (total * a) % sum })).sort((x, y) => y.r - x.r || x.i - y.i)
  for (const { i } of order) {
    if (left === 0) break
    shares[i]! += 1
    left -= 1
  }
  return shares
}

/** How the coupon stands for one invoice: whether it applies, what a fixed amount has taken in the period (by target). */
export interface CouponTerms {
  applies: boolean
  taken: Record<string, number>
}
export const NO_COUPON: CouponTerms = { applies: false, taken: {} }

/**
 * An invoice of a selection for `left` of `len` seconds of a term: each line prorated, half-up;
 * the coupon, when it applies, off the sub-total or off each named line (a percentage half-up; a
 * fixed amount what its target has not taken in the period); each line taxed
 * on its amount less its part of the discount (rate in basis points; null: no tax line).
 * `taken`: what a fixed amount took, by target.
 */
export function invoiceOf(
  sel: Selection,
  left: number,
  len: number,
  rateBp: number | null,
  terms: CouponTerms,
): { total: number; discount: number; taken: Record<string, number>; lines: number[]; shares: number[] } {
  const plan = PLANS[sel.plan]
  const targets = [`plan:${sel.plan}`, ...(sel.addon ? [`addon:${plan.unit}`] : [])]
  const lines = [plan.price * sel.quantity, ...(sel.addon ? [ADDONS[plan.unit].price] : [])].map((line) =>
    roundHalfUp(line, left, len),
  )
  const subTotal = lines.reduce((a, b) => a + b, 0)
  const coupon: CouponSpec | null = sel.coupon === null || !terms.applies ? null : COUPONS[sel.coupon]
  const taken: Record<string, number> = {}
  const off = (base: number, target: string) => {
    if (!coupon) return 0
    if (coupon.type === 'percentage') return roundHalfUp(base, coupon.value, 10_000)
    const amount = Math.min(base, Math.max(0, coupon.value - (terms.taken[target] ?? 0)))
    if (amount > 0) taken[target] = amount
    return amount
  }
  const named = (target: string) => {
    const [kind, key] = target.split(':') as ['plan' | 'addon', string]
    return kind === 'plan'
      ? (coupon!.on!.plans as readonly string[]).includes(key)
      : (coupon!.on!.addons as readonly string[]).includes(key)
  }
  const shares = !coupon
    ? lines.map(() => 0)
    : coupon.on
      ? lines.map((line, i) => (named(targets[i]!) ? off(line, targets[i]!) : 0))
      : spread(off(subTotal, 'invoice'), lines)
  const discount = shares.reduce((a, b) => a + b, 0)
  const tax =
    rateBp === null ? 0 : lines.reduce((sum, line, i) => sum + roundHalfUp(line - shares[i]!, rateBp, 10_000), 0)
  return { total: subTotal - discount + tax, discount, taken, lines, shares }
}

/**
 * A credit: the unused share of what an invoice charged (decisions §9.1, docs/billing.md "Credit"):
 * each line's amount and what was charged for it (amount less its discount) prorated by `left`
 * of the invoice period's `len` seconds, half-up; each line taxed on what is credited for it at
 * the invoice's rate.
 */
export function creditOf(
  invoice: { lines: number[]; shares: number[]; rateBp: number | null },
  left: number,
  len: number,
): number {
  return invoice.lines.reduce((sum, line, i) => {
    const charged = roundHalfUp(line - invoice.shares[i]!, left, len)
    return sum + charged + (invoice.rateBp === null ? 0 : roundHalfUp(charged, invoice.rateBp, 10_000))
  }, 0)
}

/** Whether a coupon on specified items names none of a selection's items (it is then refused when put on). */
export function namesNoneOf(sel: Selection): boolean {
  const on = sel.coupon === null ? undefined : (COUPONS[sel.coupon] as CouponSpec).on
  if (!on) return false
  return !on.plans.includes(sel.plan) && !(sel.addon && on.addons.includes(PLANS[sel.plan].unit))
}

/** What a selection's time is worth without any coupon. */
export function priceOf(sel: Selection, left: number, len: number, rateBp: number | null): number {
  return invoiceOf(sel, left, len, rateBp, NO_COUPON).total
}

/** `months` months after `at`, on the same day or the month's last day, UTC. */
export function monthsAfter(at: number, months: number): number {
  const d = new Date(at)
  const total = d.getUTCFullYear() * 12 + d.getUTCMonth() + months
  const last = new Date(Date.UTC(Math.floor(total / 12), (total % 12) + 1, 0)).getUTCDate()
  return Date.UTC(
    Math.floor(total / 12),
    total % 12,
    Math.min(d.getUTCDate(), last),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
    d.getUTCMilliseconds(),
  )
}

/** One period later on the anchor day, or the month's last day when shorter; UTC, same time of day. */
export function nextTermEnd(start: number, unit: Unit, anchorDay: number): number {
  const d = new Date(start)
  const months = d.getUTCFullYear() * 12 + d.getUTCMonth() + (unit === 'year' ? 12 : 1)
  const year = Math.floor(months / 12)
  const month = months % 12
  const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate()
  return Date.UTC(
    year,
    month,
    Math.min(anchorDay, last),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
    d.getUTCMilliseconds(),
  )
}
