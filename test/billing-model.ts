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
 * whole. A cancellation now ends the term's use there when it credits the unused share of the
 * term's paid invoice (`credit_option` prorate, the default); otherwise the term stays paid. A
 * change of coupon alone bills nothing: the coupon applies from the next invoice. Coupons take
 * their part off each invoice, and a credit (the unused share of what an invoice charged, so
 * after its discounts) gives that part back in proportion (docs/billing.md, "Coupons: duration
 * and targets"): the cost is the periods' price without coupons less what they took.
 */

import {
  COUPONS,
  DAY_MS,
  LIMITED_MONTHS,
  NO_COUPON,
  PLANS,
  RETRY_DAYS,
  creditOf,
  invoiceOf,
  monthsAfter,
  namesNoneOf,
  nextTermEnd,
  priceOf,
  type CardKind,
  type CouponKey,
  type CouponTerms,
  type CouponUse,
  type Selection,
  type Status,
} from './billing-model-prices.ts'

export * from './billing-model-prices.ts'

const seconds = (ms: number) => Math.floor(ms / 1000)

/** A term and the selections it was billed for, each from `from` at the tax rate of the invoice that billed it. */
interface Term {
  start: number
  end: number
  segments: { sel: Selection; from: number; rateBp: number | null }[]
  cutAt: number | null
}
export interface ModelInvoice {
  total: number
  applied: number
  paid: number
  due: number
  status: 'paid' | 'payment_due' | 'not_paid'
  date: number
  retry: number
  /** What a credit is computed from: the lines, each line's discount, the tax rate and the period billed (ms). */
  lines: number[]
  shares: number[]
  rateBp: number | null
  periodStart: number
  periodEnd: number
}

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

  constructor(
    public now: number,
    trialDays: number,
    public sel: Selection,
    public rateBp: number | null,
  ) {
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
    if (!use) this.uses.set(key, (use = { count: 0, till: null, periodStart: null, taken: {} }))
    return use
  }

  /** How `sel`'s coupon stands for an invoice of the period starting at `periodStart`. */
  private couponTerms(sel: Selection, periodStart: number): CouponTerms {
    if (sel.coupon === null) return NO_COUPON
    const coupon = COUPONS[sel.coupon]
    const use = this.use(sel.coupon)
    const samePeriod = use.periodStart === periodStart
    const applies =
      samePeriod ||
      coupon.duration === 'forever' ||
      (coupon.duration === 'one_time' && use.count === 0) ||
      (coupon.duration === 'limited_period' && (use.till === null ? use.count === 0 : periodStart < use.till))
    return { applies, taken: samePeriod ? use.taken : {} }
  }

  /**
   * The unused part of the current term at `now`, credited: the unused share of what the term's
   * latest invoice charged for its period (`creditOf`); `sel` is the selection it billed, `left`
   * of `len` the term's seconds, for what the coupon took back. Recorded as a credit note.
   */
  private credit(sel: Selection, left: number, len: number): number {
    const invoice = this.invoices.at(-1)
    if (!invoice) return 0
    const invoiceLen = Math.max(1, seconds(invoice.periodEnd - invoice.periodStart))
    const total = creditOf(
      invoice,
      Math.min(invoiceLen, Math.max(0, seconds(invoice.periodEnd - this.now))),
      invoiceLen,
    )
    this.couponOff -= priceOf(sel, left, len, invoice.rateBp) - total
    if (total > 0) {
      this.notes.push(total)
      this.credits += total
    }
    return total
  }

  /** Bills `sel` for `left` of `len` seconds of the period starting at `periodStart`, with the customer's credits. */
  private bill(sel: Selection, left: number, len: number, at: number, periodStart: number) {
    const { total, discount, taken, lines, shares } = invoiceOf(
      sel,
      left,
      len,
      this.rateBp,
      this.couponTerms(sel, periodStart),
    )
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
    const invoice: ModelInvoice = {
      total,
      applied,
      paid: 0,
      due,
      status: 'paid',
      date: at,
      retry: 0,
      lines,
      shares,
      rateBp: this.rateBp,
      periodStart: at,
      periodEnd: this.termEnd,
    }
    if (due > 0 && this.card === 'good') Object.assign(invoice, { paid: due, due: 0 })
    else if (due > 0) invoice.status = 'payment_due'
    this.invoices.push(invoice)
  }

  private startTerm(at: number, anchorDay: number) {
    this.termStart = at
    this.anchorDay = anchorDay
    this.termEnd = nextTermEnd(at, PLANS[this.sel.plan].unit, anchorDay)
    this.terms.push({
      start: at,
      end: this.termEnd,
      segments: [{ sel: { ...this.sel }, from: at, rateBp: this.rateBp }],
      cutAt: null,
    })
    this.bill(this.sel, 1, 1, at, at)
  }

  private nextRetry(i: ModelInvoice): number | null {
    return i.status === 'payment_due' ? i.date + RETRY_DAYS[i.retry]! * DAY_MS : null
  }

  /** The next time-driven event at or before `to`, if any: the trial's or term's end, or a retry. */
  private nextEvent(to: number): { at: number; run: () => void } | null {
    let best: { at: number; run: () => void } | null = null
    const consider = (at: number, run: () => void) => {
      if (at <= to && (!best || at < best.at)) best = { at, run }
    }
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
    const items = next.plan === this.sel.plan && next.quantity === this.sel.quantity && next.addon === this.sel.addon
    if (items && next.coupon === this.sel.coupon) return 200
    const before = this.sel
    this.sel = { ...next }
    // In trial nothing is billed; a coupon alone applies from the next invoice.
    if (this.status === 'in_trial' || items) return 200
    const now = this.now
    const term = this.terms.at(-1)!
    const len = seconds(this.termEnd - this.termStart)
    const left = Math.min(len, Math.max(0, seconds(this.termEnd - now)))
    this.credit(before, left, len)
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

  /** An immediate cancellation; `creditOption` prorate credits the unused share of the term's invoice when it was paid. */
  cancelNow(creditOption: 'prorate' | 'none' = 'prorate'): number {
    if (this.status === 'cancelled') return 409
    const paidTerm =
      (this.status === 'active' || this.status === 'non_renewing') && this.invoices.at(-1)?.status === 'paid'
    if (paidTerm && creditOption === 'prorate') {
      const len = seconds(this.termEnd - this.termStart)
      this.credit(this.sel, Math.min(len, Math.max(0, seconds(this.termEnd - this.now))), len)
      this.terms.at(-1)!.cutAt = this.now
    }
    this.cancel(this.now)
    return 200
  }

  setCard(kind: Exclude<CardKind, 'none'>) {
    this.card = kind
    if (kind !== 'good') return
    for (const i of this.invoices)
      if (i.status === 'payment_due') Object.assign(i, { status: 'paid', paid: i.paid + i.due, due: 0 })
  }
}
