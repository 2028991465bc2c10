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
  moveTo,
  setCard,
  unix,
  update,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Coupon durations and targets on the local engine (issue 16, decisions §8.4), against
 * Chargebee's documentation:
 * - "Fixed Amount coupons can be applied only once in a billing cycle. However, if there is a
 *   surplus in the discount after applying the coupon once, the surplus discount will be applied
 *   again when there is a change in subscription within the same billing cycle" (Chargebee,
 *   Coupons: $50 off a $10 invoice leaves $40 for a $100 change in the same cycle, paid $60).
 * - Duration: one_time "applied only once", forever "every recurring invoice", limited_period of
 *   5 months "applied to every recurring invoice generated in the first 5 months" (5 invoices of
 *   a monthly plan). Ours counts the months from the first period the coupon discounts.
 * Companies in the US: no VAT, so the figures are Chargebee's own.
 */
onEachEngine('coupon durations and targets', { TEST_CLOCK_ENABLED: true }, (t) => {
  const plans = { gold: { price: 30 }, platinum: { price: 100 } }
  const us = { country: 'US', timezone: 'America/New_York', plan_quantity: 1 }
  /** The invoices the scheduler's activation and renewals would bill, oldest first. */
  const termInvoices = async (companyId: string) =>
    (await eventsOf(t, companyId))
      .filter((e) => e.type === 'activated' || e.type === 'renewed')
      .map((e) => {
        const inv = (e.details as any).invoice
        return [e.at.slice(0, 10), inv.sub_total, inv.discounts.map((d: any) => d.amount), inv.amount_due]
      })

  it("a fixed €10 coupon added mid-term applies whole: 25.00 due, not 30.00 (Chargebee's $30 → $100 upgrade)", async () => {
    // Trial from 2045-03-02 ends 2045-04-01: the first term is April, 30 days.
    const c = await billedCompany(t, { start: '2045-03-02T00:00:00.000Z', plans, company: us })
    await setCard(t, c.id)
    await at(t, '2045-04-01T00:00:00.000Z')
    const ten = await coupon(t, { name: 'Ten off', discount_type: 'fixed_amount', discount_value: 10 })
    // 15 of 30 days left. Chargebee's worked upgrade: 100.00 × 15/30 = 50.00 charged, 30.00 × 15/30
    // = 15.00 credited, 35.00 due. With the coupon applied whole once in the period: 50.00 − 10.00 =
    // 40.00, less the 15.00 credit: 25.00 due (a prorated coupon, 10.00 × 15/30 = 5.00, gave 30.00).
    await moveTo(t, '2045-04-16T00:00:00.000Z')
    const query = {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.plans.platinum!,
      plan_quantity: '1',
      coupon_code: ten,
    }
    const est = (await estimate(t, c.id, query, c.token)).json().estimate.invoice_estimate
    assert.deepEqual(
      [est.line_items[0].amount, est.discounts, est.sub_total, est.total, est.credits_applied, est.amount_due],
      [5000, [{ description: `Ten off (${ten})`, amount: 1000 }], 5000, 4000, 1500, 2500],
    )
    const res = await update(
      t,
      c.id,
      c.subscriptionId,
      { subscription_plan: c.plans.platinum, coupon_code: ten },
      c.token,
    )
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json().estimate.invoice_estimate, est)
    // Once per period: a second change in April takes nothing more off. Back to gold with 5 of 30
    // days left (Apr 26): 30.00 × 5/30 = 5.00 charged, no discount. Credited: the unused share of
    // what the Apr 16 invoice charged for its 15 days, 5 of 15 of 40.00 = 13.33 (not 100.00 × 5/30 = 16.67).
    await moveTo(t, '2045-04-26T00:00:00.000Z')
    const down = (await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.gold }, c.token)).json().estimate
      .invoice_estimate
    assert.deepEqual(
      [down.sub_total, down.discounts, down.total, down.credits_applied, down.amount_due],
      [500, [], 500, 500, 0],
    )
    // Each renewal gets it whole again: 30.00 − 10.00. May also takes the credit the April 26
    // downgrade left (13.33 credited − 5.00 charged = 8.33, kept as Chargebee keeps prorated
    // credits): 20.00 − 8.33 = 11.67 due; June 20.00.
    await at(t, '2045-05-01T00:00:00.000Z')
    await at(t, '2045-06-01T00:00:00.000Z')
    assert.deepEqual(await termInvoices(c.id), [
      ['2045-04-01', 3000, [], 3000],
      ['2045-05-01', 3000, [1000], 1167],
      ['2045-06-01', 3000, [1000], 2000],
    ])
  })

  it('a fixed amount larger than the invoice keeps its surplus for a change in the same period', async () => {
    const c = await billedCompany(t, { start: '2045-03-02T00:00:00.000Z', plans, company: us })
    await setCard(t, c.id)
    const fifty = await coupon(t, { name: 'Fifty off', discount_type: 'fixed_amount', discount_value: 50 })
    assert.equal((await update(t, c.id, c.subscriptionId, { coupon_code: fifty }, c.token)).statusCode, 200)
    // April: 30.00, all of it discounted (20.00 of the 50.00 left for April).
    await at(t, '2045-04-01T00:00:00.000Z')
    await moveTo(t, '2045-04-16T00:00:00.000Z')
    // Platinum for the last 15 days: 50.00, less the 20.00 surplus = 30.00 due. Nothing is credited
    // for the unused gold: the coupon paid all of it, and a credit never exceeds what was paid.
    const up = (await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.platinum }, c.token)).json()
      .estimate.invoice_estimate
    assert.deepEqual(
      [up.sub_total, up.discounts.map((d: any) => d.amount), up.total, up.credits_applied, up.amount_due],
      [5000, [2000], 3000, 0, 3000],
    )
    assert.deepEqual(await json(t, 200, { url: `${SUB}/${c.id}/credit_notes`, token: c.token }), [])
    await at(t, '2045-05-01T00:00:00.000Z')
    assert.deepEqual(
      (await termInvoices(c.id)).map((i) => i.slice(1)),
      [
        [3000, [3000], 0],
        [10000, [5000], 5000],
      ],
    )
  })

  it('limited_period of 3 months across 5 monthly renewals discounts exactly the first 3 periods (month-end anchor)', async () => {
    // Trial ends Jan 31: terms Jan 31, Feb 28, Mar 31, Apr 30, May 31, Jun 30. Three months
    // after the first discounted period (Jan 31) is Apr 30: the periods starting before it.
    const c = await billedCompany(t, { start: '2046-01-01T00:00:00.000Z', plans, company: us })
    await setCard(t, c.id)
    const three = await coupon(t, {
      name: 'Three months',
      discount_type: 'fixed_amount',
      discount_value: 10,
      duration_type: 'limited_period',
      duration_month: 3,
    })
    assert.equal((await update(t, c.id, c.subscriptionId, { coupon_code: three }, c.token)).statusCode, 200)
    for (const day of ['2046-01-31', '2046-02-28', '2046-03-31', '2046-04-30', '2046-05-31', '2046-06-30'])
      await at(t, `${day}T00:00:00.000Z`)
    assert.deepEqual(await termInvoices(c.id), [
      ['2046-01-31', 3000, [1000], 2000],
      ['2046-02-28', 3000, [1000], 2000],
      ['2046-03-31', 3000, [1000], 2000],
      ['2046-04-30', 3000, [], 3000],
      ['2046-05-31', 3000, [], 3000],
      ['2046-06-30', 3000, [], 3000],
    ])
    // The details show what it did, as Chargebee's subscription.coupons[] does.
    assert.deepEqual((await detailsOf(t, c)).subscription.coupons, [
      {
        coupon_code: three,
        applied_at: unix('2046-01-01T00:00:00Z'),
        applied_count: 3,
        apply_till: unix('2046-04-30T00:00:00Z'),
      },
    ])
    // The subscription still holds it; the estimate of a change no longer discounts.
    await moveTo(t, '2046-07-15T00:00:00.000Z')
    const est = (
      await estimate(
        t,
        c.id,
        { company_id: c.id, product_sku: c.productSku, subscription_plan: c.plans.platinum!, plan_quantity: '1' },
        c.token,
      )
    ).json().estimate
    assert.deepEqual(est.invoice_estimate.discounts, [])
  })

  it('one_time discounts one period only, and every change within that period', async () => {
    const c = await billedCompany(t, { start: '2047-01-01T00:00:00.000Z', plans, company: us })
    await setCard(t, c.id)
    const once = await coupon(t, {
      name: 'Once',
      discount_type: 'percentage',
      discount_value: 50,
      duration_type: 'one_time',
    })
    assert.equal((await update(t, c.id, c.subscriptionId, { coupon_code: once }, c.token)).statusCode, 200)
    await at(t, '2047-01-31T00:00:00.000Z')
    // In the discounted period (Jan 31 → Feb 28, 28 days), 14 days left: platinum 50.00 − 50 % = 25.00;
    // credit of gold at half price for those days: 15.00 − 7.50 = 7.50; 17.50 due.
    await moveTo(t, '2047-02-14T00:00:00.000Z')
    const up = (await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.platinum }, c.token)).json()
      .estimate.invoice_estimate
    assert.deepEqual(
      [up.sub_total, up.discounts.map((d: any) => d.amount), up.credits_applied, up.amount_due],
      [5000, [2500], 750, 1750],
    )
    for (const day of ['2047-02-28', '2047-03-31', '2047-04-30']) await at(t, `${day}T00:00:00.000Z`)
    assert.deepEqual(
      (await termInvoices(c.id)).map((i) => i.slice(1)),
      [
        [3000, [1500], 1500],
        [10000, [], 10000],
        [10000, [], 10000],
        [10000, [], 10000],
      ],
    )
    assert.deepEqual((await detailsOf(t, c)).subscription.coupons, [
      { coupon_code: once, applied_at: unix('2047-01-01T00:00:00Z'), applied_count: 1, apply_till: null },
    ])
    // Taken off and put on again, it resumes where it stood: used once, it discounts nothing more.
    assert.deepEqual(
      (await update(t, c.id, c.subscriptionId, { coupon_code: null }, c.token)).json().subscription.coupons,
      [],
    )
    await moveTo(t, '2047-05-10T00:00:00.000Z')
    const again = await update(t, c.id, c.subscriptionId, { coupon_code: once }, c.token)
    assert.deepEqual(again.json().subscription.coupons, [
      { coupon_code: once, applied_at: unix('2047-05-10T00:00:00Z'), applied_count: 1, apply_till: null },
    ])
    assert.deepEqual(again.json().estimate.invoice_estimate.discounts, [])
    await at(t, '2047-05-31T00:00:00.000Z')
    assert.deepEqual((await termInvoices(c.id)).at(-1)!.slice(1), [10000, [], 10000])
  })

  it('each_specified_item discounts only the named plan and addon lines, and is refused when it names none chosen', async () => {
    const c = await billedCompany(t, { start: '2048-01-01T00:00:00.000Z', plans, company: us })
    const badge = await addon(t, { name: 'Badge', price: 5 })
    const kiosk = await addon(t, { name: 'Kiosk', price: 8 })
    // 20 % of the gold line (30.00 → 6.00) and of the badge line (5.00 → 1.00); the kiosk is not named.
    const items = await coupon(t, {
      name: 'Items',
      discount_type: 'percentage',
      discount_value: 20,
      apply_on: 'each_specified_item',
      plan_ids: [c.plans.gold],
      addon_ids: [badge],
    })
    const query = {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.plans.gold!,
      plan_quantity: '1',
      addons: [badge, kiosk],
      coupon_code: items,
    }
    const inv = (await estimate(t, c.id, query, c.token)).json().estimate.invoice_estimate
    assert.deepEqual([inv.sub_total, inv.discounts.map((d: any) => d.amount), inv.total], [4300, [700], 3600])
    // A fixed amount off each named line, whole: only the kiosk is named, 4.00 off it.
    const kioskOff = await coupon(t, {
      name: 'Kiosk off',
      discount_type: 'fixed_amount',
      discount_value: 4,
      apply_on: 'each_specified_item',
      addon_ids: [kiosk],
    })
    const k = (await estimate(t, c.id, { ...query, coupon_code: kioskOff }, c.token)).json().estimate.invoice_estimate
    assert.deepEqual([k.sub_total, k.discounts.map((d: any) => d.amount), k.total], [4300, [400], 3900])
    // Named items none of which is chosen: 400 naming the field, in the estimate and the update.
    const refused = await estimate(t, c.id, { ...query, addons: [badge], coupon_code: kioskOff }, c.token)
    assert.equal(refused.statusCode, 400)
    assert.match(
      refused.json().errors,
      /querystring\/coupon_code .* applies only to plans \[\] and addons \[.*\], none of which is chosen/,
    )
    const refusedUpdate = await update(t, c.id, c.subscriptionId, { coupon_code: kioskOff }, c.token)
    assert.equal(refusedUpdate.statusCode, 400)
    assert.match(refusedUpdate.json().errors, /body\/coupon_code/)
  })

  it('each_specified_item taxes each named line on its own discount: a line discounted to nothing bears no VAT', async () => {
    // An Italian customer (22 %): a €15 plan and a €5 addon, €10 off each of them. Plan 15.00 −
    // 10.00 = 5.00, VAT 1.10; addon 5.00 − 5.00 = 0.00, no VAT: 6.10 due. Spreading the 15.00 of
    // discounts over both lines in proportion (11.25 and 3.75) taxed the free addon: 0.83 + 0.28 =
    // 1.11 of VAT, 6.11 due.
    const c = await billedCompany(t, {
      start: '2049-01-01T00:00:00.000Z',
      plans: { small: { price: 15 } },
      company: { plan_quantity: 1 },
    })
    const badge = await addon(t, { name: 'Badge', price: 5 })
    const each = await coupon(t, {
      name: 'Ten off each',
      discount_type: 'fixed_amount',
      discount_value: 10,
      apply_on: 'each_specified_item',
      plan_ids: [c.plans.small],
      addon_ids: [badge],
    })
    const query = {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.plans.small!,
      plan_quantity: '1',
      addons: [badge],
      coupon_code: each,
    }
    const inv = (await estimate(t, c.id, query, c.token)).json().estimate.invoice_estimate
    assert.deepEqual(
      [inv.sub_total, inv.discounts.map((d: any) => d.amount), inv.taxes.map((x: any) => x.amount), inv.total],
      [2000, [1500], [110], 610],
    )
  })

  it('coupon routes: the new fields have defaults, are validated (400 naming the field) and read back', async () => {
    const gold = (await billedCompany(t, { plans })).plans.gold!
    const badge = await addon(t)
    const base = () => ({
      code: `K${Math.random().toString(36).slice(2, 10)}`,
      name: 'K',
      discount_type: 'percentage',
      discount_value: 10,
    })
    const expect400 = async (body: Record<string, unknown>, message: RegExp) => {
      const res = await call(t, { method: 'POST', url: `${SUB}/coupons`, body: { ...base(), ...body } })
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`)
      assert.match(res.json().errors, message)
    }
    await expect400(
      { duration_type: 'twice' },
      /body\/duration_type must be one of "one_time", "forever", "limited_period"/,
    )
    await expect400({ apply_on: 'plans' }, /body\/apply_on must be one of "invoice_amount", "each_specified_item"/)
    await expect400(
      { duration_type: 'limited_period' },
      /body\/duration_month is required when body\/duration_type is "limited_period"/,
    )
    await expect400(
      { duration_month: 3 },
      /body\/duration_month applies only to duration_type "limited_period", not "forever"/,
    )
    await expect400(
      { duration_type: 'one_time', duration_month: 3 },
      /body\/duration_month applies only to duration_type "limited_period", not "one_time"/,
    )
    await expect400({ duration_type: 'limited_period', duration_month: 0 }, /body\/duration_month/)
    await expect400({ duration_type: 'limited_period', duration_month: 1.5 }, /body\/duration_month/)
    await expect400({ plan_ids: [gold] }, /body\/plan_ids applies only to apply_on "each_specified_item"/)
    await expect400({ addon_ids: [badge] }, /body\/addon_ids applies only to apply_on "each_specified_item"/)
    await expect400(
      { apply_on: 'each_specified_item' },
      /body\/plan_ids or body\/addon_ids must name at least one item/,
    )
    await expect400(
      { apply_on: 'each_specified_item', plan_ids: ['no-such-plan'] },
      /body\/plan_ids names an unknown plan: no-such-plan/,
    )
    await expect400(
      { apply_on: 'each_specified_item', addon_ids: ['00000000-0000-4000-8000-000000000000'] },
      /body\/addon_ids names an unknown addon/,
    )
    await expect400({ apply_on: 'each_specified_item', addon_ids: ['badge'] }, /body\/addon_ids/)
    await expect400({ apply_on: 'each_specified_item', plan_ids: [gold, gold] }, /body\/plan_ids/)

    const body = {
      ...base(),
      duration_type: 'limited_period',
      duration_month: 6,
      apply_on: 'each_specified_item',
      plan_ids: [gold],
      addon_ids: [badge.toUpperCase()],
    }
    const res = await call(t, { method: 'POST', url: `${SUB}/coupons`, body })
    assert.equal(res.statusCode, 202, res.body)
    const read = await t.json(200, { url: String(res.headers.location) })
    assert.deepEqual(
      [read.duration_type, read.duration_month, read.apply_on, read.plan_ids, read.addon_ids],
      ['limited_period', 6, 'each_specified_item', [gold], [badge]],
    )
  })
})
