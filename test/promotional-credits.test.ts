import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import {
  SUB,
  at,
  billedCompany,
  call,
  detailsOf,
  json,
  setCard,
  update,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Promotional credits (decisions §9.2) on the local engine, through HTTP with the test clock: the
 * next invoice takes them first, as a discount off the total after tax, then refundable credits
 * and excess payments in credits_applied; a void gives them back. Italian customers, 22 % VAT.
 * Trials last 30 days; each story starts on the 2nd so that its first term is 30 days long.
 */
const GOOD = { number: '4242 4242 4242 4242', expiry_month: 12, expiry_year: 2099 }
const FAILING = { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 }

const promotional = (t: TestApp, c: { id: string }, body: unknown, token?: string) =>
  call(t, { method: 'POST', url: `${SUB}/${c.id}/promotional_credits`, body, ...(token ? { token } : {}) })
const invoicesOf = (t: TestApp, c: BillingFixture) =>
  json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
const credits = (customer: any) => [customer.promotional_credits, customer.refundable_credits, customer.excess_payments]
const PROMO = (amount: number) => ({ description: 'Promotional credits', amount, entity_type: 'promotional_credits' })

onEachEngine('promotional credits', { TEST_CLOCK_ENABLED: true }, (t) => {
  it('are taken before refundable credits on the next renewal, off the total after tax', async () => {
    const plans = { big: { price: 100 }, small: { price: 50 } }
    const c = await billedCompany(t, { start: '2041-03-02T00:00:00.000Z', plans, company: { plan_quantity: 1 } })
    await setCard(t, c.id, GOOD)
    // Trial end: 100.00 + 22.00 VAT = 122.00, paid; the term runs 30 days, to 2041-05-01.
    await at(t, '2041-04-01T00:00:00.000Z')
    // Halfway (15 of 30 days left) down to the 50.00 plan: the unused half of 122.00 is a 61.00 refundable
    // credit note; the new half term costs 25.00 + 5.50 VAT = 30.50, all taken from it: 30.50 left.
    await at(t, '2041-04-16T00:00:00.000Z')
    const res = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.small, plan_quantity: 1 }, c.token)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(credits((await detailsOf(t, c)).customer), [0, 3050, 0])

    const added = await json(t, 200, {
      method: 'POST',
      url: `${SUB}/${c.id}/promotional_credits`,
      body: { amount: 4000, description: 'Referral bonus', type: 'add' },
    })
    assert.deepEqual(added, {
      promotional_credits: 4000,
      refundable_credits: 3050,
      excess_payments: 0,
      currency_code: 'EUR',
    })
    // 50.00 more than the 40.00 held: refused, the balance never goes below 0.
    const refused = await promotional(t, c, { amount: 5000, description: 'Too much', type: 'deduct' })
    assert.equal(refused.statusCode, 400, refused.body)
    assert.match(refused.json().errors, /^body\/amount must not exceed the promotional credits left \(4000 EUR/)

    // Renewal: 50.00 + 11.00 VAT = 61.00; the 40.00 of promotional credits first (total 21.00), then
    // 21.00 of the 30.50 refundable credits: nothing due, 9.50 of refundable credits left, no promotional.
    await at(t, '2041-05-01T00:00:00.000Z')
    const [renewal] = await invoicesOf(t, c)
    assert.deepEqual(
      [renewal.sub_total, renewal.taxes[0].amount, renewal.discounts, renewal.total],
      [5000, 1100, [PROMO(4000)], 2100],
    )
    assert.deepEqual(
      [renewal.credits_applied, renewal.amount_paid, renewal.amount_due, renewal.status],
      [2100, 0, 0, 'paid'],
    )
    assert.deepEqual(credits((await detailsOf(t, c)).customer), [0, 950, 0])

    const events = await json<any[]>(t, 200, {
      url: `/api/v1/companies/${c.id}/events`,
      query: { type: 'customer.promotional_credits_changed', limit: '10' },
    })
    assert.deepEqual(
      events.map((e) => [e.data.object.promotional_credits, e.data.previous_attributes]),
      [[4000, { promotional_credits: 0 }]],
    )
  })

  it('a deduction lowers them; a void gives back what its invoice took', async () => {
    const c = await billedCompany(t, {
      start: '2041-07-02T00:00:00.000Z',
      plans: { basic: { price: 100 } },
      company: { plan_quantity: 1 },
    })
    await setCard(t, c.id, FAILING)
    const add = { amount: 3000, description: 'Goodwill', type: 'add' }
    assert.equal((await promotional(t, c, add)).statusCode, 200)
    // 30.00 − 10.00 = 20.00.
    const deducted = await json(t, 200, {
      method: 'POST',
      url: `${SUB}/${c.id}/promotional_credits`,
      body: { amount: 1000, description: 'Given by mistake', type: 'deduct' },
    })
    assert.equal(deducted.promotional_credits, 2000)
    // Trial end: 122.00 less the 20.00 = 102.00, whose charge fails: payment_due, nothing held.
    await at(t, '2041-08-01T00:00:00.000Z')
    const [invoice] = await invoicesOf(t, c)
    assert.deepEqual([invoice.discounts, invoice.total, invoice.amount_due], [[PROMO(2000)], 10200, 10200])
    assert.equal(invoice.status, 'payment_due')
    assert.equal((await detailsOf(t, c)).customer.promotional_credits, 0)
    // Voided: the 20.00 are the customer's again.
    const voided = await json(t, 200, { method: 'POST', url: `${SUB}/${c.id}/invoices/${invoice.id}/void`, body: {} })
    assert.equal(voided.status, 'voided')
    assert.equal((await detailsOf(t, c)).customer.promotional_credits, 2000)
  })

  it('refuses a company token (403), a company without subscription (404) and a bad body (400)', async () => {
    const c = await billedCompany(t, { start: '2041-10-02T00:00:00.000Z' })
    const body = { amount: 100, description: 'Bonus', type: 'add' }
    assert.equal((await promotional(t, c, body, c.token)).statusCode, 403)
    const missing = await promotional(t, { id: '00000000-0000-4000-8000-000000000000' }, body)
    assert.equal(missing.statusCode, 404, missing.body)
    for (const [field, bad] of [
      ['amount', { ...body, amount: 0 }],
      ['amount', { ...body, amount: 1.5 }],
      ['type', { ...body, type: 'grant' }],
    ] as const) {
      const res = await promotional(t, c, bad)
      assert.equal(res.statusCode, 400, res.body)
      assert.match(res.json().errors, new RegExp(`body/${field}`))
    }
    assert.equal((await detailsOf(t, c)).customer.promotional_credits, 0)
  })
})
