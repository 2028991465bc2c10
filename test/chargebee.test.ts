import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startFakeChargebee, type FakeChargebee } from './helpers/fake-chargebee.ts'
import { createChargebeeProvider } from '../src/modules/chargebee/chargebee.provider.ts'
import { statusOf as httpStatusOf } from '../src/http/error-status.ts'
import {
  API_KEY,
  ATTEMPTS,
  withChargebee,
  chargebeeCompany,
  chargebeeProduct,
  createCompany,
} from './chargebee.fixtures.ts'
import {
  SUB,
  addon,
  call,
  coupon,
  detailsOf,
  eventsOf,
  json,
  mirrorOf,
  statusOf,
  CARD,
} from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

const unixOf = (d: Date) => Math.floor(d.getTime() / 1000)

// The app on a fake Chargebee, built and closed by the hooks withChargebee registers.
/** The Chargebee provider through HTTP: the real SDK against a fake Chargebee on 127.0.0.1 (no other network). */
forEachEngine('chargebee provider', (engine) => {
  const { t, fake } = withChargebee(engine)

  it('a company on a chargebee product: customer and subscription created at Chargebee with our ids', async () => {
    const from = fake.requests.length
    const now = t.clock.now()
    const c = await chargebeeCompany(t, fake)
    const company = await json(t, 200, { url: `/api/v1/companies/${c.id}` })
    const calls = fake.requests.slice(from)
    assert.deepEqual(
      calls.map((r) => `${r.method} ${r.path}`),
      ['POST /customers', `POST /customers/${c.id}/subscription_for_items`],
    )
    assert.ok(
      calls.every((r) => r.apiKey === API_KEY),
      'HTTP Basic with the API key',
    )
    assert.deepEqual(calls[0]!.params, {
      id: c.id,
      company: company.name,
      email: 'billing@acme.example',
      billing_address: { company: company.name, country: 'IT' },
    })
    const trialEnd = unixOf(now) + 30 * 86_400
    assert.deepEqual(calls[1]!.params, {
      id: c.subscriptionId,
      subscription_items: [{ item_price_id: c.plans.basic, quantity: '5' }],
      trial_end: String(trialEnd),
    })
    assert.equal(fake.subscriptions.get(c.subscriptionId)!.customer_id, c.id)

    const d = await detailsOf(t, c)
    assert.deepEqual(
      [
        d.subscription.provider,
        d.subscription.status,
        d.subscription.customer_id,
        d.subscription.plan_id,
        d.subscription.plan_quantity,
        d.subscription.trial_end,
        d.subscription.current_term_end,
        d.subscription.next_billing_at,
      ],
      ['chargebee', 'in_trial', c.id, c.plans.basic, 5, trialEnd, trialEnd, trialEnd],
    )
    const m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_id, m.subscription_status, m.subscription_plan, m.trial_expiration_date],
      [c.subscriptionId, 'in_trial', c.plans.basic, new Date(trialEnd * 1000).toISOString()],
    )

    // Chargebee moves time: this service schedules nothing for its subscriptions.
    t.clock.set(new Date((trialEnd + 86_400) * 1000).toISOString())
    await t.app.services.scheduler.runDue()
    t.clock.set(now.toISOString())
    assert.equal((await statusOf(t, { id: c.id, token: t.platformToken })).status, 'in_trial')
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => e.type),
      ['created'],
    )
  })

  it('creation refused or failed at Chargebee: nothing is stored, the answer says why', async () => {
    const db = t.app.database.db
    const count = async () =>
      Number(
        (
          await db
            .selectFrom('companies')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      )
    const before = await count()
    const expectRefusal = async (
      product: Awaited<ReturnType<typeof chargebeeProduct>>,
      status: number,
      errors: RegExp,
      retryAfter?: string,
    ) => {
      const res = await createCompany(t, product)
      assert.deepEqual([res.statusCode, res.json().code], [status, 'provider_error'], res.body)
      assert.match(res.json().errors, errors)
      assert.equal(res.headers['retry-after'], retryAfter)
    }
    // The plan sku is no item price at Chargebee (its 404 resource_not_found): our catalogue and Chargebee's disagree, 502.
    await expectRefusal(
      await chargebeeProduct(t, fake, { atFake: false }),
      502,
      /does not know an object needed to create the subscription.*resource_not_found/,
    )
    const product = await chargebeeProduct(t, fake)
    fake.fail({
      status: 400,
      api_error_code: 'param_wrong_value',
      type: 'invalid_request',
      message: 'email : invalid email',
      match: /^POST \/customers$/,
    })
    await expectRefusal(
      product,
      400,
      /Chargebee refused to create the customer \(param_wrong_value\): email : invalid email/,
    )
    fake.fail({
      status: 429,
      api_error_code: 'api_request_limit_exceeded',
      message: 'Sorry, access has been blocked temporarily due to request count exceeding acceptable limits.',
      retryAfter: 7,
    })
    await expectRefusal(product, 503, /retry in 7 s/, '7')
    // Failing every attempt: read back, the subscription is not at Chargebee; the customer made for it is deleted there.
    fake.fail({ status: 500, api_error_code: 'internal_error', match: /subscription_for_items$/, times: ATTEMPTS })
    const customers = fake.customers.size
    await expectRefusal(product, 502, /Chargebee failed to create the subscription \(HTTP 500/)
    assert.equal(await count(), before)
    assert.equal(fake.customers.size, customers, 'no orphan customer at Chargebee')
    assert.match(fake.requests.at(-1)!.path, /^\/customers\/[^/]+\/delete$/)
  })

  it("estimate and update: Chargebee's estimate in our shape, items, addons and coupon as Chargebee parameters", async () => {
    const c = await chargebeeCompany(t, fake)
    const a1 = await addon(t, { name: 'Badge', price: 5 })
    fake.addItemPrice({ id: a1, price: 500, period_unit: 'month', item_type: 'addon' })
    const code = await coupon(t, { discount_value: 10 })
    fake.addCoupon({ id: code, discount_type: 'percentage', discount_percentage: 10 })

    const query = {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.plans.pro!,
      plan_quantity: '3',
      addons: [a1],
      coupon_code: code,
    }
    const from = fake.requests.length
    const est = await json(t, 200, { url: `${SUB}/${c.subscriptionId}/estimate`, query, token: c.token })
    const sent = fake.requests.slice(from)
    assert.deepEqual(
      sent.map((r) => `${r.method} ${r.path}`),
      ['POST /estimates/update_subscription_for_items'],
    )
    // Only what changes (the plan and its quantity, an added addon, an added coupon), with the update's options.
    assert.deepEqual(sent[0]!.params, {
      subscription: { id: c.subscriptionId },
      coupon_ids: [code],
      prorate: 'true',
      invoice_immediately: 'true',
      subscription_items: [
        { item_price_id: c.plans.pro, quantity: '3' },
        { item_price_id: a1, quantity: '1' },
      ],
    })
    // In trial Chargebee bills nothing now: its next_invoice_estimate is the answer.
    // 4990 × 3 + 500 = 15470; 10 % = 1547; VAT 22 % of 13923 = 3063.06 → 3063; total 16986.
    const trialEnd = (await statusOf(t, { id: c.id, token: t.platformToken })).trial_end
    assert.deepEqual(est.estimate, {
      subscription_estimate: { status: 'in_trial', next_billing_at: trialEnd },
      invoice_estimate: {
        line_items: [
          {
            entity_type: 'plan',
            pricing_model: 'per_unit',
            entity_id: c.plans.pro,
            description: c.plans.pro,
            unit_amount: 4990,
            quantity: 3,
            amount: 14970,
          },
          {
            entity_type: 'addon',
            entity_id: a1,
            description: a1,
            pricing_model: 'per_unit',
            unit_amount: 500,
            quantity: 1,
            amount: 500,
          },
        ],
        discounts: [{ description: code, amount: 1547 }],
        sub_total: 15470,
        taxes: [{ name: 'IT VAT', rate: 22, amount: 3063 }],
        total: 16986,
        credits_applied: 0,
        amount_due: 16986,
        currency_code: 'EUR',
      },
    })

    const res = await call(t, {
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
      body: { subscription_plan: c.plans.pro, plan_quantity: 3, addons: [a1], coupon_code: code },
    })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    assert.deepEqual(body.estimate, est.estimate)
    assert.deepEqual(
      [
        body.subscription.plan_id,
        body.subscription.plan_quantity,
        body.subscription.addons,
        body.subscription.coupon_code,
      ],
      [c.plans.pro, 3, [{ id: a1, quantity: 1 }], code],
    )
    const atFake = fake.subscriptions.get(c.subscriptionId)!
    assert.deepEqual(
      atFake.subscription_items.map((i: any) => [i.item_price_id, i.item_type, i.quantity]),
      [
        [c.plans.pro, 'plan', 3],
        [a1, 'addon', 1],
      ],
    )
    assert.deepEqual(
      atFake.coupons.map((k: any) => k.coupon_id),
      [code],
    )
    const m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_plan, m.plan_quantity, m.subscribed_features, m.areas.includes('expense')],
      [c.plans.pro, 3, ['stamping', 'expense'], true],
    )
    const changed = (await eventsOf(t, c.id)).at(-1)!
    assert.deepEqual(
      [changed.type, changed.actor, (changed.details as any).changes.plan_sku],
      ['changed', c.client.client_id, [c.plans.basic, c.plans.pro]],
    )

    // What this service refuses never reaches Chargebee.
    const before = fake.requests.length
    assert.equal(
      (
        await call(t, {
          method: 'PUT',
          url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
          token: c.token,
          body: { subscription_plan: 'no-such-plan' },
        })
      ).statusCode,
      400,
    )
    assert.equal(fake.requests.length, before)
  })

  it('cancel at the end of the trial, remove the scheduled cancellation, cancel now', async () => {
    const c = await chargebeeCompany(t, fake)
    const trialEnd = (await statusOf(t, c)).trial_end
    assert.equal(
      (
        await call(t, {
          method: 'PUT',
          url: `${SUB}/${c.id}/cancel`,
          token: c.token,
          body: { cancellation_reason: 'too expensive' },
        })
      ).statusCode,
      200,
    )
    const { idempotencyKey, ...cancelCall } = fake.requests.at(-1)!
    assert.deepEqual(cancelCall, {
      method: 'POST',
      path: `/subscriptions/${c.subscriptionId}/cancel_for_items`,
      params: { cancel_option: 'end_of_term' },
      apiKey: API_KEY,
    })
    assert.match(idempotencyKey ?? '', /^[0-9a-f-]{36}$/, 'every write carries an idempotency key')
    let d = await detailsOf(t, c)
    assert.deepEqual(
      [
        d.subscription.status,
        d.subscription.scheduled_cancellation_at,
        d.subscription.cancelled_at,
        d.subscription.cancellation_reason,
        d.subscription.next_billing_at,
      ],
      ['in_trial', trialEnd, trialEnd, 'too expensive', null],
    ) // cancelled_at: the scheduled moment
    // Already scheduled: refused here (409) without asking Chargebee.
    const before = fake.requests.length
    assert.equal((await call(t, { method: 'PUT', url: `${SUB}/${c.id}/cancel`, token: c.token })).statusCode, 409)
    assert.equal(fake.requests.length, before)

    assert.equal(
      (
        await call(t, {
          method: 'PUT',
          url: `${SUB}/${c.id}/remove_scheduled_cancellation/${c.subscriptionId}`,
          token: c.token,
        })
      ).statusCode,
      200,
    )
    assert.equal(fake.requests.at(-1)!.path, `/subscriptions/${c.subscriptionId}/remove_scheduled_cancellation`)
    d = await detailsOf(t, c)
    assert.deepEqual(
      [d.subscription.status, d.subscription.scheduled_cancellation_at, d.subscription.cancellation_reason],
      ['in_trial', null, null],
    )
    assert.equal(fake.subscriptions.get(c.subscriptionId)!.cancelled_at, undefined)

    // Cancelled now: Chargebee is told to credit the unused charges (credit_option prorate, the default) or not.
    const refused = await call(t, {
      method: 'PUT',
      url: `${SUB}/${c.subscriptionId}/cancel?end_of_term=false`,
      token: c.token,
      body: { credit_option: 'full' },
    })
    assert.deepEqual(
      [refused.statusCode, fake.requests.at(-1)!.path],
      [400, `/subscriptions/${c.subscriptionId}/remove_scheduled_cancellation`],
      refused.body,
    )
    assert.equal(
      (await call(t, { method: 'PUT', url: `${SUB}/${c.subscriptionId}/cancel?end_of_term=false`, token: c.token }))
        .statusCode,
      200,
    )
    assert.deepEqual(fake.requests.at(-1)!.params, {
      cancel_option: 'immediately',
      credit_option_for_current_term_charges: 'prorate',
    })
    const now = unixOf(t.clock.now())
    assert.deepEqual(await statusOf(t, c), {
      subscription_id: c.subscriptionId,
      status: 'cancelled',
      plan: c.plans.basic,
      current_term_end: now,
      trial_end: trialEnd,
      cancelled_at: now,
      scheduled_cancellation_at: null,
      features: [],
    })
    const m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_status, m.subscription_expiration_date, m.subscribed_features],
      ['cancelled', new Date(now * 1000).toISOString(), []],
    )
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => [e.type, e.to]),
      [
        ['created', 'in_trial'],
        ['cancellation_scheduled', 'in_trial'],
        ['scheduled_cancellation_removed', 'in_trial'],
        ['cancelled', 'cancelled'],
      ],
    )
  })

  it('cancel now with credit_option none: Chargebee is told to credit nothing', async () => {
    const c = await chargebeeCompany(t, fake)
    const res = await call(t, {
      method: 'PUT',
      url: `${SUB}/${c.id}/cancel?end_of_term=false`,
      token: c.token,
      body: { credit_option: 'none' },
    })
    assert.equal(res.statusCode, 200, res.body)
    const { idempotencyKey: _, ...cancelCall } = fake.requests.at(-1)!
    assert.deepEqual(cancelCall, {
      method: 'POST',
      path: `/subscriptions/${c.subscriptionId}/cancel_for_items`,
      params: { cancel_option: 'immediately', credit_option_for_current_term_charges: 'none' },
      apiKey: API_KEY,
    })
    assert.equal((await statusOf(t, c)).status, 'cancelled')
  })

  it("Chargebee's errors: 400 → 400, 409 → 409, 404 and 500 → 502, 429 → 503 with Retry-After; nothing stored", async () => {
    const c = await chargebeeCompany(t, fake)
    const url = `${SUB}/companies/${c.id}/update/${c.subscriptionId}`
    const before = await detailsOf(t, c)
    const events = (await eventsOf(t, c.id)).length
    const cases: [Parameters<FakeChargebee['fail']>[0], number, RegExp, string | undefined][] = [
      [
        {
          status: 400,
          api_error_code: 'invalid_request',
          type: 'invalid_request',
          message: 'subscription_items[quantity][0] : cannot be more than 100',
        },
        400,
        /Chargebee refused .*invalid_request.*cannot be more than 100/,
        undefined,
      ],
      [
        {
          status: 409,
          api_error_code: 'invalid_state_for_request',
          type: 'invalid_request',
          message: 'Subscription is in a state that does not allow this',
        },
        409,
        /state/,
        undefined,
      ],
      [
        {
          status: 404,
          api_error_code: 'resource_not_found',
          type: 'invalid_request',
          message: 'Subscription not found',
        },
        502,
        /does not know/,
        undefined,
      ],
      [
        { status: 500, api_error_code: 'internal_error', message: 'Sorry, something went wrong' },
        502,
        /HTTP 500/,
        undefined,
      ],
      [
        { status: 429, api_error_code: 'api_request_limit_exceeded', message: 'Too many requests', retryAfter: 12 },
        503,
        /retry in 12 s/,
        '12',
      ],
    ]
    for (const [failure, status, message, retryAfter] of cases) {
      // A 5xx is retried (every attempt fails here); a 4xx, and a 429 asking for longer than we wait, are not.
      fake.fail({ ...failure, match: /^POST \/estimates\//, times: failure.status >= 500 ? ATTEMPTS : 1 })
      const res = await call(t, { method: 'PUT', url, token: c.token, body: { plan_quantity: 9 } })
      assert.equal(res.statusCode, status, `${failure.status}: ${res.body}`)
      assert.equal(res.json().code, 'provider_error')
      assert.match(res.json().errors, message)
      assert.equal(res.headers['retry-after'], retryAfter)
    }
    // The change itself failing (after its estimate) changes nothing either.
    fake.fail({ status: 500, match: /update_for_items$/, times: ATTEMPTS })
    assert.equal((await call(t, { method: 'PUT', url, token: c.token, body: { plan_quantity: 9 } })).statusCode, 502)
    fake.fail({ status: 400, api_error_code: 'invalid_request', match: /cancel_for_items$/ })
    assert.equal((await call(t, { method: 'PUT', url: `${SUB}/${c.id}/cancel`, token: c.token })).statusCode, 400)
    fake.fail({ status: 503, api_error_code: 'internal_temporary_error', match: /estimates/, times: ATTEMPTS })
    assert.equal(
      (
        await call(t, {
          url: `${SUB}/${c.subscriptionId}/estimate`,
          token: c.token,
          query: { company_id: c.id, product_sku: c.productSku, subscription_plan: c.plans.basic!, plan_quantity: '2' },
        })
      ).statusCode,
      502,
    )
    assert.deepEqual(await detailsOf(t, c), before)
    assert.equal((await eventsOf(t, c.id)).length, events)
  })

  it('hosted pages at Chargebee: checkout of the existing subscription (1), portal session (10), payment sources (11)', async () => {
    const c = await chargebeeCompany(t, fake)
    const redirect = 'https://localhost/billing/done'
    const open = (path: string) =>
      call(t, { url: `${SUB}/${c.id}/${path}/`, token: c.token, query: { redirect_url: redirect } })

    let from = fake.requests.length
    const manager = await open('manager_page')
    assert.equal(manager.statusCode, 200, manager.body)
    const [checkout] = fake.requests.slice(from)
    assert.deepEqual(
      [checkout!.method, checkout!.path, checkout!.params],
      [
        'POST',
        '/hosted_pages/checkout_existing_for_items',
        {
          subscription: { id: c.subscriptionId },
          subscription_items: [{ item_price_id: c.plans.basic, quantity: '5' }],
          redirect_url: redirect,
        },
      ],
    )
    assert.match(manager.json().url, /^https:\/\/acme-test\.chargebee\.com\/pages\/v4\/hp_/)
    assert.ok(checkout!.idempotencyKey, 'a hosted page is a write: it carries an idempotency key')
    assert.deepEqual(Object.keys(manager.json()).sort(), ['expires_at', 'url'])
    assert.equal(manager.json().expires_at, unixOf(t.clock.now()) + 3 * 86_400)

    from = fake.requests.length
    const portal = await open('portal')
    assert.equal(portal.statusCode, 200, portal.body)
    assert.deepEqual(
      fake.requests.slice(from).map((r) => [r.path, r.params]),
      [['/portal_sessions', { customer: { id: c.id }, redirect_url: redirect }]],
    )
    const p = portal.json()
    assert.deepEqual(
      [p.object, p.status, p.customer_id, p.redirect_url, p.created_at, p.expires_at],
      ['portal_session', 'created', c.id, redirect, unixOf(t.clock.now()), unixOf(t.clock.now()) + 3600],
    )
    assert.ok(p.access_url.endsWith(p.token) && /^portal_/.test(p.id))

    from = fake.requests.length
    const payment = await open('payment_page')
    assert.equal(payment.statusCode, 200, payment.body)
    assert.deepEqual(
      fake.requests.slice(from).map((r) => [r.path, r.params]),
      [['/hosted_pages/manage_payment_sources', { customer: { id: c.id }, redirect_url: redirect }]],
    )
    const h = payment.json()
    assert.deepEqual([h.object, h.type, h.state, h.embed], ['hosted_page', 'manage_payment_sources', 'created', false])
    assert.ok(Number.isInteger(h.resource_version) && h.updated_at === h.created_at)

    // Refused here before Chargebee is asked; Chargebee's failures as elsewhere.
    from = fake.requests.length
    assert.equal(
      (
        await call(t, {
          url: `${SUB}/${c.id}/portal/`,
          token: c.token,
          query: { redirect_url: 'https://evil.example/x' },
        })
      ).statusCode,
      400,
    )
    assert.equal(fake.requests.length, from)
    fake.fail({ status: 429, api_error_code: 'api_request_limit_exceeded', retryAfter: 3, match: /portal_sessions/ })
    const limited = await open('portal')
    assert.deepEqual(
      [limited.statusCode, limited.json().code, limited.headers['retry-after']],
      [503, 'provider_error', '3'],
    )
    fake.fail({ status: 404, api_error_code: 'resource_not_found', match: /manage_payment_sources/ })
    assert.equal((await open('payment_page')).statusCode, 502)
  })

  it('a card is taken only through the payment page (409)', async () => {
    const c = await chargebeeCompany(t, fake)
    const res = await call(t, { method: 'PUT', url: `${SUB}/${c.id}/payment_source`, body: CARD })
    assert.deepEqual([res.statusCode, res.json().code], [409, 'provider_error'])
    assert.match(res.json().errors, /payment page/)
    assert.equal((await detailsOf(t, c)).customer.payment_method, null)
  })
})

describe('chargebee provider without a database', () => {
  it('a wrong API key (401 api_authentication_failed) and an unreachable Chargebee are 502 provider_error', async () => {
    const fake = await startFakeChargebee({ apiKey: API_KEY, now: () => new Date() })
    try {
      const settings = {
        site: '127.0.0.1',
        hostSuffix: '',
        protocol: 'http' as const,
        port: fake.port,
        timeoutMs: 2000,
      }
      const wrongKey = createChargebeeProvider({ ...settings, apiKey: 'not-the-key' })
      await assert.rejects(
        wrongKey.fetchSubscription('00000000-0000-4000-8000-000000000000'),
        (err: any) =>
          httpStatusOf(err) === 502 &&
          err.code === 'provider_error' &&
          /HTTP 401, api_authentication_failed/.test(err.message),
      )
      assert.equal(fake.requests.at(-1)!.apiKey, 'not-the-key')
      const unknown = createChargebeeProvider({ ...settings, apiKey: API_KEY })
      await assert.rejects(
        unknown.fetchSubscription('00000000-0000-4000-8000-000000000000'),
        (err: any) =>
          httpStatusOf(err) === 502 &&
          /does not know an object needed to read the subscription \(resource_not_found\)/.test(err.message),
      )
    } finally {
      await fake.close()
    }
    // The server is gone: connection refused.
    const gone = createChargebeeProvider({
      site: '127.0.0.1',
      hostSuffix: '',
      protocol: 'http',
      port: fake.port,
      apiKey: API_KEY,
      timeoutMs: 2000,
    })
    await assert.rejects(
      gone.fetchSubscription('x'),
      (err: any) =>
        httpStatusOf(err) === 502 && /Chargebee could not be reached to read the subscription/.test(err.message),
    )
  })
})
