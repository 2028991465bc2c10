import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import {
  SUB,
  at,
  billedCompany,
  cancel,
  coupon,
  detailsOf,
  estimate,
  json,
  moveTo,
  setCard,
  unix,
  update,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Credit never exceeds payment (decisions §9.1), through HTTP and the test clock: a credit note
 * is the unused share of what its reference invoice charged, after discounts, with the tax the
 * invoice carried, per line; a change of coupon alone bills nothing; an immediate cancellation
 * credits the unused share of the term's invoice unless `credit_option: none`. And percentages
 * that are not exact in binary are rounded half-up to the cent (docs/billing.md, "Arithmetic").
 *
 * Every story starts on a 2 March (the trial of 30 days ends 1 April): April is a 30-day term,
 * so 11 April leaves 20 of 30 days.
 */
const invoicesOf = (t: TestApp, c: BillingFixture) =>
  json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
const creditNotesOf = (t: TestApp, c: BillingFixture) =>
  json<any[]>(t, 200, { url: `${SUB}/${c.id}/credit_notes`, token: c.token })
const plans = { gold: { price: 30, features: ['stamping'] }, silver: { price: 15, features: ['stamping'] } }
const italian = { plan_quantity: 1, country: 'IT', timezone: 'Europe/Rome' }
const american = { plan_quantity: 1, country: 'US', timezone: 'America/New_York' }

onEachEngine('credit never exceeds payment', { TEST_CLOCK_ENABLED: true }, (t) => {
  /** A company on gold from 1 April of `year`, its activation invoice paid, with `coupon_code` held since its trial. */
  async function activeOnGold(year: number, company: Record<string, unknown>, couponCode?: string) {
    const c = await billedCompany(t, { start: `${year}-03-02T00:00:00.000Z`, plans, company })
    await setCard(t, c.id)
    if (couponCode)
      assert.equal((await update(t, c.id, c.subscriptionId, { coupon_code: couponCode }, c.token)).statusCode, 200)
    await at(t, `${year}-04-01T00:00:00.000Z`)
    const [activation] = await invoicesOf(t, c)
    return { c, activation }
  }

  it('a downgrade under a fixed coupon that made the invoice 0.00 credits nothing (it credited 24.40 of a 0.00 invoice)', async () => {
    const thirty = await coupon(t, { name: 'Thirty off', discount_type: 'fixed_amount', discount_value: 30 })
    const { c, activation } = await activeOnGold(2061, italian, thirty)
    assert.deepEqual(
      [activation.sub_total, activation.discounts.map((d: any) => d.amount), activation.total],
      [3000, [3000], 0],
    )
    // 11 April, 20 of 30 days left. The list price's unused share would be 20.00 + 22 % = 24.40; nothing was paid.
    await moveTo(t, '2061-04-11T00:00:00.000Z')
    const res = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.silver }, c.token)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(await creditNotesOf(t, c), [])
    // Silver for the rest: 15.00 × 20/30 = 10.00 + 2.20; the coupon took its 30.00 for April already.
    const [change] = await invoicesOf(t, c)
    assert.deepEqual(
      [change.sub_total, change.discounts, change.total, change.credits_applied, change.amount_due],
      [1000, [], 1220, 0, 0],
    )
    assert.equal(res.json().customer.refundable_credits, 0)
  })

  it('a downgrade under a fixed coupon credits the unused share of what was charged, per line, with its tax', async () => {
    const ten = await coupon(t, { name: 'Ten off', discount_type: 'fixed_amount', discount_value: 10 })
    const { c, activation } = await activeOnGold(2062, italian, ten)
    // 30.00 − 10.00 = 20.00 + 22 % = 24.40 charged for April.
    assert.deepEqual([activation.total, activation.line_items[0].discount_amount], [2440, 1000])
    await moveTo(t, '2062-04-11T00:00:00.000Z')
    const res = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.silver }, c.token)
    assert.equal(res.statusCode, 200, res.body)
    // 20 of 30 days: the line 30.00 → 20.00, what was paid for it 20.00 → 13.33 (so 6.67 of the
    // discount), tax 22 % of 13.33 = 2.9326 → 2.93: 16.26 credited, not 20.00 + 4.40 = 24.40.
    const notes = await creditNotesOf(t, c)
    assert.equal(notes.length, 1)
    const [note] = notes
    assert.deepEqual(
      [
        note.reference_invoice_id,
        note.type,
        note.reason_code,
        note.line_items.map((l: any) => [l.amount, l.discount_amount]),
        note.discounts.map((d: any) => d.amount),
        note.sub_total,
        note.taxes,
        note.total,
      ],
      [
        activation.id,
        'refundable',
        'subscription_change',
        [[2000, 667]],
        [667],
        2000,
        [{ name: 'IT VAT', rate: 22, amount: 293 }],
        1626,
      ],
    )
    assert.ok(note.total <= activation.total)
    // Silver for the rest, 10.00 + 2.20 (the coupon's 10.00 is spent for April), paid from the credit: 4.06 kept.
    const [change] = await invoicesOf(t, c)
    assert.deepEqual([change.total, change.credits_applied, change.amount_due], [1220, 1220, 0])
    assert.equal(res.json().customer.refundable_credits, 406)
  })

  it('a credit refers to the invoice that billed the time it credits: a change invoice, over its own period', async () => {
    const ten = await coupon(t, { name: 'Ten off', discount_type: 'fixed_amount', discount_value: 10 })
    const { c } = await activeOnGold(2063, american)
    await moveTo(t, '2063-04-16T00:00:00.000Z')
    // Four seats with the coupon, 15 of 30 days left: 60.00 − 10.00 = 50.00, less the 15.00 credit.
    const up = await update(t, c.id, c.subscriptionId, { plan_quantity: 4, coupon_code: ten }, c.token)
    assert.equal(up.statusCode, 200, up.body)
    const [upInvoice] = await invoicesOf(t, c)
    assert.deepEqual(
      [upInvoice.sub_total, upInvoice.total, upInvoice.credits_applied, upInvoice.amount_paid],
      [6000, 5000, 1500, 3500],
    )
    // At once back to one seat: the unused share of the 50.00 just charged is all of it, 50.00, not 60.00.
    const down = await update(t, c.id, c.subscriptionId, { plan_quantity: 1 }, c.token)
    assert.equal(down.statusCode, 200, down.body)
    const [note] = await creditNotesOf(t, c)
    assert.deepEqual([note.reference_invoice_id, note.sub_total, note.total], [upInvoice.id, 6000, 5000])
  })

  it('a change of coupon alone mid-term bills nothing and credits nothing; the next renewal carries it', async () => {
    const percent = await coupon(t, { name: 'Tenth', discount_type: 'percentage', discount_value: 10 })
    const { c } = await activeOnGold(2064, american)
    await moveTo(t, '2064-04-11T00:00:00.000Z')
    const query = {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.plans.gold!,
      plan_quantity: '1',
      coupon_code: percent,
    }
    const est = (await estimate(t, c.id, query, c.token)).json().estimate
    // The estimate is the next invoice the choice leads to: May's renewal, 30.00 − 3.00.
    assert.deepEqual(
      [
        est.subscription_estimate.next_billing_at,
        est.invoice_estimate.discounts.map((d: any) => d.amount),
        est.invoice_estimate.total,
      ],
      [unix('2064-05-01T00:00:00Z'), [300], 2700],
    )
    const added = await update(t, c.id, c.subscriptionId, { coupon_code: percent }, c.token)
    assert.equal(added.statusCode, 200, added.body)
    assert.deepEqual(added.json().estimate, est)
    assert.equal(added.json().subscription.coupon_code, percent)
    assert.equal((await invoicesOf(t, c)).length, 1)
    assert.deepEqual(await creditNotesOf(t, c), [])
    await at(t, '2064-05-01T00:00:00.000Z')
    const [renewal] = await invoicesOf(t, c)
    assert.deepEqual(
      [renewal.date, renewal.discounts.map((d: any) => d.amount), renewal.total, renewal.amount_paid],
      [unix('2064-05-01T00:00:00Z'), [300], 2700, 2700],
    )
    // Removed mid-May: nothing billed or credited now; June's renewal is the list price.
    await moveTo(t, '2064-05-20T00:00:00.000Z')
    const removed = await update(t, c.id, c.subscriptionId, { coupon_code: null }, c.token)
    assert.equal(removed.statusCode, 200, removed.body)
    assert.equal((await invoicesOf(t, c)).length, 2)
    assert.deepEqual(await creditNotesOf(t, c), [])
    await at(t, '2064-06-01T00:00:00.000Z')
    const [june] = await invoicesOf(t, c)
    assert.deepEqual([june.discounts, june.total], [[], 3000])
  })

  it("an immediate cancellation credits the unused share of the term's invoice, tax included, as one refundable credit note", async () => {
    const { c, activation } = await activeOnGold(2065, italian)
    assert.equal(activation.total, 3660)
    await moveTo(t, '2065-04-11T00:00:00.000Z')
    const res = await cancel(t, c.id, c.token, '?end_of_term=false')
    assert.equal(res.statusCode, 200, res.body)
    // 20 of 30 days: 30.00 → 20.00, 22 % VAT 4.40: 24.40.
    const notes = await creditNotesOf(t, c)
    assert.deepEqual(
      notes.map((n) => [
        n.reference_invoice_id,
        n.type,
        n.reason_code,
        n.sub_total,
        n.taxes,
        n.total,
        n.amount_available,
        n.date,
      ]),
      [
        [
          activation.id,
          'refundable',
          'subscription_cancellation',
          2000,
          [{ name: 'IT VAT', rate: 22, amount: 440 }],
          2440,
          2440,
          unix('2065-04-11T00:00:00Z'),
        ],
      ],
    )
    const d = await detailsOf(t, c)
    assert.deepEqual([d.subscription.status, d.customer.refundable_credits], ['cancelled', 2440])
    assert.equal((await invoicesOf(t, c)).length, 1)
  })

  it('credit_option none declines the credit of an immediate cancellation; a bad one is 400 naming the field', async () => {
    const { c } = await activeOnGold(2066, italian)
    await moveTo(t, '2066-04-11T00:00:00.000Z')
    for (const bad of ['full', 1, null]) {
      const refused = await cancel(t, c.id, c.token, '?end_of_term=false', { credit_option: bad })
      assert.deepEqual([refused.statusCode, refused.json().code], [400, 'validation_failed'], refused.body)
      assert.match(refused.json().errors, /body\/credit_option/)
    }
    assert.equal((await detailsOf(t, c)).subscription.status, 'active')
    const res = await cancel(t, c.id, c.token, '?end_of_term=false', {
      credit_option: 'none',
      cancellation_reason: 'closing',
    })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(await creditNotesOf(t, c), [])
    const d = await detailsOf(t, c)
    assert.deepEqual([d.subscription.status, d.customer.refundable_credits], ['cancelled', 0])
  })

  it('an immediate cancellation of a trial or of an unpaid term credits nothing', async () => {
    const trial = await billedCompany(t, { start: '2067-03-02T00:00:00.000Z', plans, company: italian })
    assert.equal((await cancel(t, trial.id, trial.token, '?end_of_term=false')).statusCode, 200)
    assert.deepEqual(await creditNotesOf(t, trial), [])
    // A card whose charges fail: April's invoice is payment_due; nothing was paid, nothing is credited.
    const c = await billedCompany(t, { start: '2067-03-02T00:00:00.000Z', plans, company: italian })
    await setCard(t, c.id, { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 })
    await at(t, '2067-04-01T00:00:00.000Z')
    assert.equal((await invoicesOf(t, c))[0].status, 'payment_due')
    await moveTo(t, '2067-04-01T12:00:00.000Z')
    assert.equal((await cancel(t, c.id, c.token, '?end_of_term=false')).statusCode, 200)
    assert.deepEqual(await creditNotesOf(t, c), [])
  })

  it('percentages not exact in binary round half-up to the cent: 4.35 % of 30.00 is 1.31, 1.13 % of 50.00 is 0.57', async () => {
    // 30.00 × 4.35 % = 1.305 exactly, and 50.00 × 1.13 % = 0.565: half-up gives 1.31 and 0.57. In
    // floating point 3000 × 4.35 / 100 is 130.4999…, and 5000 × 0.0113 and 5000 × 1.13 / 100 are
    // 56.4999…: rounding those, or rounding down, or half to even, gives 1.30 and 0.56.
    const cases: [number, number, number][] = [
      [4.35, 30, 131],
      [1.13, 50, 57],
    ]
    for (const [percent, price, off] of cases) {
      const code = await coupon(t, { name: `${percent} %`, discount_type: 'percentage', discount_value: percent })
      const c = await billedCompany(t, {
        start: '2068-03-02T00:00:00.000Z',
        plans: { only: { price } },
        company: american,
      })
      const query = {
        company_id: c.id,
        product_sku: c.productSku,
        subscription_plan: c.planSku,
        plan_quantity: '1',
        coupon_code: code,
      }
      const inv = (await estimate(t, c.id, query, c.token)).json().estimate.invoice_estimate
      assert.deepEqual(
        [inv.sub_total, inv.discounts.map((d: any) => d.amount), inv.total],
        [price * 100, [off], price * 100 - off],
        `${percent} %`,
      )
      // The invoice the trial's end bills is the same.
      await setCard(t, c.id)
      assert.equal((await update(t, c.id, c.subscriptionId, { coupon_code: code }, c.token)).statusCode, 200)
      await at(t, '2068-04-01T00:00:00.000Z')
      const [activation] = await invoicesOf(t, c)
      assert.deepEqual(
        [activation.discounts.map((d: any) => d.amount), activation.total],
        [[off], price * 100 - off],
        `${percent} % invoiced`,
      )
      await cancel(t, c.id, c.token, '?end_of_term=false')
    }
  })
})
