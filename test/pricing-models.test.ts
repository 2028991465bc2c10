import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import { locationId, uniq } from './helpers/app.ts'
import {
  SUB,
  addon,
  at,
  billedCompany,
  call,
  coupon,
  detailsOf,
  estimate,
  json,
  moveTo,
  setCard,
  startAt,
  update,
} from './subscriptions-helpers.ts'
import { forEachEngine, onEachEngine } from './helpers/engine-suites.ts'
import { chargebeeCompany, withChargebee } from './chargebee.fixtures.ts'

/**
 * Pricing models and addon quantities on the local engine (decisions §9.3, docs/billing.md), with
 * the test clock. Customers are in the US (an export: no tax), so a total is its lines' sum.
 * Tiers everywhere: 1–10 at 10.00, 11–50 at 8.00, 51+ at 6.00; per_unit and flat_fee at 10.00.
 */
const TIERS = [
  { starting_unit: 1, ending_unit: 10, price: 10 },
  { starting_unit: 11, ending_unit: 50, price: 8 },
  { starting_unit: 51, ending_unit: null, price: 6 },
]
const MODELS = ['flat_fee', 'per_unit', 'tiered', 'volume', 'stairstep'] as const
type Model = (typeof MODELS)[number]
const QUANTITIES = [5, 10, 11, 50, 51, 120] as const

/** Worked by hand, in cents, per model and quantity. */
const EXPECTED: Record<Model, Record<number, number>> = {
  // flat_fee: 10.00 whatever the quantity.
  flat_fee: { 5: 1000, 10: 1000, 11: 1000, 50: 1000, 51: 1000, 120: 1000 },
  // per_unit: q × 10.00.
  per_unit: { 5: 5000, 10: 10000, 11: 11000, 50: 50000, 51: 51000, 120: 120000 },
  // tiered: 5 × 10 = 50; 10 × 10 = 100; 100 + 1 × 8 = 108; 100 + 40 × 8 = 420; 420 + 1 × 6 = 426;
  // 420 + 70 × 6 = 840.
  tiered: { 5: 5000, 10: 10000, 11: 10800, 50: 42000, 51: 42600, 120: 84000 },
  // volume: 5 × 10 = 50; 10 × 10 = 100; 11 × 8 = 88; 50 × 8 = 400; 51 × 6 = 306; 120 × 6 = 720.
  volume: { 5: 5000, 10: 10000, 11: 8800, 50: 40000, 51: 30600, 120: 72000 },
  // stairstep: the price of the quantity's tier, once: 10, 10, 8, 8, 6, 6.
  stairstep: { 5: 1000, 10: 1000, 11: 800, 50: 800, 51: 600, 120: 600 },
}

const planBody = (model: Model, fields: Record<string, unknown> = {}) => ({
  plan: {
    sku: uniq(`plan-${model}`),
    name: `Plan ${model}`,
    plan_family: 'core',
    period_unit: 'month',
    features: ['stamping'],
    pricing_model: model,
    ...(model === 'flat_fee' || model === 'per_unit' ? { price: 10 } : { tiers: TIERS }),
    ...fields,
  },
})

const createPlan = (t: TestApp, body: unknown) => call(t, { method: 'POST', url: `${SUB}/plans`, body })
const invoicesOf = (t: TestApp, id: string) => json(t, 200, { url: `${SUB}/${id}/invoices` })

onEachEngine('pricing models', { TEST_CLOCK_ENABLED: true, CURRENCY_CODE: 'EUR' }, (t) => {
  const skus = {} as Record<Model, string>
  let productSku = ''

  before(async () => {
    for (const model of MODELS) {
      const body = planBody(model)
      const res = await createPlan(t, body)
      assert.equal(res.statusCode, 202, res.body)
      skus[model] = body.plan.sku
    }
    productSku = uniq('product')
    const res = await call(t, {
      method: 'POST',
      url: `${SUB}/products`,
      body: { product: { sku: productSku, name: 'Workforce', allowed_plans: Object.values(skus) } },
    })
    assert.equal(res.statusCode, 202, res.body)
  })

  async function usCompany(model: Model, quantity: number): Promise<string> {
    const res = await call(t, {
      method: 'POST',
      url: '/api/v1/companies',
      body: {
        name: uniq('Acme'),
        country: 'US',
        timezone: 'America/New_York',
        product_sku: productSku,
        subscription_plan: skus[model],
        plan_quantity: quantity,
      },
    })
    assert.equal(res.statusCode, 202, res.body)
    const id = locationId(res)
    await setCard(t, id)
    return id
  }

  it('shows a tiered plan with the first tier as its price and the tiers readably', async () => {
    const plans = await json(t, 200, { url: `${SUB}/plans`, query: { name: 'Plan volume', limit: '100' } })
    const plan = plans.find((p: any) => p.plan.sku === skus.volume).plan
    assert.deepEqual(
      [plan.pricing_model, plan.price, plan.tiers, plan.tiers_text],
      ['volume', 10, TIERS, '1–10: €10.00 · 11–50: €8.00 · 51+: €6.00'],
    )
    const flat = await json(t, 200, { url: `${SUB}/plans`, query: { name: 'Plan flat_fee', limit: '100' } })
    assert.deepEqual(
      [flat[0].plan.pricing_model, flat[0].plan.tiers, flat[0].plan.tiers_text],
      ['flat_fee', null, null],
    )
  })

  it('estimates and first invoices by model for 5, 10, 11, 50, 51 and 120 seats', async () => {
    await startAt(t, '2027-03-02T00:00:00.000Z')
    const companies: { model: Model; quantity: number; id: string }[] = []
    for (const model of MODELS) {
      for (const quantity of QUANTITIES) companies.push({ model, quantity, id: await usCompany(model, quantity) })
    }
    for (const { model, quantity, id } of companies) {
      const res = await estimate(t, id, {
        company_id: id,
        product_sku: productSku,
        subscription_plan: skus[model],
        plan_quantity: String(quantity),
      })
      assert.equal(res.statusCode, 200, res.body)
      const [line] = res.json().estimate.invoice_estimate.line_items
      assert.deepEqual(
        { model: line.pricing_model, quantity: line.quantity, amount: line.amount },
        { model, quantity, amount: EXPECTED[model][quantity] },
        `estimate ${model} × ${quantity}`,
      )
    }
    // The trial ends on Apr 1: each company's first invoice is a whole term.
    await at(t, '2027-04-01T00:00:00.000Z')
    for (const { model, quantity, id } of companies) {
      const [first] = await invoicesOf(t, id)
      const [line] = first.line_items
      assert.deepEqual(
        { model: line.pricing_model, quantity: line.quantity, amount: line.amount, total: first.total },
        { model, quantity, amount: EXPECTED[model][quantity], total: EXPECTED[model][quantity] },
        `first invoice ${model} × ${quantity}`,
      )
    }
  })

  it('prorates a volume upgrade from 15 to 25 seats by the difference of the two totals', async () => {
    await startAt(t, '2027-05-02T00:00:00.000Z')
    const id = await usCompany('volume', 15)
    // The trial ends Jun 1: 15 seats in the 11–50 tier, 15 × 8.00 = 120.00 for Jun 1 → Jul 1 (30 days).
    await at(t, '2027-06-01T00:00:00.000Z')
    assert.equal((await invoicesOf(t, id))[0].total, 12000)
    // Jun 16, 15 of 30 days left: 25 seats cost 25 × 8.00 = 200.00 a term, charged 200.00 × 15/30 =
    // 100.00; the unused 120.00 × 15/30 = 60.00 is credited: (200.00 − 120.00) × 15/30 = 40.00 paid.
    await moveTo(t, '2027-06-16T00:00:00.000Z')
    const { subscription_id } = await json(t, 200, { url: `${SUB}/${id}/status` })
    const changed = await update(t, id, subscription_id, { plan_quantity: 25 })
    assert.equal(changed.statusCode, 200, changed.body)
    const [change] = await invoicesOf(t, id)
    assert.deepEqual(
      [change.line_items[0].pricing_model, change.line_items[0].quantity, change.line_items[0].amount],
      ['volume', 25, 10000],
    )
    assert.deepEqual(
      [change.total, change.credits_applied, change.amount_paid, change.amount_due],
      [10000, 6000, 4000, 0],
    )
  })

  it('bills an addon by its quantity, and a coupon on that addon only takes off its amount', async () => {
    const c = await billedCompany(t, {
      start: '2027-07-02T00:00:00.000Z',
      plans: { basic: { price: 10 } },
      company: { country: 'US', timezone: 'America/New_York', plan_quantity: 5 },
    })
    const devices = await addon(t, { price: 5 })
    const sites = await addon(t, { price: 4 })
    const code = await coupon(t, { discount_value: 20, apply_on: 'each_specified_item', addon_ids: [devices] })
    // Plan 5 × 10.00 = 50.00; devices × 3 at 5.00 = 15.00, less 20 % = 3.00; sites × 1 (the id-only
    // form) at 4.00 = 4.00, undiscounted: 50.00 + 15.00 + 4.00 − 3.00 = 66.00.
    const res = await update(t, c.id, c.subscriptionId, {
      addons: [{ id: devices, quantity: 3 }, sites],
      coupon_code: code,
    })
    assert.equal(res.statusCode, 200, res.body)
    const invoice = res.json().estimate.invoice_estimate
    const lines = invoice.line_items.map((l: any) => [l.entity_id, l.quantity, l.amount, l.discount_amount ?? 0])
    assert.deepEqual(lines, [
      [c.planSku, 5, 5000, 0],
      [devices, 3, 1500, 300],
      [sites, 1, 400, 0],
    ])
    assert.deepEqual([invoice.sub_total, invoice.discounts[0].amount, invoice.total], [6900, 300, 6600])
    const details = await detailsOf(t, c)
    assert.deepEqual(details.subscription.addons, [
      { id: devices, quantity: 3 },
      { id: sites, quantity: 1 },
    ])
    // The estimate's query: devices × 4 = 20.00 less 20 % = 4.00; sites dropped: 50 + 20 − 4 = 66.00.
    const est = await estimate(t, c.id, {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.planSku,
      plan_quantity: '5',
      addons: `${devices}:4`,
    })
    assert.equal(est.statusCode, 200, est.body)
    const e = est.json().estimate.invoice_estimate
    assert.deepEqual(
      e.line_items.map((l: any) => [l.entity_id, l.quantity, l.amount]),
      [
        [c.planSku, 5, 5000],
        [devices, 4, 2000],
      ],
    )
    assert.equal(e.total, 6600)
    const bad = await estimate(t, c.id, {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.planSku,
      plan_quantity: '5',
      addons: `${devices}:0`,
    })
    assert.equal(bad.statusCode, 400, bad.body)
    assert.match(bad.json().errors, /addons/)
    // The first invoice at the trial's end: the same 66.00.
    await setCard(t, c.id)
    await at(t, '2027-08-01T00:00:00.000Z')
    const [first] = await invoicesOf(t, c.id)
    assert.deepEqual([first.line_items[1].quantity, first.line_items[1].discount_amount, first.total], [3, 300, 6600])
  })

  it('refuses tiers that are not contiguous from 1 and open at the end, naming the tier', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        'first not at 1',
        { tiers: [{ starting_unit: 2, ending_unit: null, price: 1 }] },
        /^body\/plan\/tiers\/0\/starting_unit must be 1/,
      ],
      [
        'a gap',
        { tiers: [TIERS[0], { ...TIERS[1], starting_unit: 12 }, TIERS[2]] },
        /^body\/plan\/tiers\/1\/starting_unit must be 11/,
      ],
      [
        'the last closed',
        { tiers: [TIERS[0], TIERS[1], { ...TIERS[2], ending_unit: 100 }] },
        /^body\/plan\/tiers\/2\/ending_unit must be null/,
      ],
      [
        'a middle one open',
        { tiers: [TIERS[0], { ...TIERS[1], ending_unit: null }, TIERS[2]] },
        /^body\/plan\/tiers\/1\/ending_unit must be set/,
      ],
      [
        'ending before starting',
        { tiers: [TIERS[0], { starting_unit: 11, ending_unit: 9, price: 8 }, TIERS[2]] },
        /^body\/plan\/tiers\/1\/ending_unit must be at least its starting_unit 11/,
      ],
      ['a negative price', { tiers: [TIERS[0], { ...TIERS[1], price: -1 }, TIERS[2]] }, /tiers\/1\/price/],
      ['too many decimals', { tiers: [TIERS[0], { ...TIERS[1], price: 8.001 }, TIERS[2]] }, /tiers\/1\/price/],
      ['no tiers', { tiers: undefined }, /^body\/plan\/tiers are required for pricing_model volume/],
    ]
    for (const [name, fields, message] of cases) {
      const res = await createPlan(t, planBody('volume', fields))
      assert.equal(res.statusCode, 400, `${name}: ${res.body}`)
      assert.match(res.json().errors, message, name)
    }
    const perUnit = await createPlan(t, planBody('per_unit', { tiers: TIERS }))
    assert.equal(perUnit.statusCode, 400)
    assert.match(perUnit.json().errors, /^body\/plan\/tiers apply only to pricing_model tiered, volume or stairstep/)
    const noPrice = await createPlan(t, planBody('per_unit', { price: undefined }))
    assert.equal(noPrice.statusCode, 400)
    assert.match(noPrice.json().errors, /^body\/plan\/price is required for pricing_model per_unit/)
    const addonRes = await call(t, {
      method: 'POST',
      url: `${SUB}/addons`,
      body: {
        name: 'Sites',
        period_unit: 'month',
        pricing_model: 'tiered',
        tiers: [TIERS[0], { ...TIERS[1], starting_unit: 10 }, TIERS[2]],
      },
    })
    assert.equal(addonRes.statusCode, 400)
    assert.match(addonRes.json().errors, /^body\/tiers\/1\/starting_unit must be 11/)
  })
})

forEachEngine('pricing models at chargebee', (engine) => {
  const { t, fake } = withChargebee(engine)

  it('sends addon quantities and shows Chargebee’s lines with the items’ models and quantities', async () => {
    const c = await chargebeeCompany(t, fake, { plans: { seats: { pricing_model: 'volume', tiers: TIERS } } })
    const seats = c.plans.seats!
    // The same item price at Chargebee: volume, its tiers in cents, the last without ending_unit.
    fake.addItemPrice({
      id: seats,
      price: 1000,
      period_unit: 'month',
      item_type: 'plan',
      pricing_model: 'volume',
      tiers: [
        { starting_unit: 1, ending_unit: 10, price: 1000 },
        { starting_unit: 11, ending_unit: 50, price: 800 },
        { starting_unit: 51, price: 600 },
      ],
    })
    const devices = await addon(t, { price: 5 })
    fake.addItemPrice({ id: devices, price: 500, period_unit: 'month', item_type: 'addon' })
    const from = fake.requests.length
    const res = await call(t, {
      method: 'PUT',
      url: `${SUB}/companies/${c.id}/update/${c.subscriptionId}`,
      token: c.token,
      body: { plan_quantity: 25, addons: [{ id: devices, quantity: 3 }] },
    })
    assert.equal(res.statusCode, 200, res.body)
    const sent = fake.requests.slice(from).filter((r) => r.path.endsWith('/update_for_items'))
    assert.deepEqual(sent[0]!.params.subscription_items, [
      { item_price_id: seats, quantity: '25' },
      { item_price_id: devices, quantity: '3' },
    ])
    // In trial: the next invoice. Seats 25 × 8.00 = 200.00 (volume); devices 3 × 5.00 = 15.00.
    const lines = res.json().estimate.invoice_estimate.line_items
    assert.deepEqual(
      lines.map((l: any) => [l.entity_id, l.pricing_model, l.quantity, l.amount]),
      [
        [seats, 'volume', 25, 20000],
        [devices, 'per_unit', 3, 1500],
      ],
    )
    assert.deepEqual((await json(t, 200, { url: `${SUB}/${c.id}/details`, token: c.token })).subscription.addons, [
      { id: devices, quantity: 3 },
    ])
  })
})
