import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { SUB, CARD, billedCompany, call, json, type BillingFixture } from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/** Who may call the subscription routes (2, 3, 6, 8, 9, 14, payment source), and the 404s. */
onEachEngine('subscription access', (t) => {
  let a: BillingFixture
  let b: BillingFixture
  before(async () => {
    a = await billedCompany(t)
    b = await billedCompany(t)
  })

  const estimateQuery = (c: BillingFixture) => ({
    company_id: c.id,
    product_sku: c.productSku,
    subscription_plan: c.planSku,
    plan_quantity: '1',
  })

  /** Every route of this issue, on company `c`'s subscription as named by `ids`. */
  function routes(ids: { company: string; subscription: string; estimateCompany: string }) {
    return [
      { method: 'PUT' as const, url: `${SUB}/${ids.company}/cancel` },
      { method: 'PUT' as const, url: `${SUB}/${ids.subscription}/cancel` },
      { method: 'PUT' as const, url: `${SUB}/${ids.company}/remove_scheduled_cancellation/${ids.subscription}` },
      {
        method: 'PUT' as const,
        url: `${SUB}/companies/${ids.company}/update/${ids.subscription}`,
        body: { plan_quantity: 2 },
      },
      { method: 'GET' as const, url: `${SUB}/${ids.company}/details` },
      { method: 'GET' as const, url: `${SUB}/${ids.company}/status` },
      {
        method: 'GET' as const,
        url: `${SUB}/${ids.subscription}/estimate`,
        query: { ...estimateQuery(a), company_id: ids.estimateCompany },
      },
    ]
  }

  it("another company's token on this company's routes is answered 404, and nothing changes", async () => {
    // The estimate is public: another company's token gets what anyone gets (subscriptions-estimate-access.test.ts).
    for (const route of routes({ company: a.id, subscription: a.subscriptionId, estimateCompany: a.id }).filter(
      (r) => !r.url.includes('/estimate'),
    )) {
      const res = await call(t, { ...route, token: b.token })
      assert.equal(res.statusCode, 404, `${route.method} ${route.url}: ${res.body}`)
      assert.equal(res.json().code, 'not_found')
    }
    const status = await json(t, 200, { url: `${SUB}/${a.id}/status`, token: a.token })
    assert.deepEqual([status.status, status.scheduled_cancellation_at], ['in_trial', null])
  })

  it("this company's token with another company's subscription id is answered 404", async () => {
    for (const route of routes({ company: a.id, subscription: b.subscriptionId, estimateCompany: a.id }).filter((r) =>
      r.url.includes(b.subscriptionId),
    )) {
      const res = await call(t, { ...route, token: a.token })
      assert.equal(res.statusCode, 404, `${route.method} ${route.url}: ${res.body}`)
    }
    // The estimate's company_id names another company than the token's: priced as a new subscription, as for anyone.
    const res = await call(t, { url: `${SUB}/${b.subscriptionId}/estimate`, query: estimateQuery(b), token: a.token })
    assert.equal(res.statusCode, 200)
    assert.equal(res.json().estimate.subscription_estimate.status, 'in_trial')
    assert.equal(res.json().estimate.invoice_estimate.credits_applied, 0)
    assert.equal((await json(t, 200, { url: `${SUB}/${b.id}/status`, token: b.token })).status, 'in_trial')
  })

  it('unknown companies and companies without a subscription are 404 on every route', async () => {
    const unknown = randomUUID()
    const bare = randomUUID()
    await t.app.database.db
      .insertInto('companies')
      .values({ id: bare, name: 'No subscription', country: 'IT', timezone: 'Europe/Rome' })
      .execute()
    for (const company of [unknown, bare]) {
      for (const route of routes({ company, subscription: randomUUID(), estimateCompany: company })) {
        const res = await call(t, route)
        assert.equal(res.statusCode, 404, `${route.method} ${route.url}: ${res.body}`)
      }
      assert.equal(
        (await call(t, { method: 'PUT', url: `${SUB}/${company}/payment_source`, body: CARD })).statusCode,
        404,
      )
      assert.equal(
        (await call(t, { url: `${SUB}/${company}/estimate`, query: estimateQuery(a), token: null })).statusCode,
        404,
      )
    }
    const res = await call(t, { url: `${SUB}/${unknown}/details` })
    assert.deepEqual(res.json(), { errors: 'Subscription not found', code: 'not_found' })
  })

  it("needs a token with the company scope; the estimate is public; the card route is the platform's", async () => {
    for (const route of routes({ company: a.id, subscription: a.subscriptionId, estimateCompany: a.id }).filter(
      (r) => !r.url.includes('/estimate'),
    )) {
      const res = await call(t, { ...route, token: null })
      assert.equal(res.statusCode, 401, `${route.method} ${route.url}`)
      assert.match(String(res.headers['www-authenticate']), /invalid_token/)
    }
    const created = await json(t, 201, {
      method: 'POST',
      url: `/api/v1/companies/${a.id}/clients`,
      body: { name: 'reader', scopes: ['read:company', 'read:team'] },
    })
    const reader = await t.tokenFor(created.client_id, created.client_secret)
    assert.equal((await call(t, { url: `${SUB}/${a.id}/details`, token: reader })).statusCode, 200)
    const refused = await call(t, { method: 'PUT', url: `${SUB}/${a.id}/cancel`, token: reader })
    assert.deepEqual([refused.statusCode, refused.json().code], [403, 'insufficient_scope'])
    assert.equal(
      (
        await call(t, {
          method: 'PUT',
          url: `${SUB}/companies/${a.id}/update/${a.subscriptionId}`,
          token: reader,
          body: {},
        })
      ).statusCode,
      403,
    )

    assert.equal(
      (await call(t, { url: `${SUB}/${a.subscriptionId}/estimate`, query: estimateQuery(a), token: null })).statusCode,
      200,
    )
    assert.equal(
      (await call(t, { url: `${SUB}/${a.subscriptionId}/estimate`, query: estimateQuery(a), token: a.token }))
        .statusCode,
      200,
    )
    assert.equal(
      (await call(t, { url: `${SUB}/${a.id}/estimate`, query: estimateQuery(a), token: null })).statusCode,
      200,
    )
    assert.equal(
      (await call(t, { url: `${SUB}/${a.subscriptionId}/estimate`, query: estimateQuery(a), token: 'not-a-token' }))
        .statusCode,
      401,
    )

    assert.equal(
      (await call(t, { method: 'PUT', url: `${SUB}/${a.id}/payment_source`, body: CARD, token: a.token })).statusCode,
      403,
    )
    assert.equal(
      (await call(t, { method: 'PUT', url: `${SUB}/${a.id}/payment_source`, body: CARD, token: null })).statusCode,
      401,
    )
  })

  it('a product whose billing provider is not configured here cannot start a subscription (502), and nothing is stored', async () => {
    const sku = `plan-cb-${randomUUID().slice(0, 8)}`
    await json(t, 202, {
      method: 'POST',
      url: `${SUB}/plans`,
      body: { plan: { sku, name: 'CB', price: 10, plan_family: 'core', period_unit: 'month', features: [] } },
    })
    const product = `product-cb-${randomUUID().slice(0, 8)}`
    await json(t, 202, {
      method: 'POST',
      url: `${SUB}/products`,
      body: {
        product: { sku: product, name: 'CB', visible: true, subscription_manager: 'chargebee', allowed_plans: [sku] },
      },
    })
    const name = `Remote ${randomUUID()}`
    const res = await call(t, {
      method: 'POST',
      url: '/api/v1/companies',
      body: { name, country: 'IT', product_sku: product, subscription_plan: sku },
    })
    assert.deepEqual([res.statusCode, res.json().code], [502, 'provider_error'])
    assert.equal(
      (await t.app.database.db.selectFrom('companies').select('id').where('name', '=', name).execute()).length,
      0,
    )
  })

  it('publishes every route in the OpenAPI document with its schemas', async () => {
    const doc = await json(t, 200, { url: '/openapi.json', token: null })
    const ops = Object.values(doc.paths as Record<string, Record<string, { operationId?: string }>>).flatMap((p) =>
      Object.values(p).map((o) => o.operationId),
    )
    for (const id of [
      'cancelSubscription',
      'removeScheduledCancellation',
      'updateSubscription',
      'getSubscriptionDetails',
      'getSubscriptionStatus',
      'estimateSubscription',
      'setPaymentSource',
    ]) {
      assert.ok(ops.includes(id), id)
    }
  })
})
