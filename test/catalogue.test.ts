import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { locationId, uniq } from './helpers/app.ts'
import { company, plan, product, type CompanyFixture } from './helpers/factories.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const BASE = '/api/v1/subscription'

onEachEngine('catalogue', (t) => {
  let c: CompanyFixture
  before(async () => {
    c = await company(t)
  })

  async function expect400(method: 'POST' | 'PUT', url: string, body: unknown, names: string) {
    const res = await t.call({ method, url, body })
    assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`)
    assert.equal(res.json().code, 'validation_failed')
    assert.ok(res.json().errors.includes(names), `"${res.json().errors}" names ${names}`)
  }

  describe('plans', () => {
    it('creates a plan (4) and reads it by id (7), by sku (17) and in the list (5)', async () => {
      const sku = uniq('gold')
      const body = {
        plan: {
          id: 'ignored',
          sku,
          name: 'Gold',
          price: 49.9,
          plan_family: 'core',
          period_unit: 'year',
          features: ['stamping', 'expense', 'stamping'],
        },
      }
      const res = await t.call({ method: 'POST', url: `${BASE}/plans`, body })
      assert.equal(res.statusCode, 202, res.body)
      assert.equal(res.body, '')
      const id = locationId(res)
      assert.equal(res.headers.location, `${BASE}/plans/${id}`)
      assert.notEqual(id, 'ignored')
      const expected = {
        plan: {
          id,
          sku,
          name: 'Gold',
          price: 49.9,
          currency_code: 'EUR',
          plan_family: 'core',
          period_unit: 'year',
          features: ['stamping', 'expense'],
          pricing_model: 'per_unit',
          tiers: null,
          tiers_text: null,
        },
      }
      assert.deepEqual(await t.json(200, { url: `${BASE}/plans/${id}`, token: null }), expected)
      assert.deepEqual(await t.json(200, { url: `${BASE}/plans/by_sku/${sku}`, token: null }), expected)
      const list = await t.json(200, { url: `${BASE}/plans`, token: null })
      assert.ok(list.some((p: typeof expected) => p.plan.id === id))
    })

    it('filters the list by exact name', async () => {
      const name = uniq('Name')
      const one = await plan(t, { name })
      await plan(t, { name: `${name} 2` })
      const list = await t.json(200, { url: `${BASE}/plans`, query: { name }, token: null })
      assert.deepEqual(
        list.map((p: { plan: { id: string } }) => p.plan.id),
        [one.id],
      )
      assert.deepEqual(
        await t.json(200, { url: `${BASE}/plans`, query: { name: 'nobody has this name' }, token: null }),
        [],
      )
    })

    it('answers 404 for an unknown plan and 400 for an id that is no UUID', async () => {
      const res = await t.call({ url: `${BASE}/plans/${randomUUID()}`, token: null })
      assert.equal(res.statusCode, 404)
      assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'errors'])
      assert.equal(res.json().code, 'not_found')
      assert.equal((await t.call({ url: `${BASE}/plans/by_sku/no-such-sku`, token: null })).statusCode, 404)
      assert.equal((await t.call({ url: `${BASE}/plans/42`, token: null })).statusCode, 400)
    })

    it('refuses a duplicate sku with 409', async () => {
      const existing = await plan(t)
      const res = await t.call({
        method: 'POST',
        url: `${BASE}/plans`,
        body: {
          plan: { sku: existing.sku, name: 'Copy', price: 1, plan_family: 'core', period_unit: 'month', features: [] },
        },
      })
      assert.equal(res.statusCode, 409)
      assert.equal(res.json().code, 'conflict')
    })

    it('refuses bad prices, unknown features, unknown fields and wrong types with 400 naming the field', async () => {
      const good = () => ({
        sku: uniq('p'),
        name: 'P',
        price: 10,
        plan_family: 'core',
        period_unit: 'month',
        features: [] as unknown,
      })
      const url = `${BASE}/plans`
      await expect400('POST', url, { plan: { ...good(), price: 10.999 } }, 'body/plan/price')
      await expect400('POST', url, { plan: { ...good(), price: -1 } }, 'body/plan/price')
      // Close enough to 30.00 for a loose float comparison, yet not 2 decimals: refused, not rounded.
      await expect400('POST', url, { plan: { ...good(), price: 29.999999999 } }, 'body/plan/price')
      await expect400('POST', url, { plan: { ...good(), price: 1e-9 } }, 'body/plan/price')
      await expect400('POST', url, { plan: { ...good(), price: '10' } }, 'body/plan/price')
      await expect400('POST', url, { plan: { ...good(), features: ['teleportation'] } }, 'teleportation')
      await expect400('POST', url, { plan: { ...good(), features: 'stamping' } }, 'body/plan/features')
      await expect400('POST', url, { plan: { ...good(), color: 'red' } }, 'body/plan/color')
      await expect400('POST', url, { plan: good(), extra: 1 }, 'body/extra')
      await expect400('POST', url, { plan: { ...good(), period_unit: 'week' } }, 'body/plan/period_unit')
      await expect400('POST', url, { plan: { ...good(), name: 123 } }, 'body/plan/name')
      await expect400('POST', url, { plan: { ...good(), sku: undefined } }, 'body/plan/sku')
      await expect400('POST', url, { plan: { ...good(), sku: 'has space' } }, 'body/plan/sku')
      await expect400('POST', url, {}, 'body/plan')
      // Two decimals that binary floating point cannot hold exactly are fine.
      const res = await t.call({ method: 'POST', url, body: { plan: { ...good(), price: 0.29 } } })
      assert.equal(res.statusCode, 202)
      assert.equal((await t.json(200, { url: String(res.headers.location), token: null })).plan.price, 0.29)
    })
  })

  describe('products', () => {
    it('creates (12), reads (16) and lists (13) products with their filters', async () => {
      const p = await plan(t)
      const brand = uniq('brand')
      const res = await t.call({
        method: 'POST',
        url: `${BASE}/products`,
        body: { product: { sku: uniq('prod'), name: 'Workforce', allowed_plans: [p.sku], category: 'hr', brand } },
      })
      assert.equal(res.statusCode, 202, res.body)
      const id = locationId(res)
      assert.equal(res.headers.location, `${BASE}/products/${id}`)
      const got = await t.json(200, { url: `${BASE}/products/${id}`, token: null })
      assert.deepEqual(got, {
        product: {
          id,
          sku: got.product.sku,
          name: 'Workforce',
          visible: true,
          subscription_manager: 'local',
          allowed_plans: [p.sku],
          category: 'hr',
          brand,
        },
      })

      const hidden = await product(t, [], { brand, category: 'payroll', visible: false })
      const ids = async (query: Record<string, string>) =>
        (await t.json(200, { url: `${BASE}/products`, query, token: null }))
          .map((x: { product: { id: string } }) => x.product.id)
          .sort()
      assert.deepEqual(await ids({ brand }), [id, hidden.id].sort())
      assert.deepEqual(await ids({ brand, visible: 'false' }), [hidden.id])
      assert.deepEqual(await ids({ brand, visible: 'true' }), [id])
      assert.deepEqual(await ids({ brand, category: 'payroll' }), [hidden.id])
      assert.deepEqual(await ids({ brand: uniq('none') }), [])
      assert.equal((await t.call({ url: `${BASE}/products`, query: { visible: 'yes' }, token: null })).statusCode, 400)
    })

    it('answers 404 for an unknown product, 409 for a duplicate sku and 400 for unknown allowed plans', async () => {
      assert.equal((await t.call({ url: `${BASE}/products/${randomUUID()}`, token: null })).statusCode, 404)
      const existing = await product(t, [])
      const dup = await t.call({
        method: 'POST',
        url: `${BASE}/products`,
        body: { product: { sku: existing.sku, name: 'X' } },
      })
      assert.equal(dup.statusCode, 409)
      await expect400(
        'POST',
        `${BASE}/products`,
        { product: { sku: uniq('x'), name: 'X', allowed_plans: ['no-such-plan'] } },
        'no-such-plan',
      )
      await expect400(
        'POST',
        `${BASE}/products`,
        { product: { sku: uniq('x'), name: 'X', subscription_manager: 'stripe' } },
        'body/product/subscription_manager',
      )
      await expect400(
        'POST',
        `${BASE}/products`,
        { product: { sku: uniq('x'), name: 'X', visible: 'true' } },
        'body/product/visible',
      )
      await expect400(
        'POST',
        `${BASE}/products`,
        { product: { sku: uniq('x'), name: 'X', price: 3 } },
        'body/product/price',
      )
    })

    it('replaces a product (15), with 404, 409 and 400 where they apply', async () => {
      const p1 = await plan(t)
      const p2 = await plan(t)
      const pr = await product(t, [p1.sku])
      const other = await product(t, [])
      const url = `${BASE}/products/${pr.id}`
      const body = {
        product: {
          id: randomUUID(),
          sku: pr.sku,
          name: 'Renamed',
          visible: false,
          subscription_manager: 'chargebee',
          allowed_plans: [p1.sku, p2.sku],
          category: 'c',
          brand: 'b',
        },
      }
      const res = await t.call({ method: 'PUT', url, body })
      assert.equal(res.statusCode, 202, res.body)
      assert.equal(res.body, '')
      assert.deepEqual(await t.json(200, { url, token: null }), { product: { ...body.product, id: pr.id } })

      assert.equal(
        (
          await t.call({
            method: 'PUT',
            url: `${BASE}/products/${randomUUID()}`,
            body: { product: { sku: uniq('x'), name: 'X' } },
          })
        ).statusCode,
        404,
      )
      const conflict = await t.call({ method: 'PUT', url, body: { product: { ...body.product, sku: other.sku } } })
      assert.equal(conflict.statusCode, 409)
      await expect400('PUT', url, { product: { ...body.product, allowed_plans: ['missing-plan'] } }, 'missing-plan')
      await expect400('PUT', url, { product: { ...body.product, owner: 'x' } }, 'body/product/owner')
      // Nothing of the refused changes was stored.
      assert.equal((await t.json(200, { url, token: null })).product.name, 'Renamed')
    })
  })

  describe('addons and coupons', () => {
    it('creates, lists and reads addons', async () => {
      const res = await t.call({
        method: 'POST',
        url: `${BASE}/addons`,
        body: { name: 'Extra storage', price: 4.5, period_unit: 'month' },
      })
      assert.equal(res.statusCode, 202, res.body)
      const id = locationId(res)
      assert.equal(res.headers.location, `${BASE}/addons/${id}`)
      assert.deepEqual(await t.json(200, { url: `${BASE}/addons/${id}`, token: null }), {
        id,
        name: 'Extra storage',
        price: 4.5,
        currency_code: 'EUR',
        period_unit: 'month',
        pricing_model: 'per_unit',
        tiers: null,
        tiers_text: null,
      })
      assert.ok((await t.json(200, { url: `${BASE}/addons`, token: null })).some((x: { id: string }) => x.id === id))
      assert.equal((await t.call({ url: `${BASE}/addons/${randomUUID()}`, token: null })).statusCode, 404)
      await expect400('POST', `${BASE}/addons`, { name: 'X', price: 1.001, period_unit: 'month' }, 'body/price')
      await expect400('POST', `${BASE}/addons`, { name: 'X', price: 1, period_unit: 'day' }, 'body/period_unit')
      await expect400('POST', `${BASE}/addons`, { name: 'X', price: 1, period_unit: 'month', sku: 'y' }, 'body/sku')
    })

    it('creates, lists and reads coupons; code unique; percentage at most 100; real days only', async () => {
      const code = uniq('WELCOME')
      const body = {
        code,
        name: 'Welcome',
        discount_type: 'percentage',
        discount_value: 12.5,
        valid_till: '2030-12-31',
        max_redemptions: 100,
        redemptions: 99,
      }
      const res = await t.call({ method: 'POST', url: `${BASE}/coupons`, body })
      assert.equal(res.statusCode, 202, res.body)
      const id = locationId(res)
      assert.equal(res.headers.location, `${BASE}/coupons/${id}`)
      assert.deepEqual(await t.json(200, { url: `${BASE}/coupons/${id}` }), {
        ...body,
        id,
        currency_code: null,
        redemptions: 0,
        duration_type: 'forever',
        duration_month: null,
        apply_on: 'invoice_amount',
        plan_ids: [],
        addon_ids: [],
      })
      assert.ok((await t.json(200, { url: `${BASE}/coupons` })).some((x: { id: string }) => x.id === id))
      assert.equal((await t.call({ url: `${BASE}/coupons/${randomUUID()}` })).statusCode, 404)

      const fixed = await t.call({
        method: 'POST',
        url: `${BASE}/coupons`,
        body: { code: uniq('FIX'), name: 'Fixed', discount_type: 'fixed_amount', discount_value: 150 },
      })
      assert.equal(fixed.statusCode, 202)
      const got = await t.json(200, { url: String(fixed.headers.location) })
      assert.equal(got.valid_till, null)
      assert.equal(got.max_redemptions, null)

      const dup = await t.call({ method: 'POST', url: `${BASE}/coupons`, body: { ...body, redemptions: undefined } })
      assert.equal(dup.statusCode, 409)
      const fresh = () => ({ ...body, code: uniq('C'), redemptions: undefined })
      await expect400('POST', `${BASE}/coupons`, { ...fresh(), discount_value: 101 }, 'body/discount_value')
      await expect400('POST', `${BASE}/coupons`, { ...fresh(), discount_value: 0 }, 'body/discount_value')
      await expect400('POST', `${BASE}/coupons`, { ...fresh(), discount_value: 1.005 }, 'body/discount_value')
      await expect400('POST', `${BASE}/coupons`, { ...fresh(), valid_till: '2030-02-30' }, 'body/valid_till')
      await expect400('POST', `${BASE}/coupons`, { ...fresh(), valid_till: '31/12/2030' }, 'body/valid_till')
      await expect400('POST', `${BASE}/coupons`, { ...fresh(), discount_type: 'free' }, 'body/discount_type')
      await expect400('POST', `${BASE}/coupons`, { ...fresh(), code: 'has space' }, 'body/code')
      await expect400('POST', `${BASE}/coupons`, { ...fresh(), max_redemptions: 0 }, 'body/max_redemptions')
    })
  })

  describe('round trips', () => {
    it('accepts back what it answered (server-owned fields are ignored), as a new resource', async () => {
      const p = await plan(t)
      const readPlan = await t.json(200, { url: `${BASE}/plans/${p.id}`, token: null })
      const planCopy = await t.call({
        method: 'POST',
        url: `${BASE}/plans`,
        body: { plan: { ...readPlan.plan, sku: uniq('copy') } },
      })
      assert.equal(planCopy.statusCode, 202, planCopy.body)
      assert.notEqual(locationId(planCopy), p.id)

      const pr = await product(t, [p.sku])
      const readProduct = await t.json(200, { url: `${BASE}/products/${pr.id}`, token: null })
      assert.equal(
        (await t.call({ method: 'PUT', url: `${BASE}/products/${pr.id}`, body: readProduct })).statusCode,
        202,
      )
      assert.deepEqual(await t.json(200, { url: `${BASE}/products/${pr.id}`, token: null }), readProduct)

      const addon = await t.call({
        method: 'POST',
        url: `${BASE}/addons`,
        body: { name: 'A', price: 2, period_unit: 'year' },
      })
      const readAddon = await t.json(200, { url: String(addon.headers.location), token: null })
      const addonAgain = await t.call({ method: 'POST', url: `${BASE}/addons`, body: readAddon })
      assert.equal(addonAgain.statusCode, 202)
      assert.notEqual(addonAgain.headers.location, addon.headers.location, 'a new addon, not the one read')

      const coupon = await t.call({
        method: 'POST',
        url: `${BASE}/coupons`,
        body: { code: uniq('RT'), name: 'R', discount_type: 'fixed_amount', discount_value: 5 },
      })
      const readCoupon = await t.json(200, { url: String(coupon.headers.location) })
      const couponAgain = await t.call({
        method: 'POST',
        url: `${BASE}/coupons`,
        body: { ...readCoupon, code: uniq('RT') },
      })
      assert.equal(couponAgain.statusCode, 202)
      assert.notEqual(couponAgain.headers.location, coupon.headers.location, 'a new coupon, not the one read')
    })
  })

  describe('who may write', () => {
    it('refuses catalogue writes to a company token (403) and to no token (401); anyone reads all but coupons, which only the platform reads', async () => {
      const p = await plan(t)
      const pr = await product(t, [p.sku])
      const writes: Array<[string, string, unknown]> = [
        [
          'POST',
          `${BASE}/plans`,
          { plan: { sku: uniq('x'), name: 'X', price: 1, plan_family: 'f', period_unit: 'month', features: [] } },
        ],
        ['POST', `${BASE}/products`, { product: { sku: uniq('x'), name: 'X' } }],
        ['PUT', `${BASE}/products/${pr.id}`, { product: { sku: pr.sku, name: 'Hijacked' } }],
        ['POST', `${BASE}/addons`, { name: 'X', price: 1, period_unit: 'month' }],
        ['POST', `${BASE}/coupons`, { code: uniq('X'), name: 'X', discount_type: 'percentage', discount_value: 5 }],
      ]
      for (const [method, url, body] of writes) {
        const asCompany = await t.call({ method: method as 'POST', url, body, token: c.token })
        assert.equal(asCompany.statusCode, 403, `${method} ${url}`)
        assert.equal(asCompany.json().code, 'forbidden')
        const anonymous = await t.call({ method: method as 'POST', url, body, token: null })
        assert.equal(anonymous.statusCode, 401, `${method} ${url}`)
      }
      assert.equal((await t.json(200, { url: `${BASE}/products/${pr.id}`, token: null })).product.name, 'Workforce')
      for (const url of [
        `${BASE}/plans`,
        `${BASE}/plans/${p.id}`,
        `${BASE}/plans/by_sku/${p.sku}`,
        `${BASE}/products`,
        `${BASE}/products/${pr.id}`,
        `${BASE}/addons`,
      ]) {
        await t.json(200, { url, token: null })
        await t.json(200, { url, token: c.token })
      }
      // Coupons are the platform's, listed or one by one: a code is given to a customer, never shown to one.
      const code = await t.call({
        method: 'POST',
        url: `${BASE}/coupons`,
        body: { code: uniq('HIDDEN'), name: 'H', discount_type: 'percentage', discount_value: 5 },
      })
      for (const url of [`${BASE}/coupons`, String(code.headers.location), `${BASE}/coupons/${randomUUID()}`]) {
        const asCompany = await t.call({ url, token: c.token })
        assert.equal(asCompany.statusCode, 403, url)
        assert.equal(asCompany.json().code, 'forbidden')
        assert.doesNotMatch(asCompany.body, /HIDDEN/)
        const anonymous = await t.call({ url, token: null })
        assert.equal(anonymous.statusCode, 401, url)
        assert.equal(anonymous.json().code, 'unauthorized')
      }
      assert.equal((await t.call({ url: String(code.headers.location) })).statusCode, 200)
    })
  })
})
