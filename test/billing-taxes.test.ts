import { it } from 'node:test'
import assert from 'node:assert/strict'
import { addon, billedCompany, call, coupon, estimate, json } from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Taxes of the local engine (decisions §8.4; docs/billing.md, "Taxes and currencies"), through
 * the estimate (9) of a new subscription: a full term, no proration, so every figure below is
 * the price times the quantity, then the VAT of each line rounded half-up to the cent.
 *
 * Chargebee's rules these follow (Chargebee support, "Can I configure taxes for both B2B and
 * B2C?"): a consumer is taxed by country; a business with a VAT number in another EU country
 * is not taxed (0 %, reverse charge); a business in the seller's own country is taxed. Tax and
 * line amounts are each rounded to the currency's precision (Chargebee docs, "What is the
 * rounding logic for line item amounts?"), so tax is per line, not on the invoice's sum.
 */
const SELLER_IT = {} // SELLER_COUNTRY defaults to IT

onEachEngine('taxes', SELLER_IT, (t) => {
  const invoiceOf = async (
    company: Record<string, unknown>,
    options: { price?: number; quantity?: number; addons?: (c: string) => Promise<string[]>; coupon?: string } = {},
  ) => {
    const c = await billedCompany(t, { plans: { basic: { price: options.price ?? 29.9 } }, company })
    const addons = options.addons ? await options.addons(c.id) : []
    const res = await estimate(t, c.subscriptionId, {
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.planSku,
      plan_quantity: String(options.quantity ?? 5),
      ...(addons.length ? { addons } : {}),
      ...(options.coupon ? { coupon_code: options.coupon } : {}),
    })
    assert.equal(res.statusCode, 200, res.body)
    return { c, invoice: res.json().estimate.invoice_estimate }
  }

  it('taxes consumers of every EU country, CH, NO and GB by the table (NL, BE and PL had none)', async () => {
    // 29.90 × 5 = 149.50 on one line; the tax is 149.50 × rate, rounded half-up to the cent.
    const cases: [string, string, number, number][] = [
      ['NL', 'Europe/Amsterdam', 21, 3140], // 31.395 → 31.40
      ['BE', 'Europe/Brussels', 21, 3140],
      ['PL', 'Europe/Warsaw', 23, 3439], //    34.385 → 34.39
      ['FI', 'Europe/Helsinki', 25.5, 3812], // 38.1225 → 38.12
      ['EE', 'Europe/Tallinn', 24, 3588], //   35.88
      ['RO', 'Europe/Bucharest', 21, 3140],
      ['SK', 'Europe/Bratislava', 23, 3439],
      ['HU', 'Europe/Budapest', 27, 4037], //  40.365 → 40.37
      ['LU', 'Europe/Luxembourg', 17, 2542], // 25.415 → 25.42
      ['CH', 'Europe/Zurich', 8.1, 1211], //   12.1095 → 12.11
      ['NO', 'Europe/Oslo', 25, 3738], //      37.375 → 37.38
      ['GB', 'Europe/London', 20, 2990],
    ]
    for (const [country, timezone, rate, tax] of cases) {
      const { invoice } = await invoiceOf({ country, timezone })
      assert.deepEqual(
        [invoice.sub_total, invoice.taxes, invoice.total],
        [14950, [{ name: `${country} VAT`, rate, amount: tax }], 14950 + tax],
        country,
      )
      assert.equal(invoice.line_items[0].tax_exempt_reason, undefined, country)
    }
  })

  it('rounds the tax of each line: 10.02 + 10.02 at 22 % is 2.20 + 2.20 = 4.40, not 4.41', async () => {
    // The figure: 10.02 × 22 % = 2.2044 → 2.20 on each line; 22 % of the sum 20.04 would be 4.4088 → 4.41.
    const { invoice } = await invoiceOf(
      { country: 'IT', timezone: 'Europe/Rome' },
      { price: 10.02, quantity: 1, addons: async () => [await addon(t, { name: 'Badge', price: 10.02 })] },
    )
    assert.deepEqual(
      invoice.line_items.map((l: { amount: number }) => l.amount),
      [1002, 1002],
    )
    assert.deepEqual(
      [invoice.sub_total, invoice.taxes, invoice.total, invoice.amount_due],
      [2004, [{ name: 'IT VAT', rate: 22, amount: 440 }], 2444, 2444],
    )

    // With a coupon on the invoice amount, its share of each line is taken off before that
    // line's tax: 10 % of 20.04 = 2.004 → 2.00, 1.00 per line; (10.02 − 1.00) × 22 % = 1.9844
    // → 1.98 per line, 3.96 in all; on the discounted sum 18.04 × 22 % = 3.9688 would be 3.97.
    const ten = await coupon(t, { name: 'Ten', discount_value: 10 })
    const discounted = (
      await invoiceOf(
        { country: 'IT', timezone: 'Europe/Rome' },
        {
          price: 10.02,
          quantity: 1,
          coupon: ten,
          addons: async () => [await addon(t, { name: 'Badge', price: 10.02 })],
        },
      )
    ).invoice
    assert.deepEqual(
      [discounted.sub_total, discounted.discounts[0].amount, discounted.taxes[0].amount, discounted.total],
      [2004, 200, 396, 2200],
    )
  })

  it('reverse-charges a business with a valid VAT number in another EU country: rate 0, the line named "Reverse charge"', async () => {
    // A German company with a VAT number a platform client marked valid, the seller in Italy: no VAT, 149.50 due (19 % would be 28.41).
    const { c, invoice } = await invoiceOf({
      country: 'DE',
      timezone: 'Europe/Berlin',
      vat_number: 'de 123.456-789',
      vat_number_status: 'valid',
    })
    assert.deepEqual(
      [invoice.sub_total, invoice.taxes, invoice.total, invoice.amount_due],
      [14950, [{ name: 'Reverse charge', rate: 0, amount: 0 }], 14950, 14950],
    )
    assert.deepEqual(
      invoice.line_items.map((l: { tax_exempt_reason?: string }) => l.tax_exempt_reason),
      ['reverse_charge'],
    )
    // Stored as normalised, and read back so.
    assert.equal((await json(t, 200, { url: `/api/v1/companies/${c.id}` })).vat_number, 'DE123456789')

    // The same company without a VAT number is a consumer: German VAT, 149.50 × 19 % = 28.405 → 28.41.
    const consumer = (await invoiceOf({ country: 'DE', timezone: 'Europe/Berlin' })).invoice
    assert.deepEqual(consumer.taxes, [{ name: 'DE VAT', rate: 19, amount: 2841 }])
    assert.equal((await json(t, 200, { url: `/api/v1/companies/${(await billedCompany(t)).id}` })).vat_number, null)

    // Greece's VAT numbers carry EL, its country code is GR: reverse-charged as well.
    const greek = (
      await invoiceOf({
        country: 'GR',
        timezone: 'Europe/Athens',
        vat_number: 'EL094259216',
        vat_number_status: 'valid',
      })
    ).invoice
    assert.deepEqual(greek.taxes, [{ name: 'Reverse charge', rate: 0, amount: 0 }])
  })

  it("still taxes a business with a VAT number in the seller's own country", async () => {
    // Italian seller, Italian business: a domestic sale, 149.50 × 22 % = 32.89.
    const { invoice } = await invoiceOf({
      country: 'IT',
      timezone: 'Europe/Rome',
      vat_number: 'IT01234567890',
      vat_number_status: 'valid',
    })
    assert.deepEqual([invoice.taxes, invoice.total], [[{ name: 'IT VAT', rate: 22, amount: 3289 }], 18239])
    assert.equal(invoice.line_items[0].tax_exempt_reason, undefined)
  })

  it('outside the EU: CH, NO and GB businesses are reverse-charged, other countries are exports without a tax line', async () => {
    const swiss = (
      await invoiceOf({
        country: 'CH',
        timezone: 'Europe/Zurich',
        vat_number: 'CHE-123.456.789',
        vat_number_status: 'valid',
      })
    ).invoice
    assert.deepEqual([swiss.taxes, swiss.total], [[{ name: 'Reverse charge', rate: 0, amount: 0 }], 14950])
    const british = (
      await invoiceOf({
        country: 'GB',
        timezone: 'Europe/London',
        vat_number: 'GB123456789',
        vat_number_status: 'valid',
      })
    ).invoice
    assert.deepEqual(british.taxes, [{ name: 'Reverse charge', rate: 0, amount: 0 }])
    // A US customer, business or not: no VAT, no tax line, each line marked as an export.
    for (const vat_number of [undefined, 'US123456789']) {
      const us = (
        await invoiceOf({
          country: 'US',
          timezone: 'America/New_York',
          vat_number,
          ...(vat_number ? { vat_number_status: 'valid' } : {}),
        })
      ).invoice
      assert.deepEqual(
        [us.taxes, us.total, us.line_items.map((l: { tax_exempt_reason?: string }) => l.tax_exempt_reason)],
        [[], 14950, ['export']],
      )
    }
  })

  it('refuses a malformed vat_number with 400 naming the field', async () => {
    const setup = await billedCompany(t)
    const body = (vat_number: unknown) => ({
      name: 'Acme',
      country: 'DE',
      timezone: 'Europe/Berlin',
      product_sku: setup.productSku,
      subscription_plan: setup.planSku,
      vat_number,
    })
    for (const bad of ['DE1', '123456789', 'D1234567', 'DE12345678901234', 'DE 123/456', 'x'.repeat(31), 123, true]) {
      const res = await call(t, { method: 'POST', url: '/api/v1/companies', body: body(bad) })
      assert.equal(res.statusCode, 400, `${JSON.stringify(bad)}: ${res.body}`)
      assert.equal(res.json().code, 'validation_failed')
      assert.match(res.json().errors, /body\/vat_number/, JSON.stringify(bad))
    }
    // Null and an empty string mean none.
    for (const none of [null, '', '  ']) {
      const res = await call(t, { method: 'POST', url: '/api/v1/companies', body: body(none) })
      assert.equal(res.statusCode, 202, res.body)
      assert.equal((await json(t, 200, { url: String(res.headers.location) })).vat_number, null)
    }
  })
})

onEachEngine('taxes with SELLER_COUNTRY=DE', { SELLER_COUNTRY: 'DE', VAT_RATES: 'DE:7' }, (t) => {
  it("reverse-charges by the seller's country, and VAT_RATES overrides the table", async () => {
    const query = (c: Awaited<ReturnType<typeof billedCompany>>) => ({
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.planSku,
      plan_quantity: '5',
    })
    // A German business, the seller in Germany: taxed at VAT_RATES' 7 % (not the table's 19): 149.50 × 7 % = 10.465 → 10.47.
    const german = await billedCompany(t, {
      company: { country: 'DE', timezone: 'Europe/Berlin', vat_number: 'DE123456789', vat_number_status: 'valid' },
    })
    assert.deepEqual((await estimate(t, german.id, query(german))).json().estimate.invoice_estimate.taxes, [
      { name: 'DE VAT', rate: 7, amount: 1047 },
    ])
    // An Italian business is now abroad: reverse charge.
    const italian = await billedCompany(t, {
      company: { country: 'IT', timezone: 'Europe/Rome', vat_number: 'IT01234567890', vat_number_status: 'valid' },
    })
    assert.deepEqual((await estimate(t, italian.id, query(italian))).json().estimate.invoice_estimate.taxes, [
      { name: 'Reverse charge', rate: 0, amount: 0 },
    ])
  })
})
