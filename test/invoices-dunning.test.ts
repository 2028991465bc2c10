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
  moveTo,
  setCard,
  statusOf,
  unix,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { ALLOWED, PageSession, assertHtml, pathOf } from './hosted-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Test-mode payments and dunning of the local engine (decisions §8.4), through HTTP. Stripe's test
 * cards: 4000 0000 0000 0341 attaches but every charge fails; 4000 0000 0000 0002 is declined.
 * A failed charge leaves the invoice payment_due and the subscription active; it is retried
 * DUNNING_RETRY_DAYS (1, 3, 5) days after the invoice's date and at once on a new card; after
 * the last failure the invoice is not_paid and the subscription cancelled (Chargebee's dunning:
 * invoice dunning_status in_progress → exhausted, subscription cancel_reason not_paid).
 *
 * Figures: Basic 29.90 × 1 + 22 % VAT (6.578 → 6.58) = 36.48 per month.
 */
const FAILING = { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 }
const GOOD = { number: '4242-4242-4242-4242', expiry_month: 12, expiry_year: 2099 }

const invoicesOf = (t: TestApp, c: BillingFixture) => json(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
const dunning = (i: any) => ({
  status: i.status,
  amount_paid: i.amount_paid,
  amount_due: i.amount_due,
  attempt_count: i.attempt_count,
  dunning_status: i.dunning_status,
  next_retry_at: i.next_retry_at,
  paid_at: i.paid_at,
})

onEachEngine('payments and dunning', { TEST_CLOCK_ENABLED: true, REDIRECT_ALLOWED_HOSTS: ALLOWED }, (t) => {
  it('a card whose charges fail: payment_due and active through the retries of days 1, 3 and 5, then not_paid and cancelled', async () => {
    const c = await billedCompany(t, { start: '2031-01-01T00:00:00.000Z', company: { plan_quantity: 1 } })
    const details = await setCard(t, c.id, FAILING)
    assert.deepEqual(details.customer.payment_method, {
      type: 'card',
      brand: 'visa',
      last4: '0341',
      expiry_month: 12,
      expiry_year: 2099,
    })

    await at(t, '2031-01-31T00:00:00.000Z')
    assert.equal((await statusOf(t, c)).status, 'active')
    const [invoice] = await invoicesOf(t, c)
    const url = `${SUB}/${c.id}/invoices/${invoice.id}`
    assert.deepEqual(dunning(invoice), {
      status: 'payment_due',
      amount_paid: 0,
      amount_due: 3648,
      attempt_count: 1,
      dunning_status: 'in_progress',
      next_retry_at: unix('2031-02-01T00:00:00Z'),
      paid_at: null,
    })

    await at(t, '2031-02-01T00:00:00.000Z')
    assert.deepEqual(dunning(await json(t, 200, { url })), {
      ...dunning(invoice),
      attempt_count: 2,
      next_retry_at: unix('2031-02-03T00:00:00Z'),
    })
    // Another failing card on day 2: charged at once, fails; the schedule stays.
    await moveTo(t, '2031-02-02T00:00:00.000Z')
    await setCard(t, c.id, FAILING)
    assert.deepEqual(dunning(await json(t, 200, { url })), {
      ...dunning(invoice),
      attempt_count: 3,
      next_retry_at: unix('2031-02-03T00:00:00Z'),
    })
    await at(t, '2031-02-03T00:00:00.000Z')
    assert.deepEqual(dunning(await json(t, 200, { url })), {
      ...dunning(invoice),
      attempt_count: 4,
      next_retry_at: unix('2031-02-05T00:00:00Z'),
    })
    await at(t, '2031-02-04T23:59:59.000Z')
    assert.deepEqual([(await statusOf(t, c)).status, (await json(t, 200, { url })).status], ['active', 'payment_due'])

    // Day 5, the last retry fails: not_paid, and the subscription ends then, without its features.
    await Promise.all([at(t, '2031-02-05T00:00:00.000Z'), t.app.services.scheduler.runDue()])
    assert.deepEqual(dunning(await json(t, 200, { url })), {
      status: 'not_paid',
      amount_paid: 0,
      amount_due: 3648,
      attempt_count: 5,
      dunning_status: 'exhausted',
      next_retry_at: null,
      paid_at: null,
    })
    assert.deepEqual(await statusOf(t, c), {
      subscription_id: c.subscriptionId,
      status: 'cancelled',
      plan: c.planSku,
      current_term_end: unix('2031-02-05T00:00:00Z'),
      trial_end: unix('2031-01-31T00:00:00Z'),
      cancelled_at: unix('2031-02-05T00:00:00Z'),
      scheduled_cancellation_at: null,
      features: [],
    })
    assert.equal((await detailsOf(t, c)).subscription.cancellation_reason, 'not_paid')
    // The term's end passes: nothing renews, nothing more is invoiced; a card now charges nothing.
    await at(t, '2031-03-01T00:00:00.000Z')
    await setCard(t, c.id, GOOD)
    assert.deepEqual(
      (await invoicesOf(t, c)).map((i: any) => i.status),
      ['not_paid'],
    )
    // Each step was an event of the invoice, written with it (oldest first): generated with its
    // failed first charge, the four failed retries, then given up.
    const events = await json<any[]>(t, 200, {
      url: `/api/v1/companies/${c.id}/events`,
      query: { type: 'invoice.*', limit: '100' },
    })
    assert.deepEqual(events.map((e) => e.type).reverse(), [
      'invoice.created',
      'invoice.payment_failed',
      'invoice.payment_failed',
      'invoice.payment_failed',
      'invoice.payment_failed',
      'invoice.payment_failed',
      'invoice.not_paid',
    ])
    assert.ok(events.every((e) => e.data.object.id === invoice.id && e.company_id === c.id))
    // The subscription's events show the card as the API does: no test behaviour, no coupon bookkeeping.
    const subscriptionEvents = await json<any[]>(t, 200, {
      url: `/api/v1/companies/${c.id}/events`,
      query: { type: 'subscription.*', limit: '100' },
    })
    assert.ok(subscriptionEvents.some((e) => e.type === 'subscription.payment_source_added'))
    for (const e of subscriptionEvents) {
      const seen = JSON.stringify(e.data)
      assert.ok(!seen.includes('test_behaviour') && !seen.includes('coupon_period_'), seen.slice(0, 300))
    }
  })

  it('a new card saves the subscription: the due invoice is paid at once, later retries do nothing, renewals charge the new card', async () => {
    const c = await billedCompany(t, { start: '2031-06-01T00:00:00.000Z', company: { plan_quantity: 1 } })
    await setCard(t, c.id, FAILING)
    await at(t, '2031-07-01T00:00:00.000Z')
    await at(t, '2031-07-02T00:00:00.000Z')
    const [failed] = await invoicesOf(t, c)
    assert.deepEqual(
      [failed.status, failed.attempt_count, failed.next_retry_at],
      ['payment_due', 2, unix('2031-07-04T00:00:00Z')],
    )
    // While it is unpaid, no change: the unpaid term has no unused part to credit (409, nothing changes).
    const refused = await call(t, {
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
      body: { plan_quantity: 2 },
    })
    assert.equal(refused.statusCode, 409, refused.body)
    assert.match(refused.json().errors, /unpaid invoice/)
    assert.equal((await json<any[]>(t, 200, { url: `${SUB}/${c.id}/credit_notes`, token: c.token })).length, 0)

    await moveTo(t, '2031-07-03T12:00:00.000Z')
    const details = await setCard(t, c.id, GOOD)
    assert.equal(details.customer.payment_method.last4, '4242')
    const paid = {
      status: 'paid',
      amount_paid: 3648,
      amount_due: 0,
      attempt_count: 3,
      dunning_status: 'success',
      next_retry_at: null,
      paid_at: unix('2031-07-03T12:00:00Z'),
    }
    assert.deepEqual(dunning((await invoicesOf(t, c))[0]), paid)
    await at(t, '2031-07-04T00:00:00.000Z')
    await at(t, '2031-07-06T00:00:00.000Z')
    assert.deepEqual(dunning((await invoicesOf(t, c))[0]), paid, 'the retries scheduled before do nothing')
    await at(t, '2031-08-01T00:00:00.000Z')
    const [renewal] = await invoicesOf(t, c)
    assert.deepEqual(dunning(renewal), {
      status: 'paid',
      amount_paid: 3648,
      amount_due: 0,
      attempt_count: 1,
      dunning_status: null,
      next_retry_at: null,
      paid_at: unix('2031-08-01T00:00:00Z'),
    })
    assert.equal((await statusOf(t, c)).status, 'active')
    // Paid: changes are taken again.
    assert.equal(
      (
        await call(t, {
          method: 'PUT',
          url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
          token: c.token,
          body: { plan_quantity: 2 },
        })
      ).statusCode,
      200,
    )
  })

  it('4000 0000 0000 0002 is declined on entry (platform route and payment page); a card number is never stored', async () => {
    const c = await billedCompany(t, { start: '2032-01-01T00:00:00.000Z' })
    const bodies: [Record<string, unknown>, RegExp][] = [
      [{ number: '4000000000000002', expiry_month: 12, expiry_year: 2099 }, /^body\/number: the card was declined/],
      [
        { number: '4242 4242 4242 4241', expiry_month: 12, expiry_year: 2099 },
        /^body\/number is not a valid card number/,
      ],
      [{ ...GOOD, brand: 'visa' }, /^body\/brand comes from body\/number/],
      [{ brand: 'visa', expiry_month: 12, expiry_year: 2099 }, /^body\/last4 is required/],
      [{ last4: '4242', expiry_month: 12, expiry_year: 2099 }, /^body\/brand is required/],
      [{ ...GOOD, cvc: '123' }, /body.*cvc/],
    ]
    for (const [body, message] of bodies) {
      const res = await call(t, { method: 'PUT', url: `${SUB}/${c.id}/payment_source`, body })
      assert.equal(res.statusCode, 400, JSON.stringify(body))
      assert.match(res.json().errors, message)
    }
    assert.equal((await detailsOf(t, c)).customer.payment_method, null)

    const page = new PageSession(t, await pathOf(t, 'payment', c.id, c.token))
    assertHtml(await page.get(), 200)
    const declined = await page.post('submit', {
      number: '4000 0000 0000 0002',
      expiry_month: '12',
      expiry_year: '2099',
    })
    assertHtml(declined, 400)
    assert.match(declined.body, /The card was declined/)
    assert.match(declined.body, /id="number"[^>]*aria-invalid="true"/)
    assert.equal((await detailsOf(t, c)).customer.payment_method, null)
    const failing = await page.post('submit', { number: FAILING.number, expiry_month: '12', expiry_year: '2099' })
    assert.equal(failing.statusCode, 303, failing.body)
    assert.equal((await detailsOf(t, c)).customer.payment_method.last4, '0341')
    // What is kept of it: brand, last 4, expiry and the behaviour the number stands for.
    const stored = await t.app.database.db
      .selectFrom('subscriptions')
      .select('payment_source')
      .where('company_id', '=', c.id)
      .executeTakeFirstOrThrow()
    assert.deepEqual(stored.payment_source, {
      brand: 'visa',
      last4: '0341',
      expiry_month: 12,
      expiry_year: 2099,
      test_behaviour: 'charge_fails',
    })
    const everything = JSON.stringify(
      await t.app.database.db.selectFrom('subscription_events').selectAll().where('company_id', '=', c.id).execute(),
    )
    assert.ok(
      !everything.includes('4000000000000341') && !everything.includes('4000 0000'),
      'the number is stored nowhere',
    )
  })
})
