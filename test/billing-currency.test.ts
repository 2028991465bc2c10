import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { loadConfig } from '../src/config.ts'
import { addon, billedCompany, call, coupon, detailsOf, estimate, json, SUB } from './subscriptions-helpers.ts'
import { ALLOWED, PageSession, pathOf } from './hosted-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Currencies count in their ISO 4217 minor unit (decisions §8.4): JPY has none, so a 1000-yen
 * plan is 1000 in every amount of the API (it was 100000), and KWD has three decimals. Prices
 * with more decimals than the currency has are refused, never rounded. Chargebee does the same
 * ("What is the rounding logic for line item amounts?": JPY amounts are whole yen, line and tax
 * amounts rounded to the currency's precision).
 */
onEachEngine('JPY', { CURRENCY_CODE: 'JPY', SELLER_COUNTRY: 'JP', REDIRECT_ALLOWED_HOSTS: ALLOWED }, (t) => {
  // A seller in Japan pricing in yen; its EU consumers pay their country's VAT (the EU's
  // One-Stop Shop is open to sellers outside the EU), EU businesses are reverse-charged.

  const yen = { basic: { price: 1000 } }
  const query = (c: Awaited<ReturnType<typeof billedCompany>>, extra: Record<string, string | string[]> = {}) => ({
    company_id: c.id,
    product_sku: c.productSku,
    subscription_plan: c.planSku,
    plan_quantity: '1',
    ...extra,
  })

  it('prices a 1000-yen plan at 1000, in the catalogue, the estimate, the details and the hosted page', async () => {
    const c = await billedCompany(t, { plans: yen, company: { country: 'IT', timezone: 'Europe/Rome' } })
    assert.equal((await json(t, 200, { url: `${SUB}/plans/by_sku/${c.planSku}`, token: null })).plan.price, 1000)
    assert.equal((await detailsOf(t, c)).plan.price, 1000)
    // 1000 × 1 = 1000; Italian VAT 22 % = 220; 1220 due.
    const invoice = (await estimate(t, c.id, query(c))).json().estimate.invoice_estimate
    assert.deepEqual(
      [
        invoice.line_items[0].unit_amount,
        invoice.line_items[0].amount,
        invoice.sub_total,
        invoice.taxes,
        invoice.total,
        invoice.currency_code,
      ],
      [1000, 1000, 1000, [{ name: 'IT VAT', rate: 22, amount: 220 }], 1220, 'JPY'],
    )
    const page = await new PageSession(t, await pathOf(t, 'manager', c.id, c.token)).get()
    assert.equal(page.statusCode, 200)
    assert.ok(page.body.includes('JP¥1,000'), 'the manager page shows the plan at JP¥1,000')
    assert.ok(!page.body.includes('100,000') && !page.body.includes('JP¥10'), 'and no other figure for it')
  })

  it("rounds every line and each line's tax to the yen", async () => {
    const c = await billedCompany(t, { plans: yen, company: { country: 'IT', timezone: 'Europe/Rome' } })
    const badge = await addon(t, { name: 'Badge', price: 150 })
    const code = await coupon(t, { name: 'Twelve and a half', discount_value: 12.5 })
    // 1000 × 3 = 3000 and 150: sub_total 3150. 12.5 % of 3150 = 393.75 → 394, spread over the
    // lines in proportion: 375.24 → 375 and 18.76 → 19 (the larger remainder takes the yen left).
    // Tax per line: (3000 − 375) × 22 % = 577.5 → 578; (150 − 19) × 22 % = 28.82 → 29; 607 in
    // all (22 % of the discounted sum 2756 would be 606.32 → 606). Total 3150 − 394 + 607 = 3363.
    const invoice = (
      await estimate(t, c.id, query(c, { plan_quantity: '3', addons: [badge], coupon_code: code }))
    ).json().estimate.invoice_estimate
    assert.deepEqual(
      [
        invoice.line_items.map((l: { amount: number }) => l.amount),
        invoice.discounts[0].amount,
        invoice.taxes,
        invoice.total,
      ],
      [[3000, 150], 394, [{ name: 'IT VAT', rate: 22, amount: 607 }], 3363],
    )
    // A fixed 100-yen coupon is 100 yen off, not 1 yen: 1000 − 100 = 900, VAT 198, 1098.
    const fixed = await coupon(t, { name: 'Hundred yen', discount_type: 'fixed_amount', discount_value: 100 })
    assert.equal(
      (await json(t, 200, { url: `${SUB}/coupons` })).find((k: { code: string }) => k.code === fixed).discount_value,
      100,
    )
    const off = (await estimate(t, c.id, query(c, { coupon_code: fixed }))).json().estimate.invoice_estimate
    assert.deepEqual([off.discounts[0].amount, off.taxes[0].amount, off.total], [100, 198, 1098])
  })

  it("taxes by the seller's country: a business in Italy is reverse-charged, a customer in Japan is not taxed", async () => {
    const italian = await billedCompany(t, {
      plans: yen,
      company: { country: 'IT', timezone: 'Europe/Rome', vat_number: 'IT01234567890', vat_number_status: 'valid' },
    })
    const it = (await estimate(t, italian.id, query(italian))).json().estimate.invoice_estimate
    assert.deepEqual([it.taxes, it.total], [[{ name: 'Reverse charge', rate: 0, amount: 0 }], 1000])
    // The manager page's estimate says so in the customer's language, amounts in whole yen.
    for (const [language, mention, due] of [
      ['en', 'Reverse charge: VAT to be accounted for by the customer', 'JP¥2,000'],
      ['it', 'Inversione contabile: IVA a carico del cliente', '2.000\u00a0JPY'],
    ]) {
      const page = new PageSession(t, await pathOf(t, 'manager', italian.id, italian.token), language)
      await page.get()
      const shown = await page.post('estimate', { plan: italian.planSku, quantity: '2' })
      assert.equal(shown.statusCode, 200, shown.body)
      assert.ok(shown.body.includes(mention), `${language}: ${mention}`)
      assert.ok(shown.body.includes(JSON.parse(`"${due}"`)), `${language}: ${due} due`)
    }
    // Japan has no rate in the table: no tax line, the line says the tax is not configured.
    const japanese = await billedCompany(t, { plans: yen, company: { country: 'JP', timezone: 'Asia/Tokyo' } })
    const jp = (await estimate(t, japanese.id, query(japanese))).json().estimate.invoice_estimate
    assert.deepEqual([jp.taxes, jp.total, jp.line_items[0].tax_exempt_reason], [[], 1000, 'tax_not_configured'])
  })

  it('refuses yen with decimals with 400 naming the field; a percentage keeps its 2 decimals', async () => {
    const cases: [string, unknown, string][] = [
      [
        `${SUB}/plans`,
        {
          plan: {
            sku: 'yen-half',
            name: 'Half',
            price: 1000.5,
            plan_family: 'core',
            period_unit: 'month',
            features: [],
          },
        },
        'body/plan/price',
      ],
      [`${SUB}/addons`, { name: 'Cents', price: 9.99, period_unit: 'month' }, 'body/price'],
      [
        `${SUB}/coupons`,
        { code: 'YENHALF', name: 'Half a yen', discount_type: 'fixed_amount', discount_value: 100.5 },
        'body/discount_value',
      ],
      [
        `${SUB}/coupons`,
        { code: 'PCT3', name: 'Three decimals', discount_type: 'percentage', discount_value: 12.555 },
        'body/discount_value',
      ],
    ]
    for (const [url, body, field] of cases) {
      const res = await call(t, { method: 'POST', url, body })
      assert.equal(res.statusCode, 400, `${url} ${JSON.stringify(body)}: ${res.body}`)
      assert.equal(res.json().code, 'validation_failed')
      assert.ok(res.json().errors.includes(field), `"${res.json().errors}" names ${field}`)
    }
    const res = await call(t, {
      method: 'POST',
      url: `${SUB}/plans`,
      body: {
        plan: { sku: 'yen-half', name: 'Half', price: 1000.5, plan_family: 'core', period_unit: 'month', features: [] },
      },
    })
    assert.match(res.json().errors, /JPY has no decimals/)
  })
})

onEachEngine('KWD (three decimals)', { CURRENCY_CODE: 'KWD' }, (t) => {
  it('keeps three decimals: 12.345 KWD is 12345 fils, a fourth decimal is a 400', async () => {
    const c = await billedCompany(t, {
      plans: { basic: { price: 12.345 } },
      company: { country: 'IT', timezone: 'Europe/Rome' },
    })
    assert.equal((await json(t, 200, { url: `${SUB}/plans/by_sku/${c.planSku}`, token: null })).plan.price, 12.345)
    // 12345 fils; Italian VAT 22 % = 2715.9 → 2716 fils; 15061.
    const invoice = (
      await estimate(t, c.id, {
        company_id: c.id,
        product_sku: c.productSku,
        subscription_plan: c.planSku,
        plan_quantity: '1',
      })
    ).json().estimate.invoice_estimate
    assert.deepEqual(
      [invoice.sub_total, invoice.taxes[0].amount, invoice.total, invoice.currency_code],
      [12345, 2716, 15061, 'KWD'],
    )
    const res = await call(t, {
      method: 'POST',
      url: `${SUB}/addons`,
      body: { name: 'Too fine', price: 1.2345, period_unit: 'month' },
    })
    assert.equal(res.statusCode, 400, res.body)
    assert.match(res.json().errors, /body\/price must have at most 3 decimals \(KWD\)/)
  })
})

describe('tax and currency settings', () => {
  it('stop the start with a sentence naming the setting', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ SELLER_COUNTRY: 'XX' }, /SELLER_COUNTRY XX is not an ISO 3166-1 alpha-2 country code/],
      [{ SELLER_COUNTRY: 'it' }, /SELLER_COUNTRY/],
      [{ CURRENCY_CODE: 'XYZ' }, /CURRENCY_CODE XYZ is not an ISO 4217 currency code/],
      [{ CURRENCY_CODE: 'eur' }, /CURRENCY_CODE/],
      [{ VAT_RATES: 'IT:22%' }, /VAT_RATES entry "IT:22%"/],
      [{ VAT_RATES: 'IT:100' }, /VAT_RATES entry "IT:100"/],
    ]
    for (const [env, message] of cases) assert.throws(() => loadConfig(env), message, JSON.stringify(env))
    const ok = loadConfig({ SELLER_COUNTRY: 'DE', CURRENCY_CODE: 'JPY', VAT_RATES: 'DE:19,CH:8.1' })
    assert.deepEqual([ok.SELLER_COUNTRY, ok.CURRENCY_CODE], ['DE', 'JPY'])
    assert.deepEqual(
      [loadConfig({}).SELLER_COUNTRY, loadConfig({}).CURRENCY_CODE, loadConfig({}).VAT_RATES],
      ['IT', 'EUR', ''],
    )
  })
})
