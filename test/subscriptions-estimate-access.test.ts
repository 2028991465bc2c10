import { it } from 'node:test'
import assert from 'node:assert/strict'
import {
  DAY,
  SUB,
  addon,
  at,
  billedCompany,
  businessNow,
  call,
  coupon,
  setCard,
  unix,
  update,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const TRIAL_DAYS = 30

/**
 * The estimate (9) is public, but the stored subscription's status, trial, coupon, addons and
 * credits are shown only to the company's own token or a platform token. Anyone else (no
 * token, another company's token) gets the query's choice priced from the catalogue as a new
 * subscription: a trial ending TRIAL_DAYS from now, then the first full term.
 */
onEachEngine('estimate (9) access to the stored subscription', { TEST_CLOCK_ENABLED: true, TRIAL_DAYS }, (t) => {
  /** An active subscription, mid-term, holding a coupon and an addon: everything an estimate could leak. */
  async function activeWithState(start: string): Promise<{ a: BillingFixture; code: string; extra: string }> {
    const a = await billedCompany(t, { start, plans: { basic: { price: 30 }, pro: { price: 60 } } })
    const code = await coupon(t, { discount_value: 50 })
    const extra = await addon(t, { price: 5 })
    assert.equal(
      (await update(t, a.id, a.subscriptionId, { coupon_code: code, addons: [extra] }, a.token)).statusCode,
      200,
    )
    await setCard(t, a.id)
    await at(t, new Date(Date.parse(start) + (TRIAL_DAYS + 10) * DAY * 1000).toISOString())
    return { a, code, extra }
  }

  const query = (a: BillingFixture, fields: Record<string, string | string[]> = {}) => ({
    company_id: a.id,
    product_sku: a.productSku,
    subscription_plan: a.plans.pro!,
    plan_quantity: '1',
    ...fields,
  })

  it("anonymous and another company's token get a catalogue-only estimate; the own and the platform token the stored state", async () => {
    const { a, extra } = await activeWithState('2040-01-01T00:00:00.000Z')
    const b = await billedCompany(t)
    const now = unix((await businessNow(t)).toISOString())

    const own = (await call(t, { url: `${SUB}/${a.subscriptionId}/estimate`, query: query(a), token: a.token })).json()
      .estimate
    assert.equal(own.subscription_estimate.status, 'active')
    assert.ok(own.invoice_estimate.credits_applied > 0, 'the own token sees the credit of the current term')
    assert.equal(own.invoice_estimate.discounts.length, 1)
    assert.ok(own.invoice_estimate.line_items.some((l: any) => l.entity_id === extra))
    const platform = (await call(t, { url: `${SUB}/${a.subscriptionId}/estimate`, query: query(a) })).json().estimate
    assert.deepEqual(platform, own)

    const catalogueOnly = {
      subscription_estimate: { status: 'in_trial', next_billing_at: now + TRIAL_DAYS * DAY },
      invoice_estimate: {
        line_items: [
          {
            entity_type: 'plan',
            entity_id: a.plans.pro,
            description: 'Plan pro',
            pricing_model: 'per_unit',
            unit_amount: 6000,
            quantity: 1,
            amount: 6000,
          },
        ],
        discounts: [],
        sub_total: 6000,
        taxes: [{ name: 'IT VAT', rate: 22, amount: 1320 }],
        total: 7320,
        credits_applied: 0,
        amount_due: 7320,
        currency_code: 'EUR',
      },
    }
    for (const token of [null, b.token]) {
      const res = await call(t, { url: `${SUB}/${a.subscriptionId}/estimate`, query: query(a), token })
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(res.json().estimate, catalogueOnly, `token ${token === null ? 'none' : 'of another company'}`)
    }
  })

  it('a catalogue-only estimate prices the addons and coupon the query names, and no other', async () => {
    const { a, code, extra } = await activeWithState('2041-01-01T00:00:00.000Z')
    const stranger = await billedCompany(t)
    const named = (
      await call(t, {
        url: `${SUB}/${a.id}/estimate`,
        query: query(a, { addons: [extra], coupon_code: code }),
        token: stranger.token,
      })
    ).json().estimate.invoice_estimate
    assert.deepEqual(
      named.line_items.map((l: any) => l.entity_type),
      ['plan', 'addon'],
    )
    assert.deepEqual([named.sub_total, named.discounts[0].amount, named.credits_applied], [6500, 3250, 0])
    const addonsOnly = (
      await call(t, { url: `${SUB}/${a.id}/estimate`, query: query(a, { addons: [extra] }), token: null })
    ).json().estimate.invoice_estimate
    assert.deepEqual([addonsOnly.sub_total, addonsOnly.discounts, addonsOnly.credits_applied], [6500, [], 0])
    // Any product of the catalogue may be priced: which product the company holds is not shown.
    const other = await billedCompany(t)
    const res = await call(t, {
      url: `${SUB}/${a.id}/estimate`,
      query: query(a, { product_sku: other.productSku, subscription_plan: other.planSku }),
      token: null,
    })
    assert.equal(res.statusCode, 200, res.body)
    const refused = await call(t, {
      url: `${SUB}/${a.id}/estimate`,
      query: query(a, { product_sku: other.productSku }),
      token: null,
    })
    assert.equal(refused.statusCode, 400)
    assert.match(refused.json().errors, /querystring\/subscription_plan .* not among the allowed_plans/)
  })

  it('without a token, coupon_code is refused with 401 whether or not the code exists: no one can try codes anonymously', async () => {
    const { a, code } = await activeWithState('2043-01-01T00:00:00.000Z')
    const answers = []
    for (const coupon_code of [code, 'NO-SUCH-CODE', '']) {
      const res = await call(t, {
        url: `${SUB}/${a.subscriptionId}/estimate`,
        query: query(a, { coupon_code }),
        token: null,
      })
      assert.equal(res.statusCode, 401, `${coupon_code}: ${res.body}`)
      assert.equal(res.json().code, 'unauthorized')
      assert.match(res.json().errors, /coupon_code/)
      answers.push([res.body, res.headers['www-authenticate']])
    }
    assert.deepEqual(answers[1], answers[0], 'an existing and an unknown code answer alike')
    assert.deepEqual(answers[2], answers[0])
    // Checked before anything else: an unknown product does not tell a code apart either.
    const unknownProduct = await call(t, {
      url: `${SUB}/${a.subscriptionId}/estimate`,
      query: query(a, { coupon_code: code, product_sku: 'no-such-product' }),
      token: null,
    })
    assert.equal(unknownProduct.statusCode, 401)
    // A token (any company's, or the platform's) may name a code.
    const stranger = await billedCompany(t)
    assert.equal(
      (
        await call(t, {
          url: `${SUB}/${a.subscriptionId}/estimate`,
          query: query(a, { coupon_code: code }),
          token: stranger.token,
        })
      ).statusCode,
      200,
    )
    assert.equal(
      (
        await call(t, {
          url: `${SUB}/${a.subscriptionId}/estimate`,
          query: query(a, { coupon_code: 'NO-SUCH-CODE' }),
          token: stranger.token,
        })
      ).statusCode,
      400,
    )
    assert.equal(
      (await call(t, { url: `${SUB}/${a.subscriptionId}/estimate`, query: query(a, { coupon_code: code }) }))
        .statusCode,
      200,
    )
  })

  it("a cancelled subscription is 409 to its own token, a new subscription's price to anyone else", async () => {
    const a = await billedCompany(t, { start: '2042-01-01T00:00:00.000Z' })
    assert.equal(
      (await call(t, { method: 'PUT', url: `${SUB}/${a.id}/cancel`, query: { end_of_term: 'false' }, token: a.token }))
        .statusCode,
      200,
    )
    const q = { company_id: a.id, product_sku: a.productSku, subscription_plan: a.planSku, plan_quantity: '1' }
    assert.equal(
      (await call(t, { url: `${SUB}/${a.subscriptionId}/estimate`, query: q, token: a.token })).statusCode,
      409,
    )
    const anonymous = await call(t, { url: `${SUB}/${a.subscriptionId}/estimate`, query: q, token: null })
    assert.equal(anonymous.statusCode, 200, anonymous.body)
    assert.equal(anonymous.json().estimate.subscription_estimate.status, 'in_trial')
    assert.doesNotMatch(anonymous.body, /cancelled/)
  })
})
