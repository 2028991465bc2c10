import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import {
  SUB,
  at,
  billedCompany,
  call,
  detailsOf,
  json,
  moveTo,
  setCard,
  unix,
  update,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * The local engine's ledger through HTTP (decisions §8.4): invoices of trial conversions,
 * renewals and changes; credit notes; the customer's credits carried to the next invoices.
 *
 * Chargebee's rules the figures follow (chargebee.com/docs, "Credit Notes" and "Proration"):
 * a change to a subscription of lesser value with proration creates a credit note for the
 * unused part of the current charges; refundable credits are kept by the customer and applied
 * automatically to its next invoices. Prorated amounts are the price × (time left / term).
 */
const invoicesOf = (t: TestApp, c: BillingFixture) => json(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
const creditNotesOf = (t: TestApp, c: BillingFixture) =>
  json(t, 200, { url: `${SUB}/${c.id}/credit_notes`, token: c.token })
const money = (i: any) => ({
  total: i.total,
  credits_applied: i.credits_applied,
  amount_paid: i.amount_paid,
  amount_due: i.amount_due,
  status: i.status,
})

onEachEngine('invoices and credits', { TEST_CLOCK_ENABLED: true, CURRENCY_CODE: 'USD' }, (t) => {
  it("credits the unused part with the tax it was billed with, not the customer's tax of today", async () => {
    // A German business with a valid VAT number (seller IT): the April term, 30.00, is reverse-charged (0 %).
    const c = await billedCompany(t, {
      start: '2027-03-02T00:00:00.000Z',
      plans: { gold: { price: 30, features: ['stamping'] }, silver: { price: 15, features: ['stamping'] } },
      company: {
        plan_quantity: 1,
        country: 'DE',
        timezone: 'Europe/Berlin',
        vat_number: 'DE123456789',
        vat_number_status: 'valid',
      },
    })
    await setCard(t, c.id)
    await at(t, '2027-04-01T00:00:00.000Z')
    const [activation] = await invoicesOf(t, c)
    assert.deepEqual([activation.total, activation.taxes.map((x: any) => x.rate)], [3000, [0]])
    // The VAT number is removed mid-term: from now on the company pays German VAT (19 %).
    assert.equal(
      (await call(t, { method: 'PATCH', url: `/api/v1/companies/${c.id}`, body: { vat_number: null } })).statusCode,
      202,
    )
    // Apr 16, 15 of 30 days left: the unused Gold is 30.00 × 15/30 = 15.00 as billed (0 % VAT), not
    // 15.00 + 19 % = 17.85. Silver for the rest: 15.00 × 15/30 = 7.50 + 19 % (1.425 → 1.43) = 8.93,
    // paid from the credit; 15.00 − 8.93 = 6.07 kept.
    await moveTo(t, '2027-04-16T00:00:00.000Z')
    const changed = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.silver }, c.token)
    assert.equal(changed.statusCode, 200, changed.body)
    const [note] = await creditNotesOf(t, c)
    assert.equal(note.total, 1500)
    const [change] = await invoicesOf(t, c)
    assert.deepEqual(
      [change.total, change.taxes.map((x: any) => x.rate), change.credits_applied, change.amount_due],
      [893, [19], 893, 0],
    )
    assert.equal(changed.json().customer.refundable_credits, 607)
  })

  it('Gold $30 → Silver $15 with 26 of 30 days left: 13.00 kept as credit, the renewal is 2.00 due', async () => {
    // A US customer (no VAT) on Gold × 1. The trial ends Apr 1; the first term is Apr 1 → May 1, 30 days.
    const c = await billedCompany(t, {
      start: '2027-03-02T00:00:00.000Z',
      plans: { gold: { price: 30, features: ['stamping'] }, silver: { price: 15, features: ['stamping'] } },
      company: { plan_quantity: 1, country: 'US', timezone: 'America/New_York' },
    })
    await setCard(t, c.id)
    await at(t, '2027-04-01T00:00:00.000Z')
    const [activation] = await invoicesOf(t, c)
    assert.deepEqual(money(activation), {
      total: 3000,
      credits_applied: 0,
      amount_paid: 3000,
      amount_due: 0,
      status: 'paid',
    })
    assert.deepEqual(
      [activation.date, activation.period_start, activation.period_end, activation.paid_at, activation.currency_code],
      [
        unix('2027-04-01T00:00:00Z'),
        unix('2027-04-01T00:00:00Z'),
        unix('2027-05-01T00:00:00Z'),
        unix('2027-04-01T00:00:00Z'),
        'USD',
      ],
    )

    // Apr 5: 26 of 30 days left. Unused Gold: 30.00 × 26/30 = 26.00 (a credit note). Silver for
    // the rest of the term: 15.00 × 26/30 = 13.00, paid from that credit: 0.00 due, 13.00 kept.
    await moveTo(t, '2027-04-05T00:00:00.000Z')
    const changed = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.silver }, c.token)
    assert.equal(changed.statusCode, 200, changed.body)
    const applied = changed.json().estimate.invoice_estimate
    assert.deepEqual([applied.total, applied.credits_applied, applied.amount_due], [1300, 1300, 0])
    assert.deepEqual(changed.json().customer.refundable_credits, 1300)
    const [change] = await invoicesOf(t, c)
    assert.deepEqual(money(change), {
      total: 1300,
      credits_applied: 1300,
      amount_paid: 0,
      amount_due: 0,
      status: 'paid',
    })
    assert.deepEqual(
      [change.period_start, change.period_end, change.line_items[0].amount],
      [unix('2027-04-05T00:00:00Z'), unix('2027-05-01T00:00:00Z'), 1300],
    )
    const [note] = await creditNotesOf(t, c)
    assert.deepEqual(note, {
      id: note.id,
      subscription_id: c.subscriptionId,
      reference_invoice_id: activation.id,
      type: 'refundable',
      status: 'refund_due',
      reason_code: 'subscription_change',
      description: null,
      line_items: [{ ...activation.line_items[0], amount: 2600 }],
      discounts: [],
      sub_total: 2600,
      taxes: [],
      total: 2600,
      amount_allocated: 1300,
      amount_refunded: 0,
      amount_available: 1300,
      refunds: [],
      currency_code: 'USD',
      date: unix('2027-04-05T00:00:00Z'),
    })
    const customer = (await detailsOf(t, c)).customer
    assert.deepEqual(
      [customer.promotional_credits, customer.refundable_credits, customer.excess_payments],
      [0, 1300, 0],
    )

    // The renewal: Silver 15.00 − 13.00 of credits = 2.00 charged to the card.
    await at(t, '2027-05-01T00:00:00.000Z')
    const [renewal] = await invoicesOf(t, c)
    assert.deepEqual(money(renewal), {
      total: 1500,
      credits_applied: 1300,
      amount_paid: 200,
      amount_due: 0,
      status: 'paid',
    })
    assert.deepEqual((await creditNotesOf(t, c))[0].amount_available, 0)
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 0)
    // Money in = what the periods cost: 30.00 (Apr 1–5 used 4.00 of Gold, 26.00 credited) + 0 + 2.00 paid
    // = Gold 4 days (4.00) + Silver 26 days (13.00) + Silver May (15.00) = 32.00.
    assert.equal(
      (await invoicesOf(t, c)).reduce((sum: number, i: any) => sum + i.amount_paid, 0),
      3200,
    )
  })

  it("Chargebee's upgrade example, $30 → $100 with 15 of 30 days left: 35.00 charged now", async () => {
    // New plan for the time left: 100.00 × 15/30 = 50.00; unused old plan: 30.00 × 15/30 = 15.00
    // credited (a credit note used whole); 35.00 due, charged to the card.
    const c = await billedCompany(t, {
      start: '2027-03-02T00:00:00.000Z',
      plans: { gold: { price: 30, features: [] }, platinum: { price: 100, features: [] } },
      company: { plan_quantity: 1, country: 'US', timezone: 'America/New_York' },
    })
    await setCard(t, c.id)
    await at(t, '2027-04-01T00:00:00.000Z')
    await moveTo(t, '2027-04-16T00:00:00.000Z')
    assert.equal(
      (await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.platinum }, c.token)).statusCode,
      200,
    )
    assert.deepEqual(money((await invoicesOf(t, c))[0]), {
      total: 5000,
      credits_applied: 1500,
      amount_paid: 3500,
      amount_due: 0,
      status: 'paid',
    })
    const [note] = await creditNotesOf(t, c)
    assert.deepEqual([note.total, note.amount_allocated, note.amount_available], [1500, 1500, 0])
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 0)
  })

  it('yearly €300 → monthly €30 ten days into a leap year keeps the €319.40 and spends it on the next invoices', async () => {
    // An Italian customer (22 % VAT) on a yearly plan; its first term is 2028-01-01 → 2029-01-01, 366 days.
    const c = await billedCompany(t, {
      start: '2027-12-02T00:00:00.000Z',
      plans: { yearly: { price: 300, period_unit: 'year', features: [] }, monthly: { price: 30, features: [] } },
      company: { plan_quantity: 1 },
    })
    await setCard(t, c.id)
    await at(t, '2028-01-01T00:00:00.000Z')
    assert.deepEqual(money((await invoicesOf(t, c))[0]), {
      total: 36600,
      credits_applied: 0,
      amount_paid: 36600,
      amount_due: 0,
      status: 'paid',
    })

    // Jan 11: 356 of 366 days left. Unused: 300.00 × 356/366 = 291.803 → 291.80, VAT 22 % 64.196 →
    // 64.20: 356.00 credited. Another period starts a new term now, billed whole: 30.00 + 6.60 = 36.60,
    // paid from the credit. Kept: 356.00 − 36.60 = 319.40 (lost before this ledger).
    await moveTo(t, '2028-01-11T00:00:00.000Z')
    const changed = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.monthly }, c.token)
    assert.equal(changed.statusCode, 200, changed.body)
    assert.equal(changed.json().customer.refundable_credits, 31940)
    const [note] = await creditNotesOf(t, c)
    assert.deepEqual([note.total, note.amount_allocated, note.amount_available], [35600, 3660, 31940])
    assert.deepEqual(money((await invoicesOf(t, c))[0]), {
      total: 3660,
      credits_applied: 3660,
      amount_paid: 0,
      amount_due: 0,
      status: 'paid',
    })

    // Each monthly renewal (36.60) is paid from the credit: 319.40 → 282.80 → 246.20.
    await at(t, '2028-02-11T00:00:00.000Z')
    await at(t, '2028-03-11T00:00:00.000Z')
    const list = await invoicesOf(t, c)
    assert.deepEqual(list.slice(0, 2).map(money), [
      { total: 3660, credits_applied: 3660, amount_paid: 0, amount_due: 0, status: 'paid' },
      { total: 3660, credits_applied: 3660, amount_paid: 0, amount_due: 0, status: 'paid' },
    ])
    assert.deepEqual(
      list.map((i: any) => i.date),
      [
        unix('2028-03-11T00:00:00Z'),
        unix('2028-02-11T00:00:00Z'),
        unix('2028-01-11T00:00:00Z'),
        unix('2028-01-01T00:00:00Z'),
      ],
    )
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 24620)
  })

  it('a year with a leap day: the term holding Feb 29 has 366 days, and one anchored on Feb 29 comes back to it four years on', async () => {
    // A US customer (no tax) on a yearly $366 plan: $1 a day in 2028. First term 2028-01-01 → 2029-01-01, 366 days.
    const c = await billedCompany(t, {
      start: '2027-12-02T00:00:00.000Z',
      plans: {
        day: { price: 366, period_unit: 'year', features: [] },
        twoDays: { price: 732, period_unit: 'year', features: [] },
      },
      company: { plan_quantity: 1, country: 'US', timezone: 'America/New_York' },
    })
    await setCard(t, c.id)
    await at(t, '2028-01-01T00:00:00.000Z')
    // On the leap day, 307 of 366 days are left (Feb 29 itself, then March to December): unused
    // 366.00 × 307/366 = 307.00 credited; the $732 plan for them, 732.00 × 307/366 = 614.00; 307.00 due.
    await moveTo(t, '2028-02-29T00:00:00.000Z')
    const changed = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.twoDays }, c.token)
    assert.equal(changed.statusCode, 200, changed.body)
    assert.deepEqual(money((await invoicesOf(t, c))[0]), {
      total: 61400,
      credits_applied: 30700,
      amount_paid: 30700,
      amount_due: 0,
      status: 'paid',
    })
    assert.equal((await creditNotesOf(t, c))[0].total, 30700)
    await at(t, '2029-01-01T00:00:00.000Z')
    // Paid: 366 + 307 + 732 = 1405.00 = 59 days at $1 + 307 days at $2 + the 2029 term.
    assert.equal(
      (await invoicesOf(t, c)).reduce((sum: number, i: any) => sum + i.amount_paid, 0),
      140500,
    )

    // A term starting on Feb 29 ends on Feb 28 in common years and on Feb 29 again in 2032; one
    // advance of the test clock runs the three renewals on the way.
    const leap = await billedCompany(t, {
      start: '2028-01-30T00:00:00.000Z',
      plans: { day: { price: 366, period_unit: 'year', features: [] } },
      company: { plan_quantity: 1, country: 'US', timezone: 'America/New_York' },
    })
    await setCard(t, leap.id)
    await at(t, '2031-03-01T00:00:00.000Z')
    const terms = (await invoicesOf(t, leap)).map((i: any) => [i.period_start, i.period_end, i.total])
    assert.deepEqual(terms, [
      [unix('2031-02-28T00:00:00Z'), unix('2032-02-29T00:00:00Z'), 36600],
      [unix('2030-02-28T00:00:00Z'), unix('2031-02-28T00:00:00Z'), 36600],
      [unix('2029-02-28T00:00:00Z'), unix('2030-02-28T00:00:00Z'), 36600],
      [unix('2028-02-29T00:00:00Z'), unix('2029-02-28T00:00:00Z'), 36600],
    ])
  })

  it('lists newest first, a page at a time with Link rel="next"; a foreign cursor is 400', async () => {
    const c = await billedCompany(t, { start: '2029-01-01T00:00:00.000Z', company: { plan_quantity: 1 } })
    await setCard(t, c.id)
    for (const day of ['2029-01-31', '2029-02-28', '2029-03-31', '2029-04-30']) await at(t, `${day}T00:00:00.000Z`)
    const all = await invoicesOf(t, c)
    assert.deepEqual(
      all.map((i: any) => i.period_start),
      ['2029-04-30', '2029-03-31', '2029-02-28', '2029-01-31'].map((d) => unix(`${d}T00:00:00Z`)),
    )
    assert.equal(all[3].total, 3648, '29.90 + 22 % VAT 6.578 → 6.58')

    const seen: string[] = []
    let url: string | null = `${SUB}/${c.id}/invoices?limit=3`
    const links: (string | undefined)[] = []
    while (url) {
      const res = await call(t, { url, token: c.token })
      assert.equal(res.statusCode, 200, res.body)
      seen.push(...res.json().map((i: any) => i.id))
      const link = res.headers.link as string | undefined
      links.push(link)
      url = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1]! : null
    }
    assert.deepEqual(
      seen,
      all.map((i: any) => i.id),
    )
    assert.deepEqual(
      links.map((l) => l !== undefined),
      [true, false],
    )
    assert.match(links[0]!, new RegExp(`^<${SUB}/${c.id}/invoices\\?limit=3&cursor=[A-Za-z0-9_-]+>; rel="next"$`))
    // Exactly a page's worth: no Link.
    const exact = await call(t, { url: `${SUB}/${c.id}/invoices`, query: { limit: '4' }, token: c.token })
    assert.deepEqual([exact.json().length, exact.headers.link], [4, undefined])

    for (const query of [{ cursor: 'bm9wZQ' }, { limit: '0' }, { limit: '501' }, { page: '2' }] as Record<
      string,
      string
    >[]) {
      const res = await call(t, { url: `${SUB}/${c.id}/invoices`, query, token: c.token })
      assert.equal(res.statusCode, 400, JSON.stringify(query))
      assert.match(res.json().errors, /querystring\/(cursor|limit|page)/)
    }
    // Credit notes page the same way (none here).
    assert.deepEqual(await creditNotesOf(t, c), [])
  })

  it("another company's invoice is 404; reading needs read:company", async () => {
    const a = await billedCompany(t, { start: '2030-01-01T00:00:00.000Z' })
    const b = await billedCompany(t)
    await setCard(t, a.id)
    await at(t, '2030-01-31T00:00:00.000Z')
    const [invoice] = await invoicesOf(t, a)
    assert.equal((await json(t, 200, { url: `${SUB}/${a.id}/invoices/${invoice.id}`, token: a.token })).id, invoice.id)
    assert.equal(
      (await json(t, 200, { url: `${SUB}/${a.id}/invoices/${invoice.id.toUpperCase()}` })).id,
      invoice.id,
      'platform token; uuid in upper case',
    )
    for (const [url, token] of [
      [`${SUB}/${a.id}/invoices/${invoice.id}`, b.token],
      [`${SUB}/${b.id}/invoices/${invoice.id}`, b.token],
      [`${SUB}/${a.id}/invoices`, b.token],
      [`${SUB}/${a.id}/credit_notes`, b.token],
      [`${SUB}/${a.id}/invoices/${crypto.randomUUID()}`, undefined],
      [`${SUB}/${crypto.randomUUID()}/invoices`, undefined],
    ] as const) {
      const res = await call(t, { url, token })
      assert.equal(res.statusCode, 404, url)
    }
    assert.deepEqual(await invoicesOf(t, b), [])
    assert.equal((await call(t, { url: `${SUB}/${a.id}/invoices`, token: null })).statusCode, 401)
    const narrow = await t.tokenFor(a.client.client_id, a.client.client_secret, 'read:team')
    const refused = await call(t, { url: `${SUB}/${a.id}/invoices/${invoice.id}`, token: narrow })
    assert.deepEqual([refused.statusCode, refused.json().code], [403, 'insufficient_scope'])
    assert.equal((await call(t, { url: `${SUB}/${a.id}/invoices/not-a-uuid`, token: a.token })).statusCode, 400)
  })
})
