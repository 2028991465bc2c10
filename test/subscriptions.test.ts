import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import {
  SUB,
  CARD,
  at,
  call,
  moveTo,
  billedCompany,
  cancel,
  detailsOf,
  eventsOf,
  mirrorOf,
  removeCancellation,
  setCard,
  statusOf,
  unix,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/** The lifecycle through HTTP: trial end, renewals, cancellations and their refusals (spec 2, 3, 8, 14). */
onEachEngine('subscription lifecycle', { TEST_CLOCK_ENABLED: true }, (t) => {
  it('a trial with a card becomes active at its end and renews on the anchor day across month ends', async () => {
    const c = await billedCompany(t, { start: '2027-01-01T10:00:00.000Z' })
    assert.deepEqual(await mirrorOf(t, c.id), {
      subscription_id: c.subscriptionId,
      subscription_status: 'in_trial',
      subscription_plan: c.planSku,
      subscription_expiration_date: '2027-01-31T10:00:00.000Z',
      trial_expiration_date: '2027-01-31T10:00:00.000Z',
      subscribed_features: ['stamping'],
      plan_quantity: 5,
      areas: (await mirrorOf(t, c.id)).areas,
    })
    assert.ok((await mirrorOf(t, c.id)).areas.includes('stamping'))
    const details = await setCard(t, c.id)
    assert.deepEqual(details.customer.payment_method, { type: 'card', ...CARD })

    await at(t, '2027-01-31T09:59:59.000Z')
    assert.equal((await statusOf(t, c)).status, 'in_trial')
    await at(t, '2027-01-31T10:00:00.000Z')
    assert.deepEqual(await statusOf(t, c), {
      subscription_id: c.subscriptionId,
      status: 'active',
      plan: c.planSku,
      current_term_end: unix('2027-02-28T10:00:00Z'),
      trial_end: unix('2027-01-31T10:00:00Z'),
      cancelled_at: null,
      scheduled_cancellation_at: null,
      features: ['stamping'],
    })
    const m = await mirrorOf(t, c.id)
    assert.equal(m.subscription_status, 'active')
    assert.equal(m.subscription_expiration_date, '2027-02-28T10:00:00.000Z')

    // Jan 31 → Feb 28 → Mar 31 → Apr 30 → May 31: the anchor day comes back after a short month.
    await at(t, '2027-02-28T10:00:00.000Z')
    assert.equal((await statusOf(t, c)).current_term_end, unix('2027-03-31T10:00:00Z'))
    await at(t, '2027-04-30T10:00:00.000Z')
    const sub = (await detailsOf(t, c)).subscription
    assert.equal(sub.current_term_start, unix('2027-04-30T10:00:00Z'))
    assert.equal(sub.current_term_end, unix('2027-05-31T10:00:00Z'))
    assert.equal(sub.next_billing_at, unix('2027-05-31T10:00:00Z'))
    assert.equal((await mirrorOf(t, c.id)).subscription_expiration_date, '2027-05-31T10:00:00.000Z')

    // Exactly once: running the scheduler again (twice at once) changes nothing.
    await Promise.all([t.app.services.scheduler.runDue(), t.app.services.scheduler.runDue()])
    const events = await eventsOf(t, c.id)
    assert.deepEqual(
      events.map((e) => [e.type, e.from, e.to, e.at]),
      [
        ['created', null, 'in_trial', '2027-01-01T10:00:00.000Z'],
        ['payment_source_added', 'in_trial', 'in_trial', '2027-01-01T10:00:00.000Z'],
        ['activated', 'in_trial', 'active', '2027-01-31T10:00:00.000Z'],
        ['renewed', 'active', 'active', '2027-02-28T10:00:00.000Z'],
        ['renewed', 'active', 'active', '2027-03-31T10:00:00.000Z'],
        ['renewed', 'active', 'active', '2027-04-30T10:00:00.000Z'],
      ],
    )
    assert.equal(events[2]!.actor, 'scheduler')
    assert.equal(events[1]!.actor, 'test-admin')
    assert.deepEqual((events[3]!.details as any).changes.current_term_end, [
      '2027-02-28T10:00:00.000Z',
      '2027-03-31T10:00:00.000Z',
    ])
    // 29.90 × 5 = 149.50 + 22 % VAT (32.89) = 182.39 billed per term.
    assert.equal((events[3]!.details as any).invoice.total, 18239)
  })

  it('renews across a leap day, monthly and yearly', async () => {
    const monthly = await billedCompany(t, { start: '2028-01-01T00:00:00.000Z' })
    await setCard(t, monthly.id)
    const yearly = await billedCompany(t, {
      start: '2028-01-30T08:00:00.000Z',
      plans: { y: { price: 299, period_unit: 'year', features: [] } },
    })
    await setCard(t, yearly.id)
    await at(t, '2028-01-31T00:00:00.000Z')
    assert.equal((await statusOf(t, monthly)).current_term_end, unix('2028-02-29T00:00:00Z'))
    await at(t, '2028-02-29T00:00:00.000Z')
    assert.equal((await statusOf(t, monthly)).current_term_end, unix('2028-03-31T00:00:00Z'))
    await at(t, '2028-02-29T08:00:00.000Z')
    assert.deepEqual(await statusOf(t, yearly).then((s) => [s.status, s.current_term_end]), [
      'active',
      unix('2029-02-28T08:00:00Z'),
    ])
    await at(t, '2029-02-28T08:00:00.000Z')
    assert.equal((await statusOf(t, yearly)).current_term_end, unix('2030-02-28T08:00:00Z'))
  })

  it('a trial without a usable card ends cancelled, and the company keeps only its base scopes', async () => {
    const none = await billedCompany(t, { start: '2029-01-01T00:00:00.000Z' })
    // A card valid today but expired by the trial's end (end of January) does not count.
    const expiring = await billedCompany(t, { start: '2029-01-15T00:00:00.000Z' })
    await setCard(t, expiring.id, { ...CARD, expiry_month: 1, expiry_year: 2029 })
    await at(t, '2029-01-31T00:00:00.000Z')
    assert.deepEqual(await statusOf(t, none), {
      subscription_id: none.subscriptionId,
      status: 'cancelled',
      plan: none.planSku,
      current_term_end: unix('2029-01-31T00:00:00Z'),
      trial_end: unix('2029-01-31T00:00:00Z'),
      cancelled_at: unix('2029-01-31T00:00:00Z'),
      scheduled_cancellation_at: null,
      features: [],
    })
    const m = await mirrorOf(t, none.id)
    assert.equal(m.subscription_status, 'cancelled')
    assert.deepEqual(m.subscribed_features, [])
    assert.ok(!m.areas.includes('stamping') && m.areas.includes('company'))
    assert.deepEqual((await eventsOf(t, none.id)).map((e) => [e.type, e.to, e.actor]).at(-1), [
      'cancelled',
      'cancelled',
      'scheduler',
    ])
    // A token minted now holds only what the company still has.
    const minted = await call(t, {
      method: 'POST',
      url: '/oauth/token',
      token: null,
      body: { grant_type: 'client_credentials', ...none.client },
    })
    const scopes: string[] = minted.json().scope.split(' ')
    assert.ok(scopes.includes('write:company') && !scopes.includes('write:stamping'))
    await at(t, '2029-02-14T00:00:00.000Z')
    assert.equal((await statusOf(t, expiring)).status, 'cancelled')
  })

  it('cancels a trial at its end (it stays in trial), undoes that, and refuses what does not apply', async () => {
    const c = await billedCompany(t, { start: '2030-01-01T00:00:00.000Z' })
    await setCard(t, c.id)
    const res = await cancel(t, c.id, c.token, '', {
      cancellation_reason: 'too_expensive',
      cancellation_message: 'Later',
    })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '')
    const s = await statusOf(t, c)
    assert.deepEqual(
      [s.status, s.scheduled_cancellation_at, s.cancelled_at],
      ['in_trial', unix('2030-01-31T00:00:00Z'), unix('2030-01-31T00:00:00Z')],
    ) // cancelled_at: when it is set to be cancelled (Chargebee)
    assert.equal((await detailsOf(t, c)).subscription.cancellation_reason, 'too_expensive')
    assert.equal((await mirrorOf(t, c.id)).subscription_status, 'in_trial')
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 409)

    assert.equal((await removeCancellation(t, c.id, c.subscriptionId, c.token)).statusCode, 200)
    assert.equal((await statusOf(t, c)).scheduled_cancellation_at, null)
    const again = await removeCancellation(t, c.id, c.subscriptionId, c.token)
    assert.deepEqual([again.statusCode, again.json().code], [409, 'conflict'])

    // The path may name the subscription instead of the company.
    assert.equal((await cancel(t, c.subscriptionId, c.token, '?end_of_term=true')).statusCode, 200)
    await at(t, '2030-01-31T00:00:00.000Z')
    const ended = await statusOf(t, c)
    assert.deepEqual(
      [ended.status, ended.cancelled_at, ended.scheduled_cancellation_at],
      ['cancelled', unix('2030-01-31T00:00:00Z'), null],
    )
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => [e.type, e.from, e.to]),
      [
        ['created', null, 'in_trial'],
        ['payment_source_added', 'in_trial', 'in_trial'],
        ['cancellation_scheduled', 'in_trial', 'in_trial'],
        ['scheduled_cancellation_removed', 'in_trial', 'in_trial'],
        ['cancellation_scheduled', 'in_trial', 'in_trial'],
        ['cancelled', 'in_trial', 'cancelled'],
      ],
    )
  })

  it('cancels a trial now; a cancelled subscription refuses every change with 409', async () => {
    const c = await billedCompany(t, { start: '2031-01-01T00:00:00.000Z' })
    await moveTo(t, '2031-01-05T12:00:00.000Z')
    assert.equal((await cancel(t, c.id, c.token, '?end_of_term=false')).statusCode, 200)
    const s = await statusOf(t, c)
    assert.deepEqual(
      [s.status, s.cancelled_at, s.current_term_end, s.features],
      ['cancelled', unix('2031-01-05T12:00:00Z'), unix('2031-01-05T12:00:00Z'), []],
    )
    const m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_status, m.subscription_expiration_date, m.subscribed_features],
      ['cancelled', '2031-01-05T12:00:00.000Z', []],
    )
    assert.ok(!m.areas.includes('stamping'))

    for (const query of ['', '?end_of_term=false'])
      assert.equal((await cancel(t, c.id, c.token, query)).statusCode, 409)
    assert.equal((await removeCancellation(t, c.id, c.subscriptionId, c.token)).statusCode, 409)
    const upd = await call(t, {
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
      body: { plan_quantity: 2 },
    })
    assert.equal(upd.statusCode, 409)
    const est = await call(t, {
      url: `${SUB}/${c.subscriptionId}/estimate`,
      token: c.token,
      query: { company_id: c.id, product_sku: c.productSku, subscription_plan: c.planSku, plan_quantity: '1' },
    })
    assert.equal(est.statusCode, 409)
    await at(t, '2031-02-01T00:00:00.000Z')
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => e.type),
      ['created', 'cancelled'],
    )
  })

  it('an active subscription: non_renewing at end of term, back to active, then cancelled at term end', async () => {
    const c = await billedCompany(t, { start: '2032-01-01T00:00:00.000Z' })
    await setCard(t, c.id)
    await at(t, '2032-01-31T00:00:00.000Z')
    await moveTo(t, '2032-02-10T00:00:00.000Z')
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    let s = await statusOf(t, c)
    assert.deepEqual(
      [s.status, s.scheduled_cancellation_at, s.current_term_end],
      ['non_renewing', unix('2032-02-29T00:00:00Z'), unix('2032-02-29T00:00:00Z')],
    )
    let m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_status, m.subscribed_features, m.areas.includes('stamping')],
      ['non_renewing', ['stamping'], true],
    )
    assert.equal((await detailsOf(t, c)).subscription.next_billing_at, null)
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 409)

    assert.equal((await removeCancellation(t, c.id, c.subscriptionId, c.token)).statusCode, 200)
    s = await statusOf(t, c)
    assert.deepEqual([s.status, s.scheduled_cancellation_at], ['active', null])
    assert.equal((await mirrorOf(t, c.id)).subscription_status, 'active')
    assert.equal((await removeCancellation(t, c.id, c.subscriptionId, c.token)).statusCode, 409)

    assert.equal((await cancel(t, c.subscriptionId, c.token)).statusCode, 200)
    await at(t, '2032-02-29T00:00:00.000Z')
    s = await statusOf(t, c)
    assert.deepEqual(
      [s.status, s.cancelled_at, s.scheduled_cancellation_at],
      ['cancelled', unix('2032-02-29T00:00:00Z'), null],
    )
    m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_status, m.subscribed_features, m.areas.includes('stamping')],
      ['cancelled', [], false],
    )
    assert.deepEqual(
      (await eventsOf(t, c.id)).slice(3).map((e) => [e.type, e.from, e.to, e.actor]),
      [
        ['cancellation_scheduled', 'active', 'non_renewing', c.client.client_id],
        ['scheduled_cancellation_removed', 'non_renewing', 'active', c.client.client_id],
        ['cancellation_scheduled', 'active', 'non_renewing', c.client.client_id],
        ['cancelled', 'non_renewing', 'cancelled', 'scheduler'],
      ],
    )
  })

  it('cancels an active subscription now, and a non_renewing one now', async () => {
    const a = await billedCompany(t, { start: '2033-01-01T00:00:00.000Z' })
    const b = await billedCompany(t, { start: '2033-01-01T00:00:00.000Z' })
    await setCard(t, a.id)
    await setCard(t, b.id)
    await at(t, '2033-01-31T00:00:00.000Z')
    await moveTo(t, '2033-02-03T00:00:00.000Z')
    const res = await cancel(t, a.id, a.token, '?end_of_term=false', { cancellation_reason: 'closing' })
    assert.equal(res.statusCode, 200)
    const d = (await detailsOf(t, a)).subscription
    assert.deepEqual(
      [d.status, d.cancelled_at, d.cancellation_reason, d.next_billing_at],
      ['cancelled', unix('2033-02-03T00:00:00Z'), 'closing', null],
    )
    assert.equal((await cancel(t, b.id, b.token)).statusCode, 200)
    assert.equal((await cancel(t, b.id, b.token, '?end_of_term=false')).statusCode, 200)
    assert.equal((await statusOf(t, b)).status, 'cancelled')
    await at(t, '2033-02-28T00:00:00.000Z')
    assert.deepEqual(
      (await eventsOf(t, b.id)).slice(3).map((e) => [e.type, e.to]),
      [
        ['cancellation_scheduled', 'non_renewing'],
        ['cancelled', 'cancelled'],
      ],
    )
  })

  it('a non_renewing subscription can still be changed: it stays non_renewing and ends as scheduled', async () => {
    const c = await billedCompany(t, {
      start: '2033-06-01T00:00:00.000Z',
      plans: { basic: { price: 29.9, features: ['stamping'] }, pro: { price: 49.9, features: ['expense'] } },
    })
    await setCard(t, c.id)
    await at(t, '2033-07-01T00:00:00.000Z')
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    await moveTo(t, '2033-07-16T00:00:00.000Z')
    const query = { company_id: c.id, product_sku: c.productSku, subscription_plan: c.plans.pro!, plan_quantity: '5' }
    const est = await call(t, { url: `${SUB}/${c.subscriptionId}/estimate`, query, token: c.token })
    assert.deepEqual(est.json().estimate.subscription_estimate, { status: 'non_renewing', next_billing_at: null })
    const res = await call(t, {
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
      body: { subscription_plan: c.plans.pro },
    })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json().estimate, est.json().estimate)
    assert.deepEqual(
      [res.json().subscription.status, res.json().subscription.scheduled_cancellation_at],
      ['non_renewing', unix('2033-08-01T00:00:00Z')],
    )
    const m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_plan, m.subscribed_features, m.areas.includes('expense'), m.areas.includes('stamping')],
      [c.plans.pro, ['expense'], true, false],
    )
    await at(t, '2033-08-01T00:00:00.000Z')
    assert.equal((await statusOf(t, c)).status, 'cancelled')
  })

  it('validates cancellation and card input with a sentence naming the field', async () => {
    const c = await billedCompany(t, { start: '2034-01-01T00:00:00.000Z' })
    const checks: [Awaited<ReturnType<TestApp['call']>>, RegExp][] = [
      [await cancel(t, c.id, c.token, '', { reason: 'x' }), /body\/reason is not a known field/],
      [await cancel(t, c.id, c.token, '', { cancellation_reason: 5 }), /body\/cancellation_reason must be string/],
      [await cancel(t, c.id, c.token, '?end_of_term=maybe'), /querystring\/end_of_term/],
      [await cancel(t, 'not-a-uuid', c.token), /params\/company_id_or_subscription_id/],
      [
        await call(t, { method: 'PUT', url: `${SUB}/${c.id}/payment_source`, body: { ...CARD, last4: '42' } }),
        /body\/last4/,
      ],
      [
        await call(t, { method: 'PUT', url: `${SUB}/${c.id}/payment_source`, body: { ...CARD, cvv: '123' } }),
        /body\/cvv is not a known field/,
      ],
      [
        await call(t, {
          method: 'PUT',
          url: `${SUB}/${c.id}/payment_source`,
          body: { ...CARD, expiry_month: 12, expiry_year: 2033 },
        }),
        /expired/,
      ],
    ]
    for (const [res, message] of checks) {
      assert.equal(res.statusCode, 400, res.body)
      assert.match(res.json().errors, message)
    }
    assert.equal((await statusOf(t, c)).status, 'in_trial')
    assert.equal((await detailsOf(t, c)).customer.payment_method, null)
  })
})
