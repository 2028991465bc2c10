import { it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { locationId } from './helpers/app.ts'
import { SUB, billedCompany, call, coupon, json, update, type BillingFixture } from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/** Coupons: a company redeems one once, however often it re-applies it; only the platform lists them. */
onEachEngine('coupon redemptions and listing', (t) => {
  const redemptionsOf = async (code: string) =>
    (await json<any[]>(t, 200, { url: `${SUB}/coupons` })).find((c) => c.code === code).redemptions as number
  const apply = (c: BillingFixture, code: string | null) =>
    update(t, c.id, c.subscriptionId, { coupon_code: code }, c.token)

  it('re-applying a coupon does not count a new redemption, so one company cannot use it up', async () => {
    const code = await coupon(t, { max_redemptions: 2 })
    const a = await billedCompany(t)
    for (let i = 0; i < 3; i++) {
      assert.equal((await apply(a, code)).statusCode, 200)
      assert.equal((await apply(a, null)).statusCode, 200)
    }
    assert.equal((await apply(a, code)).statusCode, 200)
    assert.equal(await redemptionsOf(code), 1)
    // The second redemption is another company's, and the last.
    const b = await billedCompany(t)
    assert.equal((await apply(b, code)).statusCode, 200)
    assert.equal(await redemptionsOf(code), 2)
    const c = await billedCompany(t)
    const refused = await apply(c, code)
    assert.equal(refused.statusCode, 400)
    assert.match(refused.json().errors, /body\/coupon_code .* max_redemptions/)
    // A company that redeemed it may still re-apply it once it is used up; the estimate agrees.
    assert.equal((await apply(b, null)).statusCode, 200)
    const estimate = await call(t, {
      url: `${SUB}/${b.subscriptionId}/estimate`,
      token: b.token,
      query: {
        company_id: b.id,
        product_sku: b.productSku,
        subscription_plan: b.planSku,
        plan_quantity: '1',
        coupon_code: code,
      },
    })
    assert.equal(estimate.statusCode, 200, estimate.body)
    assert.equal(estimate.json().estimate.invoice_estimate.discounts.length, 1)
    assert.equal((await apply(b, code)).statusCode, 200)
    assert.equal(await redemptionsOf(code), 2)
  })

  it('of two companies applying the last redemption at the same time, exactly one gets it', async () => {
    for (let round = 0; round < 3; round++) {
      const code = await coupon(t, { max_redemptions: 1 })
      const [a, b] = [await billedCompany(t), await billedCompany(t)]
      const answers = await Promise.all([apply(a, code), apply(b, code)])
      assert.deepEqual(answers.map((r) => r.statusCode).sort(), [200, 400], answers.map((r) => r.body).join('\n'))
      assert.equal(await redemptionsOf(code), 1)
      const holders = await Promise.all(
        [a, b].map(
          async (c) => (await json(t, 200, { url: `${SUB}/${c.id}/details`, token: c.token })).subscription.coupon_code,
        ),
      )
      assert.deepEqual(holders.filter((h) => h === code).length, 1)
    }
  })

  it('one company applying a coupon twice at the same time redeems it once', async () => {
    const code = await coupon(t, { max_redemptions: 5 })
    const a = await billedCompany(t)
    const answers = await Promise.all([apply(a, code), apply(a, code)])
    assert.deepEqual(
      answers.map((r) => r.statusCode),
      [200, 200],
    )
    assert.equal(await redemptionsOf(code), 1)
  })

  it("the coupon list is the platform's: 401 without a token, 403 for a company token", async () => {
    const code = await coupon(t)
    const a = await billedCompany(t)
    const listed = await json<any[]>(t, 200, { url: `${SUB}/coupons` })
    assert.ok(listed.some((c) => c.code === code))
    const anonymous = await call(t, { url: `${SUB}/coupons`, token: null })
    assert.equal(anonymous.statusCode, 401)
    const company = await call(t, { url: `${SUB}/coupons`, token: a.token })
    assert.deepEqual([company.statusCode, company.json().code], [403, 'forbidden'])
    assert.doesNotMatch(company.body, new RegExp(code))
    // A coupon's code still works for whoever was given it.
    assert.equal((await apply(a, code)).statusCode, 200)
  })

  it('an unknown coupon id is 404 for the platform', async () => {
    const res = await call(t, {
      method: 'POST',
      url: `${SUB}/coupons`,
      body: { code: `K${randomUUID().slice(0, 8)}`, name: 'K', discount_type: 'fixed_amount', discount_value: 1 },
    })
    assert.equal((await call(t, { url: `${SUB}/coupons/${locationId(res)}` })).statusCode, 200)
    assert.equal((await call(t, { url: `${SUB}/coupons/${randomUUID()}` })).statusCode, 404)
  })
})
