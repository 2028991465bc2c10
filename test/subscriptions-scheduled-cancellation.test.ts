import { it } from 'node:test'
import assert from 'node:assert/strict'
import {
  SUB,
  at,
  billedCompany,
  cancel,
  detailsOf,
  estimate,
  eventsOf,
  json,
  moveTo,
  removeCancellation,
  setCard,
  statusOf,
  unix,
  update,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * A scheduled cancellation as Chargebee shows it (issue 16):
 * - `cancelled_at` is "when the subscription was cancelled or is set to be cancelled": Chargebee's
 *   remove_scheduled_cancellation tells integrators to check that `cancelled_at` is a future
 *   date-time before calling it. So while `non_renewing` (or in trial, to end at its end) the
 *   details (8) and status (14) show the scheduled moment there, beside `scheduled_cancellation_at`.
 * - A subscription set to cancel generates no further invoice (Chargebee's cancellation page: "No
 *   invoice will be generated"; its estimate then has no next invoice). Our estimate (9) always
 *   carries `invoice_estimate`, so a trial that ends cancelled estimates an empty invoice: nothing due.
 * - A non_renewing subscription is in its last term (Chargebee sets its remaining billing cycles
 *   to 0). A change of billing period starts a new term now, and that new term is the last one:
 *   the cancellation moves to the new term's end, never left before it.
 */
onEachEngine('scheduled cancellations', { TEST_CLOCK_ENABLED: true }, (t) => {
  const plans = { basic: { price: 30 }, annual: { price: 300, period_unit: 'year' } }

  it('a trial set to cancel at its end estimates nothing due (no invoice at the trial end)', async () => {
    const c = await billedCompany(t, {
      start: '2041-01-01T00:00:00.000Z',
      plans,
      company: { country: 'US', timezone: 'America/New_York' },
    })
    await setCard(t, c.id)
    const query = { company_id: c.id, product_sku: c.productSku, subscription_plan: c.plans.basic!, plan_quantity: '1' }
    // Before the cancellation: the first term, 30.00, at the trial's end.
    const first = (await estimate(t, c.id, query, c.token)).json().estimate
    assert.deepEqual(
      [first.subscription_estimate.next_billing_at, first.invoice_estimate.amount_due],
      [unix('2041-01-31T00:00:00Z'), 3000],
    )
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    const res = await estimate(t, c.id, query, c.token)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json().estimate, {
      subscription_estimate: { status: 'in_trial', next_billing_at: null },
      invoice_estimate: {
        line_items: [],
        discounts: [],
        sub_total: 0,
        taxes: [],
        total: 0,
        credits_applied: 0,
        amount_due: 0,
        currency_code: 'EUR',
      },
    })
    // An update in that trial applies the same (empty) estimate.
    const updated = await update(t, c.id, c.subscriptionId, { plan_quantity: 2 }, c.token)
    assert.equal(updated.statusCode, 200, updated.body)
    assert.equal(updated.json().estimate.invoice_estimate.amount_due, 0)
    // Undone, the first term is estimated again.
    assert.equal((await removeCancellation(t, c.id, c.subscriptionId, c.token)).statusCode, 200)
    assert.equal((await estimate(t, c.id, query, c.token)).json().estimate.invoice_estimate.amount_due, 3000)
  })

  it('cancelled_at shows the scheduled moment while a cancellation is scheduled, and null once undone', async () => {
    const c = await billedCompany(t, { start: '2042-01-01T00:00:00.000Z', plans })
    await setCard(t, c.id)
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    let s = await statusOf(t, c)
    assert.deepEqual(
      [s.status, s.cancelled_at, s.scheduled_cancellation_at],
      ['in_trial', unix('2042-01-31T00:00:00Z'), unix('2042-01-31T00:00:00Z')],
    )
    assert.equal((await removeCancellation(t, c.id, c.subscriptionId, c.token)).statusCode, 200)
    s = await statusOf(t, c)
    assert.deepEqual([s.cancelled_at, s.scheduled_cancellation_at], [null, null])

    await at(t, '2042-01-31T00:00:00.000Z')
    await moveTo(t, '2042-02-10T00:00:00.000Z')
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    s = await statusOf(t, c)
    assert.deepEqual(
      [s.status, s.cancelled_at, s.scheduled_cancellation_at],
      ['non_renewing', unix('2042-02-28T00:00:00Z'), unix('2042-02-28T00:00:00Z')],
    )
    const d = (await detailsOf(t, c)).subscription
    assert.deepEqual(
      [d.cancelled_at, d.scheduled_cancellation_at, d.next_billing_at],
      [unix('2042-02-28T00:00:00Z'), unix('2042-02-28T00:00:00Z'), null],
    )
    assert.equal((await removeCancellation(t, c.id, c.subscriptionId, c.token)).statusCode, 200)
    assert.equal((await statusOf(t, c)).cancelled_at, null)
    // Cancelled at the term's end: cancelled_at stays that moment, nothing is scheduled any more.
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    await at(t, '2042-02-28T00:00:00.000Z')
    s = await statusOf(t, c)
    assert.deepEqual(
      [s.status, s.cancelled_at, s.scheduled_cancellation_at],
      ['cancelled', unix('2042-02-28T00:00:00Z'), null],
    )
  })

  it("a non_renewing subscription changed to a yearly plan ends at the new term's end, not before", async () => {
    const c = await billedCompany(t, { start: '2043-01-01T00:00:00.000Z', plans })
    await setCard(t, c.id)
    await at(t, '2043-01-31T00:00:00.000Z')
    await moveTo(t, '2043-02-10T00:00:00.000Z')
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    assert.equal((await statusOf(t, c)).scheduled_cancellation_at, unix('2043-02-28T00:00:00Z'))

    const res = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.annual }, c.token)
    assert.equal(res.statusCode, 200, res.body)
    const d = res.json().subscription
    // The new yearly term starts now and is the last: 2043-02-10 → 2044-02-10.
    assert.deepEqual(
      [
        d.status,
        d.current_term_start,
        d.current_term_end,
        d.scheduled_cancellation_at,
        d.cancelled_at,
        d.next_billing_at,
      ],
      [
        'non_renewing',
        unix('2043-02-10T00:00:00Z'),
        unix('2044-02-10T00:00:00Z'),
        unix('2044-02-10T00:00:00Z'),
        unix('2044-02-10T00:00:00Z'),
        null,
      ],
    )
    assert.equal(res.json().estimate.subscription_estimate.next_billing_at, null)

    // The old term's end passes without ending it.
    await at(t, '2043-02-28T00:00:00.000Z')
    let s = await statusOf(t, c)
    assert.deepEqual(
      [s.status, s.current_term_end, s.cancelled_at, s.features],
      ['non_renewing', unix('2044-02-10T00:00:00Z'), unix('2044-02-10T00:00:00Z'), ['stamping']],
    )
    await at(t, '2044-02-10T00:00:00.000Z')
    s = await statusOf(t, c)
    assert.deepEqual(
      [s.status, s.cancelled_at, s.scheduled_cancellation_at, s.features],
      ['cancelled', unix('2044-02-10T00:00:00Z'), null, []],
    )
    assert.deepEqual(
      (await eventsOf(t, c.id)).slice(-2).map((e) => [e.type, e.from, e.to, e.at]),
      [
        ['changed', 'non_renewing', 'non_renewing', '2043-02-10T00:00:00.000Z'],
        ['cancelled', 'non_renewing', 'cancelled', '2044-02-10T00:00:00.000Z'],
      ],
    )
  })

  it("a non_renewing yearly subscription changed to a monthly plan ends at the new month's end, not a year on", async () => {
    const c = await billedCompany(t, {
      start: '2045-01-01T00:00:00.000Z',
      plans: { annual: plans.annual, basic: plans.basic },
      company: { plan_quantity: 1, country: 'US', timezone: 'America/New_York' },
    })
    await setCard(t, c.id)
    await at(t, '2045-01-31T00:00:00.000Z')
    await moveTo(t, '2045-03-15T00:00:00.000Z')
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    assert.equal((await statusOf(t, c)).scheduled_cancellation_at, unix('2046-01-31T00:00:00Z'))

    // The monthly term starts now and is the last one: 2045-03-15 → 2045-04-15. Keeping the
    // cancellation on 2046-01-31 would renew monthly ten more times after the customer asked to stop.
    // Unused year: 300.00 × 322/365 days = 264.657… → 264.66 credited; the month, 30.00, paid from it.
    const res = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.basic }, c.token)
    assert.equal(res.statusCode, 200, res.body)
    const d = res.json().subscription
    assert.deepEqual(
      [d.status, d.current_term_end, d.scheduled_cancellation_at, d.cancelled_at],
      ['non_renewing', unix('2045-04-15T00:00:00Z'), unix('2045-04-15T00:00:00Z'), unix('2045-04-15T00:00:00Z')],
    )
    assert.deepEqual(
      [res.json().estimate.invoice_estimate.total, res.json().customer.refundable_credits],
      [3000, 23466],
    )

    await at(t, '2045-04-15T00:00:00.000Z')
    const s = await statusOf(t, c)
    assert.deepEqual(
      [s.status, s.cancelled_at, s.current_term_end],
      ['cancelled', unix('2045-04-15T00:00:00Z'), unix('2045-04-15T00:00:00Z')],
    )
    const invoices = (await json(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })).map((i: any) => [
      i.date,
      i.total,
    ])
    assert.deepEqual(
      invoices,
      [
        [unix('2045-03-15T00:00:00Z'), 3000],
        [unix('2045-01-31T00:00:00Z'), 30000],
      ],
      'no monthly renewal after the last term',
    )
  })
})
