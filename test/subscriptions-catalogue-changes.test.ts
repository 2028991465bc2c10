import { it } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { uniq } from './helpers/app.ts'
import { ALLOWED, BACK } from './hosted-helpers.ts'
import { SUB, billedCompany, call, json, type BillingFixture } from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Catalogue changes never break the subscriptions that use the catalogue: a subscription
 * follows its product and plan when their skus are renamed, and every subscription route
 * keeps answering (no 5xx) whatever change the catalogue routes allow.
 */
onEachEngine('catalogue changes and subscriptions', { REDIRECT_ALLOWED_HOSTS: ALLOWED }, (t) => {
  const productOf = async (sku: string) =>
    (await json<any[]>(t, 200, { url: `${SUB}/products`, token: null })).find((p) => p.product.sku === sku).product
  const replaceProduct = (id: string, fields: Record<string, unknown>) =>
    call(t, { method: 'PUT', url: `${SUB}/products/${id}`, body: { product: fields } })

  /** The product's fields as read, with `changes` applied through 15. */
  async function changeProduct(c: BillingFixture, changes: Record<string, unknown>) {
    const { id, ...product } = await productOf(c.productSku)
    const res = await replaceProduct(id, { ...product, ...changes })
    assert.equal(res.statusCode, 202, res.body)
    return id as string
  }

  /** Every route that reads or changes the company's subscription, and the pages they lead to. */
  async function routesOf(c: BillingFixture, productSku: string, planSku: string) {
    const estimateQuery = { company_id: c.id, product_sku: productSku, subscription_plan: planSku, plan_quantity: '2' }
    const requests = [
      { name: 'details (8)', url: `${SUB}/${c.id}/details` },
      { name: 'status (14)', url: `${SUB}/${c.id}/status` },
      { name: 'company (34)', url: `/api/v1/companies/${c.id}` },
      { name: 'scopes (25)', url: `/api/v1/companies/${c.id}/authorized/scopes` },
      { name: 'estimate (9), own token', url: `${SUB}/${c.subscriptionId}/estimate`, query: estimateQuery },
      {
        name: 'estimate (9), anonymous',
        url: `${SUB}/${c.subscriptionId}/estimate`,
        query: estimateQuery,
        token: null,
      },
      {
        name: 'update (6), quantity',
        method: 'PUT' as const,
        url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
        body: { plan_quantity: 3 },
      },
      {
        name: 'update (6), plan named',
        method: 'PUT' as const,
        url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
        body: { subscription_plan: planSku, plan_quantity: 4 },
      },
      { name: 'manager page (1)', url: `${SUB}/${c.id}/manager_page/`, query: { redirect_url: BACK } },
      { name: 'portal (10)', url: `${SUB}/${c.id}/portal/`, query: { redirect_url: BACK } },
      { name: 'payment page (11)', url: `${SUB}/${c.id}/payment_page/`, query: { redirect_url: BACK } },
      { name: 'cancel (2)', method: 'PUT' as const, url: `${SUB}/${c.id}/cancel` },
      {
        name: 'undo cancel (3)',
        method: 'PUT' as const,
        url: `${SUB}/${c.id}/remove_scheduled_cancellation/${c.subscriptionId}`,
      },
    ]
    const answers: Record<string, { status: number; body: string }> = {}
    for (const { name, token, ...request } of requests) {
      const res = await call(t, { ...request, token: token === null ? null : c.token })
      answers[name] = { status: res.statusCode, body: res.body }
      // The pages the hosted links lead to.
      if (res.statusCode === 200 && /\((1|10|11)\)$/.test(name)) {
        const body = res.json()
        const page = await t.app.inject({ method: 'GET', url: new URL(body.url ?? body.access_url).pathname })
        answers[`${name} page`] = { status: page.statusCode, body: page.body.slice(0, 300) }
      }
    }
    return answers
  }

  it("renaming the product's sku is carried over: every route answers 2xx and shows the new sku", async () => {
    const c = await billedCompany(t)
    const renamed = uniq('renamed-product')
    await changeProduct(c, { sku: renamed })
    const answers = await routesOf(c, renamed, c.planSku)
    for (const [name, answer] of Object.entries(answers))
      assert.ok(answer.status >= 200 && answer.status < 300, `${name}: ${answer.status} ${answer.body}`)
    const details = await json(t, 200, { url: `${SUB}/${c.id}/details`, token: c.token })
    assert.deepEqual(
      [details.subscription.product_sku, details.product.sku, details.subscription.plan_id],
      [renamed, renamed, c.planSku],
    )
    // The old sku names nothing any more.
    const old = await call(t, {
      url: `${SUB}/${c.subscriptionId}/estimate`,
      query: { company_id: c.id, product_sku: c.productSku, subscription_plan: c.planSku, plan_quantity: '1' },
      token: c.token,
    })
    assert.equal(old.statusCode, 400)
    assert.match(old.json().errors, /querystring\/product_sku/)
  })

  it('a new product with the old sku does not capture the subscriptions of the renamed one', async () => {
    const c = await billedCompany(t)
    const renamed = uniq('renamed-product')
    await changeProduct(c, { sku: renamed })
    const squatter = await call(t, {
      method: 'POST',
      url: `${SUB}/products`,
      body: { product: { sku: c.productSku, name: 'Squatter', allowed_plans: [c.planSku] } },
    })
    assert.equal(squatter.statusCode, 202, squatter.body)
    const details = await json(t, 200, { url: `${SUB}/${c.id}/details`, token: c.token })
    assert.deepEqual([details.product.sku, details.product.name], [renamed, 'Workforce'])
  })

  it('a plan the product no longer allows keeps applying to the subscription that holds it', async () => {
    const c = await billedCompany(t, { plans: { basic: { price: 29.9 }, pro: { price: 49.9 } } })
    await changeProduct(c, { allowed_plans: [c.plans.pro] })
    const updated = await json(t, 200, {
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
      body: { plan_quantity: 7 },
    })
    assert.deepEqual([updated.subscription.plan_id, updated.subscription.plan_quantity], [c.plans.basic, 7])
    // Choosing it again after leaving it is refused, as for any plan the product does not allow.
    await json(t, 200, {
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
      body: { subscription_plan: c.plans.pro },
    })
    const back = await call(t, {
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
      body: { subscription_plan: c.plans.basic },
    })
    assert.equal(back.statusCode, 400)
    assert.match(back.json().errors, /body\/subscription_plan .* is not among the allowed_plans/)
  })

  it('a subscription left pointing at a sku renamed before the foreign keys existed answers 409, never 500', async () => {
    const c = await billedCompany(t)
    const gone = uniq('gone')
    // What the defect left behind: rows written before migration 0012, which it does not check.
    await t.app.database.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL session_replication_role = replica`.execute(trx)
      await sql`UPDATE subscriptions SET product_sku = ${gone} WHERE company_id = ${c.id}`.execute(trx)
    })
    const answers = await routesOf(c, gone, c.planSku)
    for (const name of ['details (8)', 'estimate (9), own token', 'update (6), quantity']) {
      assert.equal(answers[name]!.status, 409, `${name}: ${answers[name]!.body}`)
      assert.match(
        JSON.parse(answers[name]!.body).errors,
        new RegExp(`refers to product ${gone}, which is no longer in the catalogue`),
      )
    }
    for (const [name, answer] of Object.entries(answers))
      assert.ok(answer.status < 500, `${name}: ${answer.status} ${answer.body}`)
  })

  /** Each change the catalogue routes allow, applied to a fresh company's product. */
  const changes: Array<{
    name: string
    apply: (c: BillingFixture) => Promise<{ productSku: string; planSku: string }>
  }> = [
    {
      name: 'product sku renamed',
      apply: async (c) => {
        const sku = uniq('p')
        await changeProduct(c, { sku })
        return { productSku: sku, planSku: c.planSku }
      },
    },
    {
      name: 'product sku renamed twice',
      apply: async (c) => {
        await changeProduct(c, { sku: uniq('p') })
        const sku = uniq('p')
        const { id, ...p } = await productOf(
          (await json(t, 200, { url: `${SUB}/${c.id}/details`, token: c.token })).product.sku,
        )
        assert.equal((await replaceProduct(id, { ...p, sku })).statusCode, 202)
        return { productSku: sku, planSku: c.planSku }
      },
    },
    {
      name: 'current plan removed from allowed_plans',
      apply: async (c) => {
        await changeProduct(c, { allowed_plans: [c.plans.pro] })
        return { productSku: c.productSku, planSku: c.planSku }
      },
    },
    {
      name: 'allowed_plans emptied',
      apply: async (c) => {
        await changeProduct(c, { allowed_plans: [] })
        return { productSku: c.productSku, planSku: c.planSku }
      },
    },
    {
      name: 'product hidden',
      apply: async (c) => {
        await changeProduct(c, { visible: false })
        return { productSku: c.productSku, planSku: c.planSku }
      },
    },
    {
      name: 'product moved to another billing provider',
      apply: async (c) => {
        await changeProduct(c, { subscription_manager: 'chargebee' })
        return { productSku: c.productSku, planSku: c.planSku }
      },
    },
    {
      name: 'product renamed to a taken sku (409, nothing changes)',
      apply: async (c) => {
        const other = await billedCompany(t)
        const { id, ...p } = await productOf(c.productSku)
        assert.equal((await replaceProduct(id, { ...p, sku: other.productSku })).statusCode, 409)
        return { productSku: c.productSku, planSku: c.planSku }
      },
    },
    {
      name: 'product renamed with other fields left out',
      apply: async (c) => {
        const { id } = await productOf(c.productSku)
        const sku = uniq('p')
        assert.equal((await replaceProduct(id, { sku, name: 'Bare' })).statusCode, 202)
        return { productSku: sku, planSku: c.planSku }
      },
    },
    {
      name: 'plan with the same sku created again (409)',
      apply: async (c) => {
        const res = await call(t, {
          method: 'POST',
          url: `${SUB}/plans`,
          body: {
            plan: { sku: c.planSku, name: 'Again', price: 1, plan_family: 'core', period_unit: 'year', features: [] },
          },
        })
        assert.equal(res.statusCode, 409)
        return { productSku: c.productSku, planSku: c.planSku }
      },
    },
  ]

  for (const change of changes) {
    it(`after "${change.name}" no subscription route answers 5xx`, async () => {
      const c = await billedCompany(t, { plans: { basic: { price: 29.9 }, pro: { price: 49.9 } } })
      const skus = await change.apply(c)
      const answers = await routesOf(c, skus.productSku, skus.planSku)
      assert.equal(Object.keys(answers).length, 16)
      for (const [name, answer] of Object.entries(answers))
        assert.ok(answer.status < 500, `${change.name}, ${name}: ${answer.status} ${answer.body}`)
    })
  }
})
