/**
 * A subscription's MRR (decisions §9.4): the one place its arithmetic lives. It takes plain lines,
 * so a new pricing model only changes how a line's `amount` is reached, not this function.
 */

export type MrrPeriod = 'week' | 'month' | 'year'

export interface MrrLine {
  kind: 'plan' | 'addon'
  /** The plan's sku or the addon's id, as a coupon's plan_ids and addon_ids name them. */
  id: string
  /** What the line recurs at each `period`, in minor units, before discount and tax. */
  amount: number
  period: MrrPeriod
}

export interface MrrCoupon {
  discount_type: 'percentage' | 'fixed_amount'
  /** Basis points for a percentage (10000 = 100 %), minor units for a fixed amount. */
  discount_value_minor: number
  apply_on: 'invoice_amount' | 'each_specified_item'
  plan_ids: readonly string[]
  addon_ids: readonly string[]
  /** The period a fixed amount is taken off once in: the invoice's, which is the plan's. */
  period: MrrPeriod
}

export interface MrrInput {
  status: string
  lines: MrrLine[]
  /** A coupon recurring now (forever, or limited_period while it lasts); null when none or one_time. */
  coupon: MrrCoupon | null
}

const COUNTED = new Set(['active', 'non_renewing'])
// A period's amount × TWELFTHS ÷ 12 is its monthly amount, exact in integers.
const TWELFTHS: Record<MrrPeriod, bigint> = { week: 52n, month: 12n, year: 1n }
const BP = 10_000n

/** Minor units a month, rounded half-up once per subscription; 0 unless active or non_renewing. */
export function subscriptionMrr(input: MrrInput): number {
  if (!COUNTED.has(input.status)) return 0
  // Everything in units of 1 / (12 × 10000) of a minor unit a month, so only the end rounds.
  const monthly = (line: MrrLine) => BigInt(Math.max(0, line.amount)) * TWELFTHS[line.period] * BP
  const lines = input.lines.map(monthly)
  const gross = lines.reduce((sum, l) => sum + l, 0n)
  const coupon = input.coupon
  let discount = 0n
  if (coupon) {
    const targeted = (line: MrrLine) =>
      coupon.apply_on === 'invoice_amount' ||
      (line.kind === 'plan' ? coupon.plan_ids.includes(line.id) : coupon.addon_ids.includes(line.id))
    const off = (base: bigint) => {
      if (coupon.discount_type === 'percentage') {
        const pct = BigInt(Math.min(Math.max(coupon.discount_value_minor, 0), 10_000))
        return (base * pct) / BP
      }
      const fixed = BigInt(Math.max(coupon.discount_value_minor, 0)) * TWELFTHS[coupon.period] * BP
      return fixed < base ? fixed : base
    }
    if (coupon.apply_on === 'invoice_amount') discount = off(gross)
    else discount = input.lines.reduce((sum, line, i) => sum + (targeted(line) ? off(lines[i]!) : 0n), 0n)
  }
  const net = gross - discount
  const den = 12n * BP
  return Number((2n * net + den) / (2n * den))
}
