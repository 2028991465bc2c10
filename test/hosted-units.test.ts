import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { brandOf, luhnValid } from '../src/modules/billing/index.ts'
import { readCard } from '../src/modules/hosted/hosted.card.ts'
import { csrfRefusal, csrfFor } from '../src/modules/hosted/hosted.csrf.ts'
import { localeOf, translator } from '../src/modules/hosted/hosted.i18n.ts'
import { invoiceDocument } from '../src/modules/hosted/hosted.invoice.ts'
import { loadConfig } from '../src/config.ts'
import { checkRedirectUrl, parseAllowedHosts } from '../src/modules/hosted/hosted.redirect.ts'

/** The pure parts of the hosted pages: card checks, language choice, redirect allow-list, CSRF. */
describe('hosted pages, pure parts', () => {
  it('checks card numbers with Luhn and reads the brand from the leading digits', () => {
    for (const n of [
      '4242424242424242',
      '4111111111111111',
      '5555555555554444',
      '378282246310005',
      '6011111111111117',
      '2223003122003222',
    ])
      assert.ok(luhnValid(n), n)
    for (const n of ['4242424242424241', '4111111111111112', '1234567812345678']) assert.ok(!luhnValid(n), n)
    assert.deepEqual(
      ['4242', '5555', '2223', '3782', '6011', '3530', '9999'].map((p) => brandOf(p.padEnd(16, '0'))),
      ['visa', 'mastercard', 'mastercard', 'american_express', 'discover', 'jcb', 'card'],
    )
  })

  it('keeps only brand, last 4 digits, expiry and test behaviour; refuses a past month, a bad month, a short number', () => {
    const now = new Date('2026-11-25T10:00:00Z')
    assert.deepEqual(readCard({ number: '4242-4242 4242 4242', expiry_month: '11', expiry_year: '26' }, now), {
      card: { brand: 'visa', last4: '4242', expiry_month: 11, expiry_year: 2026, test_behaviour: 'succeeds' },
    })
    // Test cards: charges fail (kept with that behaviour), declined on entry (not kept).
    assert.deepEqual(readCard({ number: '4000 0000 0000 0341', expiry_month: '11', expiry_year: '26' }, now), {
      card: { brand: 'visa', last4: '0341', expiry_month: 11, expiry_year: 2026, test_behaviour: 'charge_fails' },
    })
    assert.deepEqual(readCard({ number: '4000000000000002', expiry_month: '11', expiry_year: '26' }, now), {
      problem: 'declined',
    })
    assert.deepEqual(readCard({ number: '4242424242424242', expiry_month: '10', expiry_year: '2026' }, now), {
      problem: 'expiry',
    })
    assert.deepEqual(readCard({ number: '4242424242424242', expiry_month: '13', expiry_year: '2030' }, now), {
      problem: 'expiry',
    })
    assert.deepEqual(readCard({ number: '42424242424', expiry_month: '1', expiry_year: '2030' }, now), {
      problem: 'number',
    })
    assert.deepEqual(readCard({ number: '4242x4242424242424', expiry_month: '1', expiry_year: '2030' }, now), {
      problem: 'number',
    })
  })

  it('chooses Italian or English by the highest q-value, English by default', () => {
    assert.equal(localeOf(undefined), 'en')
    assert.equal(localeOf('it-IT,it;q=0.9,en;q=0.8'), 'it')
    assert.equal(localeOf('en-US,it;q=0.9'), 'en')
    assert.equal(localeOf('de-DE, it;q=0.3, en;q=0.2'), 'it')
    assert.equal(localeOf('it;q=0'), 'en')
    assert.equal(localeOf('fr'), 'en')
  })

  it('allows exact hosts only, https or loopback http', () => {
    const allowed = parseAllowedHosts(' App.Example.com , localhost')
    assert.equal(checkRedirectUrl('https://app.example.com/x?y=1#z', allowed), 'https://app.example.com/x?y=1#z')
    assert.equal(checkRedirectUrl('http://localhost:5173/', allowed), 'http://localhost:5173/')
    for (const bad of [
      'https://sub.app.example.com/',
      'https://app.example.com:443@evil.example/',
      'https://app.example.com%2eevil.example/',
      'HTTPS://evil.example',
      'https://app.example.com/%00',
      'https://app.example.com/\t',
    ]) {
      assert.throws(
        () => checkRedirectUrl(bad, allowed),
        (err: Error) => !err.message.includes('evil'),
        bad,
      )
    }
  })

  it('accepts a form only with its token, its cookie and this origin', () => {
    const token = 'A'.repeat(43)
    const csrf = csrfFor(token)
    const ok = { host: '127.0.0.1:8080', field: csrf, cookie: `other=1; hosted_csrf=${csrf}` }
    assert.equal(csrfRefusal(token, ok, undefined), null)
    assert.equal(
      csrfRefusal(token, { ...ok, origin: 'http://127.0.0.1:8080', secFetchSite: 'same-origin' }, undefined),
      null,
    )
    assert.equal(csrfRefusal(token, { ...ok, origin: 'https://pay.example.com' }, 'https://pay.example.com/'), null)
    assert.equal(csrfRefusal(token, { ...ok, origin: 'null', secFetchSite: 'same-origin' }, undefined), null)
    assert.notEqual(csrfRefusal(token, { ...ok, origin: 'null' }, undefined), null)
    assert.notEqual(csrfRefusal(token, { ...ok, secFetchSite: 'same-site' }, undefined), null)
    assert.notEqual(csrfRefusal(token, { ...ok, origin: 'http://127.0.0.1:9090' }, undefined), null)
    // Another scheme's origin is opaque ('null'), as the host's would be under that scheme.
    assert.notEqual(csrfRefusal(token, { ...ok, origin: 'foo://evil' }, undefined), null)
    assert.notEqual(csrfRefusal(token, { ...ok, field: csrfFor('B'.repeat(43)) }, undefined), null)
    assert.notEqual(csrfRefusal(token, { ...ok, cookie: undefined }, undefined), null)
  })

  it("writes an invoice's amounts with its currency's decimals (JPY 0, KWD 3) and its rate, discount and taxable amount per language", () => {
    const seller = { name: 'Seller', address: '', country: 'IT', vatNumber: '' }
    const buyer = {
      name: 'Buyer',
      address: null,
      city: null,
      province: null,
      zip: null,
      country: 'CH',
      vat: null,
      vat_number: null,
      fiscal_code: null,
    } as never
    const line = {
      entity_type: 'plan' as const,
      entity_id: 'p',
      description: 'Plan',
      unit_amount: 1000,
      quantity: 3,
      amount: 3000,
    }
    const invoice = (currency: string, minor: (n: number) => number) => ({
      id: '6f1c2f0e-7a51-4d55-9b1e-0c2a3e4b5d6f',
      subscription_id: '0b8f6c1a-3d2e-4f5a-8b9c-1d2e3f4a5b6c',
      status: 'payment_due' as const,
      date: 1801440000,
      due_date: 1801440000,
      period_start: 1801440000,
      period_end: 1804118400,
      line_items: [{ ...line, unit_amount: minor(1000), amount: minor(3000) }],
      discounts: [{ description: 'Promo (P10)', amount: minor(300) }],
      sub_total: minor(3000),
      taxes: [{ name: 'CH VAT', rate: 8.1, amount: minor(219) }],
      total: minor(2919),
      credits_applied: 0,
      amount_paid: 0,
      amount_adjusted: 0,
      write_off_amount: 0,
      amount_due: minor(2919),
      currency_code: currency,
      paid_at: null,
      dunning_status: 'in_progress' as const,
      attempt_count: 1,
      next_retry_at: 1801526400,
      recorded_payments: [],
      voided_at: null,
      void_reason_code: null,
      comments: [],
      amount_refunded: 0,
    })
    const render = (locale: 'en' | 'it', currency: string, minor: (n: number) => number) =>
      invoiceDocument({ locale, t: translator(locale), seller, portal: null }, invoice(currency, minor), buyer)
        .replace(/<[^>]*>/g, ' ')
        .replace(/\s+/g, ' ')
    const yen = render('en', 'JPY', (n) => n)
    assert.match(yen, /Plan 3 JP¥1,000 8\.1% JP¥3,000/)
    assert.match(
      yen,
      /Subtotal JP¥3,000 Discount: Promo \(P10\) -JP¥300 Taxable amount JP¥2,700 VAT CH 8\.1% on JP¥2,700 JP¥219 Total JP¥2,919 Amount due JP¥2,919/,
    )
    assert.match(yen, /Payment due: the card will be charged again on 2 February 2027/)
    assert.match(yen, /Switzerland/)
    const dinar = render('it', 'KWD', (n) => n * 10)
    assert.match(dinar, /Imponibile 27,000 KWD IVA CH 8,1% su 27,000 KWD 2,190 KWD Totale 29,190 KWD/)
    assert.match(dinar, /Svizzera/)
    assert.match(dinar, /In attesa di pagamento: la carta sarà addebitata di nuovo il 2 febbraio 2027/)

    // A provider's invoice settled by credits, an adjustment and a write-off: each its own row, none as credits.
    const settled = {
      ...invoice('EUR', (n) => n),
      status: 'paid' as const,
      credits_applied: 1000,
      amount_adjusted: 200,
      write_off_amount: 1719,
      amount_due: 0,
    }
    const page = invoiceDocument({ locale: 'en', t: translator('en'), seller, portal: null }, settled, buyer)
      .replace(/<[^>]*>/g, ' ')
      .replace(/\s+/g, ' ')
    assert.match(
      page,
      /Total €29\.19 Credits applied -€10\.00 Adjustments -€2\.00 Written off -€17\.19 Amount due €0\.00/,
    )
  })

  it("takes the seller's VAT number with its country prefix, or none; anything else stops the start", () => {
    assert.equal(loadConfig({ SELLER_VAT_NUMBER: 'IT01234567890' }).SELLER_VAT_NUMBER, 'IT01234567890')
    assert.equal(loadConfig({}).SELLER_VAT_NUMBER, '')
    for (const bad of ['01234567890', 'it01234567890', 'IT 0123', 'IT<b>'])
      assert.throws(
        () => loadConfig({ SELLER_VAT_NUMBER: bad }),
        /^Error: Invalid configuration: SELLER_VAT_NUMBER must match pattern/,
        bad,
      )
  })
})
