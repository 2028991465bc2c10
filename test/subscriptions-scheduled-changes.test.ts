import { it } from 'node:test'
import assert from 'node:assert/strict'
import {
  SUB,
  at,
  billedCompany,
  call,
  cancel,
  detailsOf,
  eventsOf,
  json,
  moveTo,
  setCard,
  unix,
  update,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Changes scheduled for the term's end (`end_of_term: true` in 6), on the local engine. A company
 * in the US pays no VAT here, so an invoice's total is its plan's price × quantity. Each story: a
 * trial from the 1st to the 31st of January, then monthly terms from the 31st (Feb 28, Mar 31, ...).
 */
onEachEngine('scheduled changes', { TEST_CLOCK_ENABLED: true }, (t) => {
  const plans = { pro: { price: 50 }, basic: { price: 30 } }
  const company = { plan_quantity: 1, country: 'US', timezone: 'America/New_York' }

  async function activeOnPro(start: string) {
    const c = await billedCompany(t, { start: `${start}-01-01T00:00:00.000Z`, plans, company })
    await setCard(t, c.id)
    await at(t, `${start}-01-31T00:00:00.000Z`)
    await moveTo(t, `${start}-02-10T00:00:00.000Z`)
    return c
  }
  const invoicesOf = async (c: { id: string; token: string }) =>
    (await json(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })).map((i: any) => [i.date, i.total])
  const removeChanges = (c: { id: string; token: string }) =>
    call(t, { method: 'PUT', url: `${SUB}/${c.id}/remove_scheduled_changes`, token: c.token })

  it('a downgrade scheduled then removed: nothing billed, and the renewal bills the old plan', async () => {
    const c = await activeOnPro('2071')
    // Trial end: pro, 1 × 50.00.
    assert.deepEqual(await invoicesOf(c), [[unix('2071-01-31T00:00:00Z'), 5000]])

    const res = await update(
      t,
      c.id,
      c.subscriptionId,
      { subscription_plan: c.plans.basic, end_of_term: true },
      c.token,
    )
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    // Nothing now; the renewal on Feb 28 would bill basic, 1 × 30.00.
    assert.deepEqual(
      [body.estimate.subscription_estimate.next_billing_at, body.estimate.invoice_estimate.total],
      [unix('2071-02-28T00:00:00Z'), 3000],
    )
    assert.equal(body.subscription.plan_id, c.plans.pro)
    assert.equal(body.subscription.has_scheduled_changes, true)
    assert.deepEqual(body.subscription.scheduled_change, {
      at: unix('2071-02-28T00:00:00Z'),
      subscription_plan: c.plans.basic,
      plan_quantity: 1,
      addons: [],
      coupon_code: null,
    })
    assert.equal((await invoicesOf(c)).length, 1, 'no invoice now')

    const removed = await removeChanges(c)
    assert.equal(removed.statusCode, 200, removed.body)
    assert.deepEqual(
      [removed.json().subscription.has_scheduled_changes, removed.json().subscription.scheduled_change],
      [false, null],
    )
    assert.equal((await removeChanges(c)).statusCode, 409, 'none is scheduled any more')

    // Renewal on Feb 28: pro again, 50.00.
    await at(t, '2071-02-28T00:00:00.000Z')
    assert.deepEqual((await invoicesOf(c))[0], [unix('2071-02-28T00:00:00Z'), 5000])
    assert.deepEqual(
      (await eventsOf(t, c.id)).slice(-3).map((e) => e.type),
      ['changes_scheduled', 'scheduled_changes_removed', 'renewed'],
    )
  })

  it("a downgrade scheduled is applied by the renewal, which bills the new plan's price", async () => {
    const c = await activeOnPro('2077')
    const res = await update(
      t,
      c.id,
      c.subscriptionId,
      { subscription_plan: c.plans.basic, plan_quantity: 2, end_of_term: true },
      c.token,
    )
    assert.equal(res.statusCode, 200, res.body)
    // The renewal's invoice under the new choice: basic, 2 × 30.00 = 60.00.
    assert.equal(res.json().estimate.invoice_estimate.total, 6000)

    await at(t, '2077-02-28T00:00:00.000Z')
    assert.deepEqual(await invoicesOf(c), [
      [unix('2077-02-28T00:00:00Z'), 6000],
      [unix('2077-01-31T00:00:00Z'), 5000],
    ])
    const d = (await detailsOf(t, c)).subscription
    assert.deepEqual(
      [d.plan_id, d.plan_quantity, d.has_scheduled_changes, d.scheduled_change, d.current_term_end],
      [c.plans.basic, 2, false, null, unix('2077-03-31T00:00:00Z')],
    )
    assert.deepEqual(
      (await eventsOf(t, c.id)).slice(-3).map((e) => [e.type, e.at]),
      [
        ['changes_scheduled', '2077-02-10T00:00:00.000Z'],
        ['changed', '2077-02-28T00:00:00.000Z'],
        ['renewed', '2077-02-28T00:00:00.000Z'],
      ],
    )
    const events = await json(t, 200, {
      url: `/api/v1/companies/${c.id}/events`,
      query: { type: 'subscription.changes_scheduled' },
      token: c.token,
    })
    assert.equal(events.length, 1)
    assert.equal(events[0].data.object.scheduled_change.subscription_plan, c.plans.basic)
    // The next renewal keeps the new plan: Mar 31, 60.00.
    await at(t, '2077-03-31T00:00:00.000Z')
    assert.deepEqual((await invoicesOf(c))[0], [unix('2077-03-31T00:00:00Z'), 6000])
  })

  it('a change and a cancellation scheduled: the latest asked for wins, as at Chargebee', async () => {
    const c = await activeOnPro('2073')
    const schedule = () =>
      update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.basic, end_of_term: true }, c.token)
    assert.equal((await schedule()).statusCode, 200)
    // The cancellation replaces the change.
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    let d = (await detailsOf(t, c)).subscription
    assert.deepEqual(
      [d.status, d.has_scheduled_changes, d.scheduled_cancellation_at],
      ['non_renewing', false, unix('2073-02-28T00:00:00Z')],
    )
    // The change replaces the cancellation.
    const res = await schedule()
    assert.equal(res.statusCode, 200, res.body)
    d = res.json().subscription
    assert.deepEqual(
      [d.status, d.has_scheduled_changes, d.scheduled_cancellation_at, d.cancelled_at],
      ['active', true, null, null],
    )
    // So the term renews, on basic: 30.00.
    await at(t, '2073-02-28T00:00:00.000Z')
    assert.deepEqual((await invoicesOf(c))[0], [unix('2073-02-28T00:00:00Z'), 3000])
    assert.equal((await detailsOf(t, c)).subscription.status, 'active')
  })

  it('a change made now drops the one scheduled', async () => {
    const c = await activeOnPro('2074')
    await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.basic, end_of_term: true }, c.token)
    const res = await update(t, c.id, c.subscriptionId, { plan_quantity: 2 }, c.token)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(
      [res.json().subscription.plan_id, res.json().subscription.has_scheduled_changes],
      [c.plans.pro, false],
    )
  })

  it('refuses what has no term to end, and a malformed end_of_term', async () => {
    const c = await billedCompany(t, { start: '2075-01-01T00:00:00.000Z', plans, company })
    const body = { subscription_plan: c.plans.basic, end_of_term: true }
    // In trial: no term's end to wait for.
    assert.equal((await update(t, c.id, c.subscriptionId, body, c.token)).statusCode, 409)
    assert.equal((await update(t, c.id, c.subscriptionId, { end_of_term: 'yes' }, c.token)).statusCode, 400)
    assert.equal((await removeChanges(c)).statusCode, 409)
    assert.equal((await cancel(t, c.id, c.token, '?end_of_term=false')).statusCode, 200)
    assert.equal((await update(t, c.id, c.subscriptionId, body, c.token)).statusCode, 409)
    assert.equal(
      (await call(t, { method: 'PUT', url: `${SUB}/${c.id}/remove_scheduled_changes`, token: '' })).statusCode,
      401,
    )
  })
})
