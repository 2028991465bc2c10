/**
 * A model of the local billing engine for the property test (billing-properties.test.ts), written
 * from docs/billing.md and not from the engine's code: what a subscription is, when its terms
 * end, what each plan period used costs, and which requests are refused. The test drives the
 * service and this model with the same story and compares them.
 *
 * What a period "used": a term of a selection costs its whole price (lines prorated, tax per
 * line, half-up, to the minor unit). Changed mid-term at x, the part from x on is priced at the
 * time left: the old selection's use is its price of the time left at its start less its price
 * of the time left at x; a change of billing period ends the term at x and starts a new one, billed
 * whole. A cancellation gives nothing back (the term stays paid), as the docs say. Coupons
 * take their part off each invoice and each credit they apply to (docs/billing.md, "Coupons:
 * duration and targets"): the cost is the periods' price without coupons less what they took.
 */

export type Unit = 'month' | 'year'
export interface PlanSpec { price: number; unit: Unit }
export interface AddonSpec { price: number; unit: Unit }

/** Catalogue prices in minor units (cents), with odd cents so that proration rounds. */
export const PLANS = {
  monthly: { price: 2990, unit: 'month' },
  monthlyLow: { price: 1501, unit: 'month' },
  yearly: { price: 30000, unit: 'year' },
  yearlyLow: { price: 9999, unit: 'year' },
} as const satisfies Record<string, PlanSpec>
export type PlanKey = keyof typeof PLANS
export const ADDONS = { month: { price: 499, unit: 'month' }, year: { price: 4999, unit: 'year' } } as const satisfies Record<Unit, AddonSpec>

/**
 * Coupons: a percentage (of every invoice it applies to, and of the credit of charges it
 * discounted) and fixed amounts (whole, once per billing period and target, never off a credit),
 * forever, one_time or limited_period (3 months); on the invoice amount, or on specified items
 * (`on`: the plans and addons it names; each named line is discounted and taxed on its own).
 */
export interface CouponSpec { type: 'percentage' | 'fixed_amount'; value: number; duration: 'forever' | 'one_time' | 'limited_period'; on?: { plans: PlanKey[]; addons: Unit[] } }
export const COUPONS = {
  percent: { type: 'percentage', value: 2500, duration: 'forever' },
  fixed: { type: 'fixed_amount', value: 1000, duration: 'forever' },
  percentOnce: { type: 'percentage', value: 5000, duration: 'one_time' },
  fixedThreeMonths: { type: 'fixed_amount', value: 700, duration: 'limited_period' },
  fixedEachItem: { type: 'fixed_amount', value: 1000, duration: 'forever', on: { plans: ['monthly', 'yearlyLow'], addons: ['month', 'year'] } },
  percentItems: { type: 'percentage', value: 2000, duration: 'limited_period', on: { plans: ['monthlyLow', 'yearly'], addons: [] } },
} as const satisfies Record<string, CouponSpec>
export const LIMITED_MONTHS = 3
export type CouponKey = keyof typeof COUPONS

/** What a company's use of a coupon is (kept while the coupon is off, resumed when it is back); `taken` by target. */
interface CouponUse { count: number; till: number | null; periodStart: number | null; taken: Record<string, number> }

/** plan × quantity, plus the addon of the plan's period (quantity 1) when `addon`, and a coupon. */
export interface Selection { plan: PlanKey; quantity: number; addon: boolean; coupon: CouponKey | null }

export type CardKind = 'none' | 'good' | 'fails'
export type Status = 'in_trial' | 'active' | 'non_renewing' | 'cancelled'

const DAY_MS = 86_400_000
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

/** How the coupon stands for one invoice: whether it applies, what a fixed amount has taken in the period (by target), whether the invoice is a credit. */
interface CouponTerms { applies: boolean; taken: Record<string, number>; credit: boolean }
const NO_COUPON: CouponTerms = { applies: false, taken: {}, credit: false }

/**
 * An invoice of a selection for `left` of `len` seconds of a term: each line prorated, half-up;
 * the coupon, when it applies, off the sub-total or off each named line (a percentage half-up; a
 * fixed amount what its target has not taken in the period, never off a credit); each line taxed
 * on its amount less its part of the discount (rate in basis points; null: no tax line).
 * `taken`: what a fixed amount took, by target.
 */
export function invoiceOf(sel: Selection, left: number, len: number, rateBp: number | null, terms: CouponTerms): { total: number; discount: number; taken: Record<string, number> } {
  const plan = PLANS[sel.plan]
  const targets = [`plan:${sel.plan}`, ...(sel.addon ? [`addon:${plan.unit}`] : [])]
  const lines = [plan.price * sel.quantity, ...(sel.addon ? [ADDONS[plan.unit].price] : [])].map((line) => roundHalfUp(line, left, len))
  const subTotal = lines.reduce((a, b) => a + b, 0)
  const coupon: CouponSpec | null = sel.coupon === null || !terms.applies ? null : COUPONS[sel.coupon]
  const taken: Record<string, number> = {}
  const off = (base: number, target: string) => {
    if (!coupon) return 0
    if (coupon.type === 'percentage') return roundHalfUp(base, coupon.value, 10_000)
    if (terms.credit) return 0
    const amount = Math.min(base, Math.max(0, coupon.value - (terms.taken[target] ?? 0)))
    if (amount > 0) taken[target] = amount
    return amount
  }
  const named = (target: string) => {
    const [kind, key] = target.split(':') as ['plan' | 'addon', string]
    return kind === 'plan' ? (coupon!.on!.plans as readonly string[]).includes(key) : (coupon!.on!.addons as readonly string[]).includes(key)
  }
  const shares = !coupon ? lines.map(() => 0)
    : coupon.on ? lines.map((line, i) => (named(targets[i]!) ? off(line, targets[i]!) : 0))
    : spread(off(subTotal, 'invoice'), lines)
  const discount = shares.reduce((a, b) => a + b, 0)
  const tax = rateBp === null ? 0 : lines.reduce((sum, line, i) => sum + roundHalfUp(line - shares[i]!, rateBp, 10_000), 0)
  return { total: subTotal - discount + tax, discount, taken }
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
function monthsAfter(at: number, months: number): number {
  const d = new Date(at)
  const total = d.getUTCFullYear() * 12 + d.getUTCMonth() + months
  const last = new Date(Date.UTC(Math.floor(total / 12), total % 12 + 1, 0)).getUTCDate()
  return Date.UTC(Math.floor(total / 12), total % 12, Math.min(d.getUTCDate(), last), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds())
}

/** One period later on the anchor day, or the month's last day when shorter; UTC, same time of day. */
export function nextTermEnd(start: number, unit: Unit, anchorDay: number): number {
  const d = new Date(start)
  const months = d.getUTCFullYear() * 12 + d.getUTCMonth() + (unit === 'year' ? 12 : 1)
  const year = Math.floor(months / 12)
  const month = months % 12
  const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate()
  return Date.UTC(year, month, Math.min(anchorDay, last), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds())
}

const seconds = (ms: number) => Math.floor(ms / 1000)

/** A term and the selections it was billed for, each from `from` at the tax rate of the invoice that billed it. */
interface Term { start: number; end: number; segments: { sel: Selection; from: number; rateBp: number | null }[]; cutAt: number | null }
export interface ModelInvoice { total: number; applied: number; paid: number; due: number; status: 'paid' | 'payment_due' | 'not_paid'; date: number; retry: number }

export class BillingModel {
  status: Status = 'in_trial'
  termStart: number
  termEnd: number
  anchorDay = 0
  cancelScheduled = false
  card: CardKind = 'none'
  credits = 0
  notes: number[] = []
  invoices: ModelInvoice[] = []
  terms: Term[] = []
  /** Each coupon's use by the company, kept while it is off. */
  uses = new Map<CouponKey, CouponUse>()
  /** What coupons took off, in all (their tax effect included): off invoices, less off credits. */
  couponOff = 0

  constructor(public now: number, trialDays: number, public sel: Selection, public rateBp: number | null) {
    this.termStart = now
    this.termEnd = now + trialDays * DAY_MS
  }

  /** What the plan periods used cost: Σ over terms and their segments (see the file's comment), less what coupons took. */
  cost(): number {
    let sum = 0 - this.couponOff
    for (const term of this.terms) {
      const len = seconds(term.end - term.start)
      const until = term.cutAt ?? term.end
      term.segments.forEach((seg, i) => {
        const to = term.segments[i + 1]?.from ?? until
        const left = (at: number) => Math.min(len, Math.max(0, seconds(term.end - at)))
        sum += priceOf(seg.sel, left(seg.from), len, seg.rateBp) - priceOf(seg.sel, left(to), len, seg.rateBp)
      })
    }
    return sum
  }

  private use(key: CouponKey): CouponUse {
    let use = this.uses.get(key)
    if (!use) this.uses.set(key, use = { count: 0, till: null, periodStart: null, taken: {} })
    return use
  }

  /** How `sel`'s coupon stands for an invoice of the period starting at `periodStart`. */
  private couponTerms(sel: Selection, periodStart: number, credit: boolean): CouponTerms {
    if (sel.coupon === null) return NO_COUPON
    const coupon = COUPONS[sel.coupon]
    const use = this.use(sel.coupon)
    const samePeriod = use.periodStart === periodStart
    const applies = samePeriod || coupon.duration === 'forever'
      || (coupon.duration === 'one_time' && use.count === 0)
      || (coupon.duration === 'limited_period' && (use.till === null ? use.count === 0 : periodStart < use.till))
    return { applies, taken: samePeriod ? use.taken : {}, credit }
  }

  /** The unused part of the current term, credited: its price at the time left, with the coupon and the tax it was billed with. */
  private credit(sel: Selection, left: number, len: number): number {
    const rateBp = this.terms.at(-1)!.segments.at(-1)!.rateBp
    const { total } = invoiceOf(sel, left, len, rateBp, this.couponTerms(sel, this.termStart, true))
    this.couponOff -= priceOf(sel, left, len, rateBp) - total
    return total
  }

  /** Bills `sel` for `left` of `len` seconds of the period starting at `periodStart`, with the customer's credits. */
  private bill(sel: Selection, left: number, len: number, at: number, periodStart: number) {
    const { total, discount, taken } = invoiceOf(sel, left, len, this.rateBp, this.couponTerms(sel, periodStart, false))
    this.couponOff += priceOf(sel, left, len, this.rateBp) - total
    if (sel.coupon !== null && discount > 0) {
      // The coupon discounted this period: counted once per period, its duration running from the first.
      const coupon = COUPONS[sel.coupon]
      const use = this.use(sel.coupon)
      const same = use.periodStart === periodStart
      const sums = same ? { ...use.taken } : {}
      for (const [target, amount] of Object.entries(taken)) sums[target] = (sums[target] ?? 0) + amount
      use.taken = sums
      if (!same) use.count += 1
      if (use.till === null && coupon.duration === 'limited_period') use.till = monthsAfter(periodStart, LIMITED_MONTHS)
      use.periodStart = periodStart
    }
    const applied = Math.min(this.credits, total)
    this.credits -= applied
    const due = total - applied
    const invoice: ModelInvoice = { total, applied, paid: 0, due, status: 'paid', date: at, retry: 0 }
    if (due > 0 && this.card === 'good') Object.assign(invoice, { paid: due, due: 0 })
    else if (due > 0) invoice.status = 'payment_due'
    this.invoices.push(invoice)
  }

  private startTerm(at: number, anchorDay: number) {
    this.termStart = at
    this.anchorDay = anchorDay
    this.termEnd = nextTermEnd(at, PLANS[this.sel.plan].unit, anchorDay)
    this.terms.push({ start: at, end: this.termEnd, segments: [{ sel: { ...this.sel }, from: at, rateBp: this.rateBp }], cutAt: null })
    this.bill(this.sel, 1, 1, at, at)
  }

  private nextRetry(i: ModelInvoice): number | null {
    return i.status === 'payment_due' ? i.date + RETRY_DAYS[i.retry]! * DAY_MS : null
  }

  /** The next time-driven event at or before `to`, if any: the trial's or term's end, or a retry. */
  private nextEvent(to: number): { at: number; run: () => void } | null {
    let best: { at: number; run: () => void } | null = null
    const consider = (at: number, run: () => void) => { if (at <= to && (!best || at < best.at)) best = { at, run } }
    if (this.status === 'in_trial') consider(this.termEnd, () => this.trialEnds())
    if (this.status === 'active' || this.status === 'non_renewing') consider(this.termEnd, () => this.termEnds())
    for (const invoice of this.invoices) {
      const at = this.nextRetry(invoice)
      if (at !== null) consider(at, () => this.retry(invoice, at))
    }
    return best
  }

  /** The test clock moves to `to`: every event due by then happens, in order, at its own time. */
  advance(to: number) {
    for (let e = this.nextEvent(to); e; e = this.nextEvent(to)) {
      this.now = e.at
      e.run()
    }
    this.now = to
  }

  private trialEnds() {
    const at = this.termEnd
    if (this.cancelScheduled || this.card === 'none') return this.cancel(at)
    this.status = 'active'
    this.startTerm(at, new Date(at).getUTCDate())
  }

  private termEnds() {
    const at = this.termEnd
    if (this.status === 'non_renewing') {
      this.status = 'cancelled'
      this.cancelScheduled = false
      return
    }
    this.startTerm(at, this.anchorDay)
  }

  private retry(invoice: ModelInvoice, at: number) {
    if (this.card === 'good') return Object.assign(invoice, { status: 'paid', paid: invoice.due, due: 0 })
    invoice.retry += 1
    if (invoice.retry < RETRY_DAYS.length) return
    invoice.status = 'not_paid'
    if (this.status !== 'cancelled') this.cancel(at)
  }

  private cancel(at: number) {
    this.status = 'cancelled'
    this.cancelScheduled = false
    this.termEnd = at
  }

  /** An update (6): the status code the service must answer. */
  change(next: Selection): number {
    if (this.status === 'cancelled') return 409
    if (this.invoices.some((i) => i.status === 'payment_due')) return 409
    if (next.coupon !== this.sel.coupon && namesNoneOf(next)) return 400
    const same = next.plan === this.sel.plan && next.quantity === this.sel.quantity && next.addon === this.sel.addon && next.coupon === this.sel.coupon
    if (same) return 200
    const before = this.sel
    this.sel = { ...next }
    if (this.status === 'in_trial') return 200
    const now = this.now
    const term = this.terms.at(-1)!
    const len = seconds(this.termEnd - this.termStart)
    const left = Math.min(len, Math.max(0, seconds(this.termEnd - now)))
    const unused = this.credit(before, left, len)
    if (unused > 0) {
      this.notes.push(unused)
      this.credits += unused
    }
    if (PLANS[next.plan].unit !== PLANS[before.plan].unit) {
      term.cutAt = now
      this.startTerm(now, new Date(now).getUTCDate())
      return 200
    }
    term.segments.push({ sel: { ...next }, from: now, rateBp: this.rateBp })
    this.bill(next, left, len, now, this.termStart)
    return 200
  }

  cancelAtTermEnd(): number {
    if (this.status === 'cancelled' || this.cancelScheduled) return 409
    this.cancelScheduled = true
    if (this.status === 'active') this.status = 'non_renewing'
    return 200
  }

  removeCancellation(): number {
    if (this.status === 'cancelled' || !this.cancelScheduled) return 409
    this.cancelScheduled = false
    if (this.status === 'non_renewing') this.status = 'active'
    return 200
  }

  cancelNow(): number {
    if (this.status === 'cancelled') return 409
    this.cancel(this.now)
    return 200
  }

  setCard(kind: Exclude<CardKind, 'none'>) {
    this.card = kind
    if (kind !== 'good') return
    for (const i of this.invoices) if (i.status === 'payment_due') Object.assign(i, { status: 'paid', paid: i.paid + i.due, due: 0 })
  }
}
