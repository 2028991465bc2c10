import { it } from 'node:test'
import assert from 'node:assert/strict'
import {
  SUB,
  addon,
  at,
  billedCompany,
  call,
  coupon,
  detailsOf,
  estimate,
  eventsOf,
  json,
  mirrorOf,
  moveTo,
  setCard,
  statusOf,
  unix,
  update,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Estimate (9) and update (6), checked against amounts computed by hand. Rule: each line is
 * rounded half-up to the cent; a change in an active term is prorated by seconds left / seconds
 * in the term, and the unused part of the current charges (with its VAT) is credited.
 */
onEachEngine('subscription estimate and update', { TEST_CLOCK_ENABLED: true }, (t) => {
  const plans = {
    basic: { price: 29.9, features: ['stamping'] },
    pro: { price: 49.9, features: ['stamping', 'expense'] },
    annual: { price: 299, period_unit: 'year', features: ['stamping'] },
  }

  it("in trial: the first full term at the trial's end, with addons, a coupon (half-up) and Italian VAT", async () => {
    const c = await billedCompany(t, { start: '2035-01-01T00:00:00.000Z', plans })
    const a1 = await addon(t, { name: 'Badge', price: 5 })
    const a2 = await addon(t, { name: 'Kiosk', price: 1.25 })
    const code = await coupon(t, { name: 'Spring', discount_value: 15 })
    const res = await estimate(t, c.subscriptionId, {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.plans.basic!,
      plan_quantity: '5',
      addons: [a1, a2],
      coupon_code: code,
    })
    assert.equal(res.statusCode, 200, res.body)
    // 29.90 × 5 = 149.50; + 5.00 + 1.25 = 155.75; 15 % = 23.3625 → 23.36; VAT 22 % of 132.39 = 29.1258 → 29.13; 161.52.
    assert.deepEqual(res.json(), {
      estimate: {
        subscription_estimate: { status: 'in_trial', next_billing_at: unix('2035-01-31T00:00:00Z') },
        invoice_estimate: {
          line_items: [
            // Each line's part of the discount, in proportion (largest remainder), is what its tax is computed without.
            {
              entity_type: 'plan',
              entity_id: c.plans.basic,
              description: 'Plan basic',
              pricing_model: 'per_unit',
              unit_amount: 2990,
              quantity: 5,
              amount: 14950,
              discount_amount: 2242,
            },
            {
              entity_type: 'addon',
              entity_id: a1,
              description: 'Badge',
              pricing_model: 'per_unit',
              unit_amount: 500,
              quantity: 1,
              amount: 500,
              discount_amount: 75,
            },
            {
              entity_type: 'addon',
              entity_id: a2,
              description: 'Kiosk',
              pricing_model: 'per_unit',
              unit_amount: 125,
              quantity: 1,
              amount: 125,
              discount_amount: 19,
            },
          ],
          discounts: [{ description: `Spring (${code})`, amount: 2336 }],
          sub_total: 15575,
          taxes: [{ name: 'IT VAT', rate: 22, amount: 2913 }],
          total: 16152,
          credits_applied: 0,
          amount_due: 16152,
          currency_code: 'EUR',
        },
      },
    })
    // Half-up on an exact half: 15 % of 149.50 = 22.425 → 22.43 (plan alone, no addons yet on the subscription).
    const half = await estimate(t, c.id, {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.plans.basic!,
      plan_quantity: '5',
      coupon_code: code,
    })
    assert.deepEqual(half.json().estimate.invoice_estimate.discounts, [
      { description: `Spring (${code})`, amount: 2243 },
    ])

    // A fixed amount, and a country without VAT.
    const fixed = await coupon(t, { name: 'Ten off', discount_type: 'fixed_amount', discount_value: 10 })
    const us = await billedCompany(t, { plans, company: { country: 'US', timezone: 'America/New_York' } })
    const inv = (
      await estimate(t, us.subscriptionId, {
        company_id: us.id,
        product_sku: us.productSku,
        subscription_plan: us.plans.pro!,
        plan_quantity: '2',
        coupon_code: fixed,
      })
    ).json().estimate.invoice_estimate
    assert.deepEqual(
      [inv.sub_total, inv.discounts[0].amount, inv.taxes, inv.total, inv.amount_due],
      [9980, 1000, [], 8980, 8980],
    )

    // Update in trial: nothing billed now, the same estimate applied, the coupon counted once.
    const before = (
      await estimate(t, c.subscriptionId, {
        company_id: c.id,
        product_sku: c.productSku,
        subscription_plan: c.plans.pro!,
        plan_quantity: '3',
        addons: [a1],
        coupon_code: code,
      })
    ).json()
    const applied = await json(t, 200, {
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
      body: { subscription_plan: c.plans.pro, plan_quantity: 3, addons: [a1], coupon_code: code },
    })
    assert.deepEqual(applied.estimate, before.estimate)
    assert.deepEqual(
      [
        applied.subscription.status,
        applied.subscription.plan_id,
        applied.subscription.plan_quantity,
        applied.subscription.addons,
        applied.subscription.coupon_code,
      ],
      ['in_trial', c.plans.pro, 3, [{ id: a1, quantity: 1 }], code],
    )
    assert.deepEqual(applied.plan.features, ['stamping', 'expense'])
    const coupons = await json(t, 200, { url: `${SUB}/coupons` })
    assert.equal(coupons.find((k: any) => k.code === code).redemptions, 1)
    const m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_plan, m.plan_quantity, m.subscribed_features, m.areas.includes('expense')],
      [c.plans.pro, 3, ['stamping', 'expense'], true],
    )
    // Omitted fields keep their value; an empty body changes nothing.
    const same = await json(t, 200, {
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
    })
    assert.deepEqual(
      [same.subscription.plan_id, same.subscription.coupon_code, same.estimate],
      [c.plans.pro, code, before.estimate],
    )
    assert.equal((await json(t, 200, { url: `${SUB}/coupons` })).find((k: any) => k.code === code).redemptions, 1)
  })

  it('active: prorated to the second, credit of the unused term, and update equal to its estimate', async () => {
    const c = await billedCompany(t, { start: '2036-01-01T00:00:00.000Z', plans })
    const a1 = await addon(t, { name: 'Badge', price: 5 })
    await setCard(t, c.id)
    await at(t, '2036-01-31T00:00:00.000Z')
    // 2036 is a leap year: the term runs Jan 31 → Feb 29, 29 days = 2,505,600 s.
    await moveTo(t, '2036-02-10T12:34:56.000Z')
    // Left: Feb 29 00:00 − Feb 10 12:34:56 = 18 d 11:25:04 = 1,596,304 s; share = 1596304 / 2505600.
    // New: 24950 × share = 15895.508 → 15896; addon 500 × share = 318.547 → 319; sub_total 16215;
    //   VAT 22 % = 3567.3 → 3567; total 19782.
    // Credit: 14950 × share = 9524.563 → 9525; VAT 2095.5 → 2096 (half-up); 11621. Due 8161.
    // Downgrade to basic × 1 with the addon: 2990 × share = 1905.09 → 1905, + 319 = 2224, VAT 489.28 → 489: 2713.
    const query = {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.plans.pro!,
      plan_quantity: '5',
      addons: [a1],
    }
    const est = await json(t, 200, { url: `${SUB}/${c.subscriptionId}/estimate`, query, token: c.token })
    assert.deepEqual(est.estimate.subscription_estimate, {
      status: 'active',
      next_billing_at: unix('2036-02-29T00:00:00Z'),
    })
    const inv = est.estimate.invoice_estimate
    assert.deepEqual(
      inv.line_items.map((l: any) => [l.unit_amount, l.quantity, l.amount]),
      [
        [4990, 5, EXPECT.plan],
        [500, 1, EXPECT.addon],
      ],
    )
    assert.deepEqual(
      [inv.sub_total, inv.taxes[0].amount, inv.total, inv.credits_applied, inv.amount_due],
      [EXPECT.sub, EXPECT.tax, EXPECT.total, EXPECT.credit, 8161],
    )

    const res = await update(
      t,
      c.id,
      c.subscriptionId,
      { subscription_plan: c.plans.pro, plan_quantity: 5, addons: [a1] },
      c.token,
    )
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json().estimate, est.estimate)
    const d = await detailsOf(t, c)
    assert.deepEqual(
      [d.subscription.plan_id, d.subscription.status, d.subscription.current_term_end],
      [c.plans.pro, 'active', unix('2036-02-29T00:00:00Z')],
    )
    assert.deepEqual((await statusOf(t, c)).features, ['stamping', 'expense'])
    const m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_plan, m.subscribed_features, m.areas.includes('expense')],
      [c.plans.pro, ['stamping', 'expense'], true],
    )
    const changed = (await eventsOf(t, c.id)).at(-1)!
    assert.deepEqual(
      [changed.type, changed.from, changed.to, changed.actor],
      ['changed', 'active', 'active', c.client.client_id],
    )
    assert.deepEqual((changed.details as any).changes.plan_sku, [c.plans.basic, c.plans.pro])
    assert.deepEqual((changed.details as any).invoice, est.estimate.invoice_estimate)

    // A downgrade: the credit exceeds the new charge; only what is due is applied.
    const down = (
      await estimate(t, c.subscriptionId, { ...query, subscription_plan: c.plans.basic!, plan_quantity: '1' })
    ).json().estimate.invoice_estimate
    assert.deepEqual([down.total, down.credits_applied, down.amount_due], [EXPECT.downTotal, EXPECT.downTotal, 0])

    // Another billing period: a new term starts now, billed in full, less the credit.
    const y = await billedCompany(t, { start: '2036-01-01T00:00:00.000Z', plans })
    await setCard(t, y.id)
    await at(t, '2036-01-31T00:00:00.000Z')
    await moveTo(t, '2036-02-10T12:34:56.000Z')
    const yq = { company_id: y.id, product_sku: y.productSku, subscription_plan: y.plans.annual!, plan_quantity: '5' }
    const ye = await json(t, 200, { url: `${SUB}/${y.subscriptionId}/estimate`, query: yq, token: y.token })
    assert.deepEqual(ye.estimate.subscription_estimate, {
      status: 'active',
      next_billing_at: unix('2037-02-10T12:34:56Z'),
    })
    // 299.00 × 5 = 1495.00 + VAT 328.90 = 1823.90, less the credit 116.21.
    assert.deepEqual(
      [
        ye.estimate.invoice_estimate.total,
        ye.estimate.invoice_estimate.credits_applied,
        ye.estimate.invoice_estimate.amount_due,
      ],
      [182390, EXPECT.credit, 182390 - EXPECT.credit],
    )
    const yu = await json(t, 200, {
      method: 'PUT',
      url: `${SUB}/companies/${y.id}/update/${y.subscriptionId}`,
      token: y.token,
      body: { subscription_plan: y.plans.annual },
    })
    assert.deepEqual(yu.estimate, ye.estimate)
    assert.deepEqual(
      [yu.subscription.current_term_start, yu.subscription.current_term_end],
      [unix('2036-02-10T12:34:56Z'), unix('2037-02-10T12:34:56Z')],
    )
    await at(t, '2036-02-29T00:00:00.000Z')
    assert.equal((await statusOf(t, y)).current_term_end, unix('2037-02-10T12:34:56Z'))
    await at(t, '2037-02-10T12:34:56.000Z')
    assert.equal((await statusOf(t, y)).current_term_end, unix('2038-02-10T12:34:56Z'))
  })

  it("coupons: validity by the company's day, max_redemptions, never over-redeemed under concurrency", async () => {
    const a = await billedCompany(t, { start: '2038-03-10T12:00:00.000Z', plans })
    const b = await billedCompany(t, { plans })
    const q = (c: typeof a, code: string) => ({
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.plans.basic!,
      plan_quantity: '1',
      coupon_code: code,
    })
    const once = await coupon(t, { max_redemptions: 1 })
    assert.equal((await estimate(t, a.subscriptionId, q(a, once))).statusCode, 200)
    assert.equal((await update(t, a.id, a.subscriptionId, { coupon_code: once }, a.token)).statusCode, 200)
    const used = await estimate(t, b.subscriptionId, q(b, once))
    assert.deepEqual(
      [used.statusCode, /querystring\/coupon_code .* max_redemptions/.test(used.json().errors)],
      [400, true],
    )
    assert.equal((await update(t, b.id, b.subscriptionId, { coupon_code: once }, b.token)).statusCode, 400)
    // A coupon the subscription holds keeps applying.
    assert.equal((await estimate(t, a.subscriptionId, q(a, once))).statusCode, 200)

    const yesterday = await coupon(t, { valid_till: '2038-03-09' })
    const today = await coupon(t, { valid_till: '2038-03-10' })
    assert.match((await estimate(t, b.id, q(b, yesterday))).json().errors, /expired on 2038-03-09/)
    assert.equal((await estimate(t, b.id, q(b, today))).statusCode, 200)
    // 23:30 UTC is already the 11th in Rome, the company's time zone.
    await moveTo(t, '2038-03-10T23:30:00.000Z')
    assert.equal((await estimate(t, b.id, q(b, today))).statusCode, 400)
    assert.equal((await update(t, b.id, b.subscriptionId, { coupon_code: today }, b.token)).statusCode, 400)

    const last = await coupon(t, { max_redemptions: 1 })
    const c = await billedCompany(t, { plans })
    const results = await Promise.all(
      [b, c].map((x) => update(t, x.id, x.subscriptionId, { coupon_code: last }, x.token)),
    )
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [200, 400])
    assert.equal((await json(t, 200, { url: `${SUB}/coupons` })).find((k: any) => k.code === last).redemptions, 1)
    // Removing a coupon: null (or "").
    const removed = await update(t, a.id, a.subscriptionId, { coupon_code: null }, a.token)
    assert.equal(removed.json().subscription.coupon_code, null)
  })

  it('refuses an unknown or not allowed plan, product, addon or coupon with 400 naming the field', async () => {
    const c = await billedCompany(t, { start: '2039-01-01T00:00:00.000Z', plans })
    const other = await billedCompany(t, { plans })
    const yearlyAddon = await addon(t, { period_unit: 'year' })
    const a1 = await addon(t)
    const base = { company_id: c.id, product_sku: c.productSku, subscription_plan: c.plans.basic!, plan_quantity: '1' }
    const cases: [Record<string, string | string[]>, RegExp][] = [
      [{ ...base, subscription_plan: 'no-such-plan' }, /querystring\/subscription_plan names an unknown plan/],
      [
        { ...base, subscription_plan: other.plans.basic! },
        /querystring\/subscription_plan .* not among the allowed_plans/,
      ],
      [{ ...base, product_sku: 'no-such-product' }, /querystring\/product_sku names an unknown product/],
      [{ ...base, product_sku: other.productSku }, /querystring\/product_sku must be the subscription's product/],
      [{ ...base, addons: ['00000000-0000-4000-8000-000000000000'] }, /querystring\/addons names an unknown addon/],
      [{ ...base, addons: [yearlyAddon] }, /querystring\/addons.*per year/],
      [{ ...base, addons: [a1, a1] }, /querystring\/addons must not name an addon twice/],
      [{ ...base, coupon_code: 'NOPE' }, /querystring\/coupon_code names an unknown coupon/],
      [{ ...base, plan_quantity: '0' }, /querystring\/plan_quantity/],
      [{ ...base, plan_quantity: 'many' }, /querystring\/plan_quantity/],
      [
        { company_id: c.id, product_sku: c.productSku, plan_quantity: '1' },
        /querystring\/subscription_plan is required/,
      ],
    ]
    for (const [query, message] of cases) {
      const res = await estimate(t, c.subscriptionId, query)
      assert.equal(res.statusCode, 400, `${JSON.stringify(query)}: ${res.body}`)
      assert.match(res.json().errors, message)
    }
    const bodies: [unknown, RegExp][] = [
      [{ subscription_plan: 'no-such-plan' }, /body\/subscription_plan names an unknown plan/],
      [{ subscription_plan: other.plans.basic }, /body\/subscription_plan .* not among the allowed_plans/],
      [{ addons: ['00000000-0000-4000-8000-000000000000'] }, /body\/addons names an unknown addon/],
      [{ coupon_code: 'NOPE' }, /body\/coupon_code names an unknown coupon/],
      [{ plan_quantity: '2' }, /body\/plan_quantity must be integer/],
      [{ product_sku: c.productSku }, /body\/product_sku is not a known field/],
    ]
    for (const [body, message] of bodies) {
      const res = await update(t, c.id, c.subscriptionId, body, c.token)
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`)
      assert.match(res.json().errors, message)
    }
    // Nothing was changed by the refused updates.
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => e.type),
      ['created'],
    )
    // Repeated addons= parameters are a list.
    const two = await call(t, {
      url: `${SUB}/${c.subscriptionId}/estimate?company_id=${c.id}&product_sku=${c.productSku}&subscription_plan=${c.plans.basic}&plan_quantity=1&addons=${a1}&addons=${await addon(t)}`,
      token: null,
    })
    assert.equal(two.json().estimate.invoice_estimate.line_items.length, 3)
  })
})

/** The proration case above, computed by hand (exact fractions, then half-up per line). */
const EXPECT = { plan: 15896, addon: 319, sub: 16215, tax: 3567, total: 19782, credit: 11621, downTotal: 2713 }
