import { it } from 'node:test'
import assert from 'node:assert/strict'
import { ATTEMPTS, HOOK, WEBHOOK_URL, withChargebee, chargebeeCompany, deliver } from './chargebee.fixtures.ts'
import { SUB, billedCompany, detailsOf, eventsOf, mirrorOf, statusOf } from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
const iso = (seconds: number) => new Date(seconds * 1000).toISOString()

// The app on a fake Chargebee, built and closed by the hooks withChargebee registers.
/** POST /api/v1/subscription/webhooks/chargebee: Basic auth, idempotency by event id, ordering by resource_version, mirror fields. */
forEachEngine('chargebee webhooks', (engine) => {
  const { t, fake } = withChargebee(engine)

  it('401 without the configured Basic credentials, whatever the body; a bearer token is no credential', async () => {
    const c = await chargebeeCompany(t, fake)
    const event = fake.event('subscription_cancelled', {
      subscription: {
        ...fake.subscriptions.get(c.subscriptionId)!,
        status: 'cancelled',
        cancelled_at: 1,
        resource_version: Date.now() * 2,
      },
    })
    for (const authorization of [
      '',
      basic(HOOK.user, 'wrong'),
      basic('other', HOOK.password),
      basic(HOOK.user, `${HOOK.password}x`),
      `Bearer ${t.platformToken}`,
      'Basic !!!',
      `Basic ${Buffer.from(HOOK.user).toString('base64')}`,
    ]) {
      const res = await deliver(t, event, authorization)
      assert.deepEqual([res.statusCode, res.json().code], [401, 'unauthorized'], authorization)
      assert.match(String(res.headers['www-authenticate']), /^Basic realm=/)
    }
    // Unauthenticated junk is 401 too, not 400: nothing is parsed before the credentials.
    assert.equal(
      (
        await t.call({
          method: 'POST',
          url: WEBHOOK_URL,
          token: null,
          headers: { 'content-type': 'application/json' },
          body: '{not json',
        })
      ).statusCode,
      401,
    )
    assert.equal((await statusOf(t, c)).status, 'in_trial')
  })

  it('activation and renewal reported by Chargebee update the subscription, the mirror fields and the history; a repeated event changes nothing', async () => {
    const c = await chargebeeCompany(t, fake)
    const added = fake.addCard(c.id, { brand: 'visa', last4: '4242', expiry_month: 12, expiry_year: 2099 })
    const cardEvent = fake.event('payment_source_added', { customerId: c.id, payment_source: added })
    assert.deepEqual((await deliver(t, cardEvent)).json(), { event_id: cardEvent.id, outcome: 'applied' })
    assert.deepEqual((await detailsOf(t, c)).customer.payment_method, {
      type: 'card',
      brand: 'visa',
      last4: '4242',
      expiry_month: 12,
      expiry_year: 2099,
    })

    // Chargebee ends the trial (its scheduler) and reports it.
    const s0 = fake.subscriptions.get(c.subscriptionId)!
    const termEnd = s0.trial_end + 31 * 86_400
    fake.change(c.subscriptionId, (s) =>
      Object.assign(s, {
        status: 'active',
        current_term_start: s.trial_end,
        current_term_end: termEnd,
        next_billing_at: termEnd,
      }),
    )
    const activated = fake.event('subscription_activated', { subscriptionId: c.subscriptionId }, s0.trial_end)
    const res = await deliver(t, activated)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { event_id: activated.id, outcome: 'applied' })
    assert.deepEqual(await statusOf(t, c), {
      subscription_id: c.subscriptionId,
      status: 'active',
      plan: c.plans.basic,
      current_term_end: termEnd,
      trial_end: s0.trial_end,
      cancelled_at: null,
      scheduled_cancellation_at: null,
      features: ['stamping'],
    })
    const m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_status, m.subscription_expiration_date, m.trial_expiration_date],
      ['active', iso(termEnd), iso(s0.trial_end)],
    )
    const last = (await eventsOf(t, c.id)).at(-1)!
    assert.deepEqual(
      [last.type, last.from, last.to, last.actor, last.at],
      ['activated', 'in_trial', 'active', 'chargebee', iso(s0.trial_end)],
    )
    assert.deepEqual((last.details as any).provider_event, { id: activated.id, type: 'subscription_activated' })

    // The same event again (Chargebee retries): 200, nothing changes, no second history entry.
    const count = (await eventsOf(t, c.id)).length
    for (let i = 0; i < 2; i++)
      assert.deepEqual((await deliver(t, activated)).json(), { event_id: activated.id, outcome: 'duplicate' })
    assert.equal((await eventsOf(t, c.id)).length, count)

    // Two deliveries of one event at once: applied once.
    const next = termEnd + 30 * 86_400
    fake.change(c.subscriptionId, (s) =>
      Object.assign(s, { current_term_start: termEnd, current_term_end: next, next_billing_at: next }),
    )
    const renewed = fake.event('subscription_renewed', { subscriptionId: c.subscriptionId }, termEnd)
    const both = await Promise.all([deliver(t, renewed), deliver(t, renewed)])
    assert.deepEqual(both.map((r) => r.json().outcome).sort(), ['applied', 'duplicate'])
    assert.equal((await statusOf(t, c)).current_term_end, next)
    assert.deepEqual(
      (await eventsOf(t, c.id)).slice(count).map((e) => [e.type, e.at]),
      [['renewed', iso(termEnd)]],
    )
  })

  it('out of order: an older state never overwrites a newer one', async () => {
    const c = await chargebeeCompany(t, fake)
    const older = fake.event('subscription_changed', {
      subscription: fake.change(c.subscriptionId, (s) => {
        s.subscription_items[0].quantity = 7
      }),
    })
    const newer = fake.event('subscription_changed', {
      subscription: fake.change(c.subscriptionId, (s) => {
        s.subscription_items[0].quantity = 9
      }),
    })
    assert.equal((await deliver(t, newer)).json().outcome, 'applied')
    assert.equal((await mirrorOf(t, c.id)).plan_quantity, 9)
    assert.equal((await deliver(t, older)).json().outcome, 'stale')
    assert.equal((await mirrorOf(t, c.id)).plan_quantity, 9)
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => e.type),
      ['created', 'changed'],
    )
    // The same state again under another event id: nothing moved, nothing recorded.
    const again = fake.event('subscription_changed', {
      subscription: {
        ...newer.content.subscription,
        resource_version: newer.content.subscription!.resource_version + 1,
      },
    })
    assert.equal((await deliver(t, again)).json().outcome, 'unchanged')
    assert.equal((await eventsOf(t, c.id)).length, 2)
  })

  it("an event older than a change made through this API is not trusted: Chargebee's current state is read and applied", async () => {
    const c = await chargebeeCompany(t, fake)
    const created = fake.event('subscription_created', { subscriptionId: c.subscriptionId })
    t.clock.set(new Date(t.clock.now().getTime() + 60_000).toISOString())
    const res = await t.call({
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
      body: { plan_quantity: 3 },
    })
    assert.equal(res.statusCode, 200, res.body)
    const from = fake.requests.length
    // Delivered late: its snapshot still says 5.
    assert.equal(created.content.subscription!.subscription_items[0].quantity, 5)
    assert.equal((await deliver(t, created)).json().outcome, 'unchanged')
    assert.deepEqual(
      fake.requests.slice(from).map((r) => `${r.method} ${r.path}`),
      [`GET /subscriptions/${c.subscriptionId}`],
    )
    assert.equal((await mirrorOf(t, c.id)).plan_quantity, 3)
    // Chargebee down while reading: 502, nothing recorded, so its retry is applied.
    // It occurred before the API's change too, whatever time the loaded machine took since (its
    // own time would be the clock's, which moves with real time: past the change, it is trusted).
    const later = fake.event(
      'subscription_changed',
      { subscription: { ...created.content.subscription!, resource_version: Date.now() * 3 } },
      created.occurred_at,
    )
    fake.fail({ status: 500, match: /^GET \/subscriptions\//, times: ATTEMPTS }) // a read is retried: every attempt fails
    assert.equal((await deliver(t, later)).statusCode, 502)
    assert.equal((await deliver(t, later)).json().outcome, 'unchanged')
    assert.equal((await mirrorOf(t, c.id)).plan_quantity, 3)
  })

  it('cancellation scheduled, removed and done at Chargebee: status, scheduled_cancellation_at, mirror and features follow', async () => {
    const c = await chargebeeCompany(t, fake)
    fake.change(c.subscriptionId, (s) =>
      Object.assign(s, {
        status: 'active',
        current_term_start: s.trial_end,
        current_term_end: s.trial_end + 30 * 86_400,
      }),
    )
    assert.equal(
      (await deliver(t, fake.event('subscription_activated', { subscriptionId: c.subscriptionId }))).json().outcome,
      'applied',
    )
    const end = fake.subscriptions.get(c.subscriptionId)!.current_term_end
    fake.change(c.subscriptionId, (s) => Object.assign(s, { status: 'non_renewing', cancelled_at: end }))
    assert.equal(
      (await deliver(t, fake.event('subscription_cancellation_scheduled', { subscriptionId: c.subscriptionId }))).json()
        .outcome,
      'applied',
    )
    let d = await detailsOf(t, c)
    assert.deepEqual(
      [
        d.subscription.status,
        d.subscription.scheduled_cancellation_at,
        d.subscription.cancelled_at,
        d.subscription.next_billing_at,
      ],
      ['non_renewing', end, end, null],
    ) // cancelled_at: the scheduled moment, as Chargebee shows it
    fake.change(c.subscriptionId, (s) => {
      s.status = 'active'
      delete s.cancelled_at
    })
    assert.equal(
      (
        await deliver(
          t,
          fake.event('subscription_scheduled_cancellation_removed', { subscriptionId: c.subscriptionId }),
        )
      ).json().outcome,
      'applied',
    )
    d = await detailsOf(t, c)
    assert.deepEqual([d.subscription.status, d.subscription.scheduled_cancellation_at], ['active', null])
    fake.change(c.subscriptionId, (s) =>
      Object.assign(s, {
        status: 'cancelled',
        cancelled_at: end,
        current_term_start: undefined,
        current_term_end: undefined,
      }),
    )
    assert.equal(
      (await deliver(t, fake.event('subscription_cancelled', { subscriptionId: c.subscriptionId }, end))).json()
        .outcome,
      'applied',
    )
    assert.deepEqual(await statusOf(t, c), {
      subscription_id: c.subscriptionId,
      status: 'cancelled',
      plan: c.plans.basic,
      current_term_end: end,
      trial_end: d.subscription.trial_end,
      cancelled_at: end,
      scheduled_cancellation_at: null,
      features: [],
    })
    const m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_status, m.subscription_expiration_date, m.subscribed_features, m.areas.includes('stamping')],
      ['cancelled', iso(end), [], false],
    )
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => [e.type, e.to]),
      [
        ['created', 'in_trial'],
        ['activated', 'active'],
        ['cancellation_scheduled', 'non_renewing'],
        ['scheduled_cancellation_removed', 'active'],
        ['cancelled', 'cancelled'],
      ],
    )
  })

  it('ignored with 200: unknown types, the trial end reminder, subscriptions this service did not make or that are local', async () => {
    const c = await chargebeeCompany(t, fake)
    const local = await billedCompany(t)
    const snapshot = fake.subscriptions.get(c.subscriptionId)!
    const cases = [
      fake.event('coupon_updated', { subscriptionId: c.subscriptionId }),
      fake.event('subscription_trial_end_reminder', { subscriptionId: c.subscriptionId }),
      fake.event('subscription_changed', {
        subscription: { ...snapshot, id: 'AzZlGJT3aBc1', customer_id: 'AzZlGJT3aBc0', status: 'active' },
      }),
      fake.event('subscription_changed', {
        subscription: { ...snapshot, id: '00000000-0000-4000-8000-000000000000', status: 'active' },
      }),
      fake.event('subscription_cancelled', {
        subscription: {
          ...snapshot,
          id: local.subscriptionId,
          customer_id: local.id,
          status: 'cancelled',
          cancelled_at: 1,
        },
      }),
    ]
    for (const event of cases) {
      const res = await deliver(t, event)
      assert.deepEqual(
        [res.statusCode, res.json()],
        [200, { event_id: event.id, outcome: 'ignored' }],
        event.event_type,
      )
    }
    assert.equal((await statusOf(t, c)).status, 'in_trial')
    assert.equal((await statusOf(t, local)).status, 'in_trial')
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => e.type),
      ['created'],
    )
  })

  it('400 for a malformed event, naming what is wrong; nothing is recorded, so a corrected delivery is applied', async () => {
    const c = await chargebeeCompany(t, fake)
    fake.change(c.subscriptionId, (s) => {
      s.subscription_items[0].quantity = 11
    })
    const good = fake.event('subscription_changed', { subscriptionId: c.subscriptionId })
    const bad: [unknown, RegExp][] = [
      [{ ...good, id: undefined }, /body\/id is required/],
      [{ ...good, occurred_at: 'yesterday' }, /body\/occurred_at must be integer/],
      [{ ...good, content: 'nope' }, /body\/content must be object/],
      [{ ...good, content: {} }, /body\/content\/subscription must be a Chargebee subscription/],
      [
        { ...good, content: { subscription: { ...good.content.subscription, status: 'sleeping' } } },
        /body\/content\/subscription/,
      ],
      [
        { ...fake.event('payment_source_added', { customerId: c.id }), id: good.id },
        /body\/content\/payment_source must carry a card/,
      ],
      [[good], /body must be object/],
    ]
    for (const [body, message] of bad) {
      const res = await deliver(t, body)
      assert.deepEqual([res.statusCode, res.json().code], [400, 'validation_failed'], res.body)
      assert.match(res.json().errors, message)
    }
    const notJson = await t.call({
      method: 'POST',
      url: WEBHOOK_URL,
      token: null,
      headers: { authorization: basic(HOOK.user, HOOK.password), 'content-type': 'application/json' },
      body: '{"id": ',
    })
    assert.equal(notJson.statusCode, 400)
    assert.equal((await deliver(t, good)).json().outcome, 'applied')
    assert.equal((await mirrorOf(t, c.id)).plan_quantity, 11)
  })

  it('a plan Chargebee names but this catalogue lacks is 400 naming it, nothing recorded; once the plan exists the retry applies', async () => {
    const c = await chargebeeCompany(t, fake)
    const sku = `cb-only-${crypto.randomUUID().slice(0, 8)}`
    const event = fake.event('subscription_changed', {
      subscription: fake.change(c.subscriptionId, (s) => {
        s.subscription_items[0].item_price_id = sku
      }),
    })
    const refused = await deliver(t, event)
    assert.equal(refused.statusCode, 400, refused.body)
    assert.match(
      refused.json().errors,
      new RegExp(
        `body/content/subscription/subscription_items names the plan ${sku}, which is not in this service's catalogue`,
      ),
    )
    assert.equal((await detailsOf(t, c)).plan.sku, c.plans.basic)
    const created = await t.call({
      method: 'POST',
      url: `${SUB}/plans`,
      body: {
        plan: { sku, name: 'Chargebee only', price: 10, plan_family: 'core', period_unit: 'month', features: [] },
      },
    })
    assert.equal(created.statusCode, 202)
    assert.equal((await deliver(t, event)).json().outcome, 'applied')
    assert.equal((await detailsOf(t, c)).plan.sku, sku)
  })

  it('is in the OpenAPI document with its 401', async () => {
    const doc = await t.json(200, { url: '/openapi.json', token: null })
    const op = doc.paths[`${SUB}/webhooks/chargebee`].post
    assert.equal(op.operationId, 'receiveChargebeeWebhook')
    assert.ok(['200', '400', '401'].every((s) => s in op.responses))
  })
})
