import { after, before, it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import {
  SUB,
  at,
  billedCompany,
  call,
  cancel,
  json,
  setCard,
  statusOf,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { forEachEngine, onEachEngine } from './helpers/engine-suites.ts'
import type { FakeChargebee } from './helpers/fake-chargebee.ts'
import { chargebeeApp, chargebeeCompany, deliver } from './chargebee.fixtures.ts'

/**
 * One-off charges (decisions §9.2) on the local engine, through HTTP with the test clock: invoiced
 * now (taxed, charged to the card, dunning when it fails) or on the next renewal invoice. Italian
 * customers, 22 % VAT on a plan of 100.00 × 1; trials last 30 days.
 */
const GOOD = { number: '4242 4242 4242 4242', expiry_month: 12, expiry_year: 2099 }
const FAILING = { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 }

const charge = (t: TestApp, c: { id: string }, body: unknown, token?: string) =>
  call(t, { method: 'POST', url: `${SUB}/${c.id}/charges`, body, ...(token ? { token } : {}) })
const invoicesOf = (t: TestApp, c: BillingFixture) =>
  json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
const lines = (invoice: any) => invoice.line_items.map((l: any) => [l.entity_type, l.description, l.amount])

async function active(t: TestApp, start: string, card = GOOD) {
  const c = await billedCompany(t, { start, plans: { basic: { price: 100 } }, company: { plan_quantity: 1 } })
  await setCard(t, c.id, card)
  await at(t, new Date(Date.parse(start) + 30 * 86_400_000).toISOString())
  return c
}

onEachEngine('one-off charges', { TEST_CLOCK_ENABLED: true }, (t) => {
  it('invoice_immediately false: billed on the next renewal invoice, once', async () => {
    // Trial end 2042-02-01: 122.00 paid; the renewal falls on 2042-03-01.
    const c = await active(t, '2042-01-02T00:00:00.000Z')
    const body = { amount: 25000, description: 'Training day', invoice_immediately: false }
    assert.deepEqual(await json(t, 200, { method: 'POST', url: `${SUB}/${c.id}/charges`, body }), { invoice: null })
    assert.equal((await invoicesOf(t, c)).length, 1)
    // 100.00 + 250.00 = 350.00; VAT per line 22.00 + 55.00 = 77.00; 427.00 charged to the card.
    await at(t, '2042-03-01T00:00:00.000Z')
    const [renewal] = await invoicesOf(t, c)
    assert.deepEqual(lines(renewal), [
      ['plan', 'Plan basic', 10000],
      ['adhoc', 'Training day', 25000],
    ])
    assert.deepEqual(
      [renewal.sub_total, renewal.taxes, renewal.total, renewal.amount_paid, renewal.status],
      [35000, [{ name: 'IT VAT', rate: 22, amount: 7700 }], 42700, 42700, 'paid'],
    )
    // The next renewal bills the plan alone: 122.00.
    await at(t, '2042-04-01T00:00:00.000Z')
    const [next] = await invoicesOf(t, c)
    assert.deepEqual([lines(next).length, next.total], [1, 12200])
  })

  it('invoice_immediately true: an invoice now with 22 % VAT, charged to the card; event charge.created', async () => {
    const c = await active(t, '2042-06-02T00:00:00.000Z')
    const body = { amount: 15000, description: 'Onboarding', invoice_immediately: true }
    const { invoice } = await json(t, 200, { method: 'POST', url: `${SUB}/${c.id}/charges`, body })
    // 150.00 + 22 % = 33.00 VAT: 183.00, paid by the card at once.
    assert.deepEqual(lines(invoice), [['adhoc', 'Onboarding', 15000]])
    assert.deepEqual(
      [invoice.sub_total, invoice.taxes, invoice.total, invoice.amount_paid, invoice.amount_due, invoice.status],
      [15000, [{ name: 'IT VAT', rate: 22, amount: 3300 }], 18300, 18300, 0, 'paid'],
    )
    assert.equal(invoice.date, Date.parse('2042-07-02T00:00:00Z') / 1000)
    assert.deepEqual(await json(t, 200, { url: `${SUB}/${c.id}/invoices/${invoice.id}`, token: c.token }), invoice)
    const events = await json<any[]>(t, 200, {
      url: `/api/v1/companies/${c.id}/events`,
      query: { type: 'charge.created', limit: '10' },
    })
    assert.deepEqual(
      events.map((e) => {
        const { id: _, ...object } = e.data.object
        return object
      }),
      [
        {
          subscription_id: c.subscriptionId,
          amount: 15000,
          description: 'Onboarding',
          currency_code: 'EUR',
          invoice_id: invoice.id,
          date: invoice.date,
        },
      ],
    )
  })

  it('a failed charge of an immediate invoice starts dunning', async () => {
    // The trial's 122.00 fails too; the charge's own invoice, 12.20, is retried 1 day after its date.
    const c = await active(t, '2042-09-02T00:00:00.000Z', FAILING)
    const body = { amount: 1000, description: 'Extra seat setup', invoice_immediately: true }
    const { invoice } = await json(t, 200, { method: 'POST', url: `${SUB}/${c.id}/charges`, body })
    assert.deepEqual(
      [invoice.total, invoice.status, invoice.dunning_status, invoice.attempt_count, invoice.next_retry_at],
      [1220, 'payment_due', 'in_progress', 1, invoice.date + 86_400],
    )
  })

  it('refuses: company token 403, no subscription 404, amount ≤ 0 400, non_renewing deferred and cancelled 409', async () => {
    const c = await active(t, '2042-12-02T00:00:00.000Z')
    const body = { amount: 500, description: 'Setup', invoice_immediately: false }
    assert.equal((await charge(t, c, body, c.token)).statusCode, 403)
    assert.equal((await charge(t, { id: '00000000-0000-4000-8000-000000000000' }, body)).statusCode, 404)
    for (const amount of [0, -100]) {
      const res = await charge(t, c, { ...body, amount })
      assert.equal(res.statusCode, 400, res.body)
      assert.match(res.json().errors, /body\/amount/)
    }
    // Set to cancel at the term's end: nothing will renew, so a deferred charge has nowhere to go.
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    const deferred = await charge(t, c, body)
    assert.equal(deferred.statusCode, 409, deferred.body)
    assert.match(deferred.json().errors, /set to cancel at the term end, with no renewal/)
    assert.equal((await cancel(t, c.id, c.token, '?end_of_term=false')).statusCode, 200)
    assert.equal((await statusOf(t, c)).status, 'cancelled')
    const cancelled = await charge(t, c, { ...body, invoice_immediately: true })
    assert.equal(cancelled.statusCode, 409, cancelled.body)
    assert.match(cancelled.json().errors, /^The subscription is cancelled/)
    assert.equal((await invoicesOf(t, c)).length, 1)
  })
})

forEachEngine('promotional credits and charges on a Chargebee-managed subscription', (engine) => {
  let t: TestApp
  let fake: FakeChargebee
  before(async () => {
    ;({ t, fake } = await chargebeeApp(engine))
  })
  after(async () => {
    await t?.close()
    await fake?.close()
  })

  const posts = () => fake.requests.filter((r) => r.method === 'POST').length

  it("promotional credits: Chargebee's balance moves and answers; a deduction beyond it is 400 before any call", async () => {
    const c = await chargebeeCompany(t, fake)
    const change = (body: unknown) => call(t, { method: 'POST', url: `${SUB}/${c.id}/promotional_credits`, body })
    const added = await change({ amount: 5000, description: 'Goodwill', type: 'add' })
    assert.equal(added.statusCode, 200, added.body)
    const balances = { promotional_credits: 5000, refundable_credits: 0, excess_payments: 0, currency_code: 'EUR' }
    assert.deepEqual(added.json(), balances)
    assert.equal(fake.balances(c.id).promotional_credits, 5000)
    const asked = posts()
    const beyond = await change({ amount: 5001, description: 'Too much', type: 'deduct' })
    assert.equal(beyond.statusCode, 400, beyond.body)
    assert.match(beyond.json().errors, /^body\/amount must not exceed the customer's promotional_credits \(5000\)/)
    assert.equal(posts(), asked, 'Chargebee was not asked')
    const deducted = await change({ amount: 2000, description: 'Correction', type: 'deduct' })
    assert.deepEqual(deducted.json(), { ...balances, promotional_credits: 3000 })
  })

  it('charges: now an invoice at Chargebee, answered as mirrored; deferred a line of the next renewal', async () => {
    const c = await chargebeeCompany(t, fake)
    // 500.00 onboarding + 22 % VAT = 610.00.
    const now = await charge(t, c, { amount: 50000, description: 'Onboarding', invoice_immediately: true })
    assert.equal(now.statusCode, 200, now.body)
    const { invoice } = now.json()
    assert.deepEqual([invoice.total, invoice.line_items.map((l: any) => l.description)], [61000, ['Onboarding']])
    assert.deepEqual(await json(t, 200, { url: `${SUB}/${c.id}/invoices/${invoice.id}` }), invoice)
    const later = await charge(t, c, { amount: 20000, description: 'Training day', invoice_immediately: false })
    assert.equal(later.statusCode, 200, later.body)
    assert.deepEqual(later.json(), { invoice: null })
    const pending = fake.subscriptions.get(c.subscriptionId)!.charges_at_term_end
    assert.deepEqual(
      pending.map((p: any) => [p.amount, p.description]),
      [[20000, 'Training day']],
    )
  })

  it('charges: a cancelled subscription is 409 before any call, as on the local engine', async () => {
    const c = await chargebeeCompany(t, fake)
    const end = Math.floor(t.clock.now().getTime() / 1000)
    fake.change(c.subscriptionId, (s) => Object.assign(s, { status: 'cancelled', cancelled_at: end }))
    const cancelled = fake.event('subscription_cancelled', { subscriptionId: c.subscriptionId }, end)
    assert.equal((await deliver(t, cancelled)).json().outcome, 'applied')
    const asked = posts()
    const res = await charge(t, c, { amount: 100, description: 'Setup', invoice_immediately: true })
    assert.equal(res.statusCode, 409, res.body)
    assert.match(res.json().errors, /^The subscription is cancelled: it takes no more charges/)
    assert.equal(posts(), asked, 'Chargebee was not asked')
  })
})
