import { after, before, it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import {
  DAY,
  SUB,
  at,
  billedCompany,
  call,
  detailsOf,
  json,
  setCard,
  statusOf,
  unix,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { forEachEngine, onEachEngine } from './helpers/engine-suites.ts'
import type { FakeChargebee } from './helpers/fake-chargebee.ts'
import { chargebeeApp, chargebeeCompany, deliver } from './chargebee.fixtures.ts'

/**
 * Refunds and manual credit notes on the local engine (decisions §9.2), through HTTP with the test
 * clock. Platform tokens only.
 *
 * Figures: a plan at €100.00 × 1, an Italian customer: 22 % VAT = 22.00, total 122.00 (12200
 * cents), billed at the trial's end (30 days). A credit note's tax is the invoice's prorated by its
 * total: tax = 2200 × total / 12200, half-up; the rest is its sub_total.
 */
const FAILING = { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 }
const GOOD = { number: '4242 4242 4242 4242', expiry_month: 12, expiry_year: 2099 }
const UNKNOWN = '00000000-0000-4000-8000-000000000000'

type Extra = { token?: string }
const invoiceUrl = (c: { id: string }, id: string) => `${SUB}/${c.id}/invoices/${id}`
const notesUrl = (c: { id: string }) => `${SUB}/${c.id}/credit_notes`
const post = (t: TestApp, url: string, body?: unknown, extra: Extra = {}) =>
  call(t, { method: 'POST', url, ...(body !== undefined ? { body } : {}), ...extra })
const refund = (t: TestApp, c: { id: string }, id: string, body?: unknown, extra?: Extra) =>
  post(t, `${invoiceUrl(c, id)}/refund`, body, extra)
const createNote = (t: TestApp, c: { id: string }, body: unknown, extra?: Extra) => post(t, notesUrl(c), body, extra)
const refundNote = (t: TestApp, c: { id: string }, id: string, body?: unknown, extra?: Extra) =>
  post(t, `${notesUrl(c)}/${id}/refund`, body, extra)
const ok = async (res: Awaited<ReturnType<typeof call>>, status = 200) => {
  assert.equal(res.statusCode, status, res.body)
  return status === 202 ? undefined : res.json()
}
/** A credit note made through POST .../credit_notes: 202, read back from its Location. */
async function issued(t: TestApp, c: { id: string; token: string }, body: Record<string, unknown>) {
  const res = await createNote(t, c, body)
  assert.equal(res.statusCode, 202, res.body)
  const location = String(res.headers.location)
  assert.match(location, new RegExp(`^${SUB}/${c.id}/credit_notes/[0-9a-f-]{36}$`))
  return json(t, 200, { url: location, token: c.token })
}
const refused = async (res: Awaited<ReturnType<typeof call>>, status: number, message: RegExp) => {
  assert.equal(res.statusCode, status, res.body)
  assert.match(res.json().errors, message)
}
const invoiceOf = (t: TestApp, c: BillingFixture, id: string) => json(t, 200, { url: invoiceUrl(c, id) })
const money = (n: any) => [
  n.type,
  n.status,
  n.total,
  n.sub_total,
  n.taxes[0]?.amount,
  n.amount_refunded,
  n.amount_available,
]
async function eventsFor(t: TestApp, c: BillingFixture, type: string, id: string) {
  const events = await json<any[]>(t, 200, { url: `/api/v1/companies/${c.id}/events`, query: { type, limit: '100' } })
  return events.filter((e) => e.data.object.id === id).reverse()
}

/** A company whose first invoice, 122.00 on `start` + 30 days, is paid by card or left payment_due. */
async function billed(t: TestApp, start: string, card = GOOD) {
  const c = await billedCompany(t, { start, plans: { basic: { price: 100 } }, company: { plan_quantity: 1 } })
  await setCard(t, c.id, card)
  await at(t, new Date(Date.parse(start) + 30 * DAY * 1000).toISOString())
  const [invoice] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
  assert.deepEqual([invoice.total, invoice.status], [12200, card === GOOD ? 'paid' : 'payment_due'])
  return { c, invoice }
}

onEachEngine('refunds and manual credit notes', { TEST_CLOCK_ENABLED: true }, (t) => {
  it('refunds 30.00 of a paid 122.00, refuses 100.00 more, then refunds the rest by default', async () => {
    const { c, invoice } = await billed(t, '2044-01-01T00:00:00.000Z')
    const paidAt = unix('2044-01-31T00:00:00Z')
    const body = { amount: 3000, reason_code: 'product_unsatisfactory', comment: 'Training day cancelled' }
    const first = await ok(await refund(t, c, invoice.id, body))
    assert.deepEqual([first.status, first.amount_paid, first.amount_refunded], ['paid', 12200, 3000])
    assert.deepEqual(first.comments, [{ operation: 'refund', comment: 'Training day cancelled', date: paidAt }])
    // 30.00: tax 2200 × 3000 / 12200 = 540.98 → 5.41, sub_total 30.00 − 5.41 = 24.59; refunded at once.
    const [note] = await json<any[]>(t, 200, { url: notesUrl(c), token: c.token })
    assert.deepEqual(money(note), ['refundable', 'refunded', 3000, 2459, 541, 3000, 0])
    assert.deepEqual([note.reference_invoice_id, note.reason_code], [invoice.id, 'product_unsatisfactory'])
    assert.deepEqual(
      note.line_items.map((l: any) => l.amount),
      [2459],
    )
    assert.deepEqual(note.refunds, [{ amount: 3000, date: paidAt }])
    // 122.00 − 30.00 = 92.00 is all that is left: 100.00 is refused, nothing changes.
    await refused(
      await refund(t, c, invoice.id, { amount: 10000, reason_code: 'other' }),
      400,
      /^body\/amount must be at most 9200/,
    )
    assert.deepEqual(await invoiceOf(t, c, invoice.id), first)
    // No amount: the 92.00 left. Tax 2200 × 9200 / 12200 = 1659.02 → 16.59; 5.41 + 16.59 = 22.00, the invoice's.
    const rest = await ok(await refund(t, c, invoice.id, { reason_code: 'order_cancellation' }))
    assert.equal(rest.amount_refunded, 12200)
    const [second] = await json<any[]>(t, 200, { url: notesUrl(c), token: c.token })
    assert.deepEqual(money(second), ['refundable', 'refunded', 9200, 7541, 1659, 9200, 0])
    await refused(await refund(t, c, invoice.id, { reason_code: 'other' }), 409, /^Nothing paid of the invoice is left/)
    // A refund goes back to the card: the customer holds no credit from it.
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 0)
    // Events: invoice.refunded twice, credit_note.created for each note, each object as its GET.
    const refunds = await eventsFor(t, c, 'invoice.refunded', invoice.id)
    assert.deepEqual(
      refunds.map((e) => e.data.object.amount_refunded),
      [3000, 12200],
    )
    assert.deepEqual(refunds[1].data.object, rest)
    const created = await eventsFor(t, c, 'credit_note.created', second.id)
    assert.deepEqual(
      created.map((e) => e.data.object),
      [second],
    )
  })

  it('credit notes on one invoice never sum beyond its total: 100.00 then 30.00 of 122.00 is 400', async () => {
    const { c, invoice } = await billed(t, '2044-03-01T00:00:00.000Z')
    const note = await issued(t, c, {
      reference_invoice_id: invoice.id.toUpperCase(),
      type: 'refundable',
      total: 10000,
      reason_code: 'service_unsatisfactory',
      description: 'Outage in March',
    })
    // 100.00: tax 2200 × 10000 / 12200 = 1803.28 → 18.03, sub_total 81.97; all of it the customer's credit.
    assert.deepEqual(money(note), ['refundable', 'refund_due', 10000, 8197, 1803, 0, 10000])
    assert.equal(note.description, 'Outage in March')
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 10000)
    // 100.00 + 30.00 = 130.00 > 122.00: refused, naming the room left (22.00).
    const more = { reference_invoice_id: invoice.id, type: 'refundable', total: 3000, reason_code: 'waiver' }
    await refused(
      await createNote(t, c, more),
      400,
      /^body\/total must be at most 2200: the invoice's credit notes would sum to 13000, beyond its total 12200/,
    )
    // A refund is a credit note too: the 22.00 left is all it can give back.
    const refunded = await ok(await refund(t, c, invoice.id, { reason_code: 'other' }))
    assert.equal(refunded.amount_refunded, 2200)
    await refused(
      await refund(t, c, invoice.id, { amount: 1, reason_code: 'other' }),
      400,
      /^body\/amount must be at most 0/,
    )
    const one = { ...more, total: 1 }
    await refused(await createNote(t, c, one), 400, /^body\/total must be at most 0/)
  })

  it('an adjustment lowers an unpaid invoice; one that settles it makes it paid and ends dunning', async () => {
    const { c, invoice } = await billed(t, '2044-05-01T00:00:00.000Z', FAILING)
    const base = { reference_invoice_id: invoice.id, type: 'adjustment', reason_code: 'waiver' }
    // 122.00 − 22.00 = 100.00 still due; retries go on.
    const waived = await issued(t, c, { ...base, total: 2200 })
    assert.deepEqual(money(waived), ['adjustment', 'adjusted', 2200, 1803, 397, 0, 0])
    assert.equal(waived.amount_allocated, 2200)
    const partly = await invoiceOf(t, c, invoice.id)
    const figures = (i: any) => [i.status, i.amount_adjusted, i.amount_due, i.dunning_status, i.next_retry_at]
    assert.deepEqual(figures(partly), ['payment_due', 2200, 10000, 'in_progress', invoice.next_retry_at])
    // Nothing was paid: a refundable note has nothing to credit; an adjustment beyond 100.00 is refused.
    await refused(
      await createNote(t, c, { ...base, type: 'refundable', total: 100 }),
      400,
      /^body\/total must be at most 0, what was paid of the invoice.*adjustment credit note/,
    )
    await refused(await createNote(t, c, { ...base, total: 10001 }), 400, /^body\/total must be at most 10000/)
    // The last 100.00 adjusted: paid, nothing due, no retry left.
    await issued(t, c, { ...base, total: 10000 })
    const settled = await invoiceOf(t, c, invoice.id)
    assert.deepEqual(figures(settled), ['paid', 12200, 0, 'exhausted', null])
    assert.equal(settled.paid_at, invoice.date)
    // Days 1, 3 and 5 pass: no charge, the subscription stays active.
    await at(t, new Date((invoice.date + 6 * DAY) * 1000).toISOString())
    assert.deepEqual(await invoiceOf(t, c, invoice.id), settled)
    assert.equal((await statusOf(t, c)).status, 'active')
    const types = (await eventsFor(t, c, 'invoice.*', invoice.id)).map((e) => e.type)
    assert.deepEqual(types, ['invoice.created', 'invoice.payment_failed', 'invoice.updated', 'invoice.paid'])
  })

  it('a refundable credit note refunded in part, then in whole', async () => {
    const { c, invoice } = await billed(t, '2044-07-01T00:00:00.000Z')
    const note = await issued(t, c, {
      reference_invoice_id: invoice.id,
      type: 'refundable',
      total: 5000,
      reason_code: 'order_change',
    })
    const refundedAt = unix('2044-07-31T00:00:00Z')
    // 50.00 − 20.00 = 30.00 left with the customer.
    const part = await ok(await refundNote(t, c, note.id, { amount: 2000 }))
    assert.deepEqual(money(part), ['refundable', 'refund_due', 5000, note.sub_total, note.taxes[0].amount, 2000, 3000])
    assert.deepEqual(part.refunds, [{ amount: 2000, date: refundedAt }])
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 3000)
    assert.equal((await invoiceOf(t, c, invoice.id)).amount_refunded, 2000)
    await refused(await refundNote(t, c, note.id, { amount: 3001 }), 400, /^body\/amount must be at most 3000/)
    // No body: the 30.00 left. Nothing remains: refunded.
    const whole = await ok(await refundNote(t, c, note.id))
    assert.deepEqual(money(whole), ['refundable', 'refunded', 5000, note.sub_total, note.taxes[0].amount, 5000, 0])
    assert.deepEqual(whole.refunds, [
      { amount: 2000, date: refundedAt },
      { amount: 3000, date: refundedAt },
    ])
    assert.deepEqual(await json(t, 200, { url: `${notesUrl(c)}/${note.id}`, token: c.token }), whole)
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 0)
    assert.equal((await invoiceOf(t, c, invoice.id)).amount_refunded, 5000)
    await refused(await refundNote(t, c, note.id, {}), 409, /^The credit note has nothing left to refund/)
    const events = await eventsFor(t, c, 'credit_note.*', note.id)
    assert.deepEqual(
      events.map((e) => e.type),
      ['credit_note.created', 'credit_note.refunded', 'credit_note.refunded'],
    )
    assert.deepEqual(events[0].data.object, note)
    assert.deepEqual(events[2].data.object, whole)
    assert.equal((await eventsFor(t, c, 'invoice.refunded', invoice.id)).length, 2)
  })

  it('refuses unknown or foreign ids (404), wrong states (409), bad bodies (400), company tokens (403)', async () => {
    const { c, invoice: unpaid } = await billed(t, '2044-09-01T00:00:00.000Z', FAILING)
    const { c: other, invoice: paid } = await billed(t, '2044-09-01T00:00:00.000Z')
    const adjustment = await issued(t, c, {
      reference_invoice_id: unpaid.id,
      type: 'adjustment',
      total: 100,
      reason_code: 'other',
    })
    const foreignNote = await issued(t, other, {
      reference_invoice_id: paid.id,
      type: 'refundable',
      total: 100,
      reason_code: 'other',
    })
    const notFound = (res: Awaited<ReturnType<typeof call>>, what: string) =>
      refused(res, 404, new RegExp(`^${what} not found$`))
    for (const id of [UNKNOWN, paid.id]) await notFound(await refund(t, c, id, { reason_code: 'other' }), 'Invoice')
    for (const id of [UNKNOWN, foreignNote.id]) {
      await notFound(await refundNote(t, c, id), 'Credit note')
      await notFound(await call(t, { url: `${notesUrl(c)}/${id}`, token: c.token }), 'Credit note')
    }
    const note = (fields: Record<string, unknown>) => ({
      reference_invoice_id: unpaid.id,
      type: 'adjustment',
      total: 100,
      reason_code: 'other',
      ...fields,
    })
    const badBodies: [string, unknown, RegExp][] = [
      ['refund', { amount: 100 }, /^body\/reason_code is required/],
      ['refund', { amount: 0, reason_code: 'other' }, /^body\/amount must be >= 1/],
      ['refund', { reason_code: 'bored' }, /^body\/reason_code must be one of/],
      [
        'note',
        note({ reference_invoice_id: UNKNOWN }),
        /^body\/reference_invoice_id must be an invoice of the company/,
      ],
      [
        'note',
        note({ reference_invoice_id: paid.id }),
        /^body\/reference_invoice_id must be an invoice of the company/,
      ],
      ['note', note({ type: 'store' }), /^body\/type must be one of/],
      ['note', note({ total: 10.5 }), /^body\/total must be integer/],
      ['note', note({ reason_code: 'subscription_change' }), /^body\/reason_code must be one of/],
      ['note', note({ description: ' ' }), /^body\/description must not be blank/],
      ['note', note({ amount: 1 }), /body.*amount/],
      ['refund_note', { amount: -1 }, /^body\/amount must be >= 1/],
    ]
    for (const [route, body, message] of badBodies) {
      const res =
        route === 'refund'
          ? await refund(t, c, unpaid.id, body)
          : route === 'note'
            ? await createNote(t, c, body)
            : await refundNote(t, c, adjustment.id, body)
      await refused(res, 400, message)
    }
    // States: only a paid invoice is refunded; a voided one takes no note; a paid one takes no adjustment;
    // an adjustment note is never refunded.
    await refused(
      await refund(t, c, unpaid.id, { reason_code: 'other' }),
      409,
      /^The invoice is payment_due: only a paid/,
    )
    await refused(
      await createNote(t, other, note({ reference_invoice_id: paid.id })),
      409,
      /^The invoice is paid: only a payment_due or not_paid invoice can be adjusted/,
    )
    await refused(await refundNote(t, c, adjustment.id), 409, /^The credit note is an adjustment/)
    const { c: third, invoice: toVoid } = await billed(t, '2044-09-01T00:00:00.000Z', FAILING)
    assert.equal((await post(t, `${invoiceUrl(third, toVoid.id)}/void`)).statusCode, 200)
    await refused(
      await createNote(t, third, note({ reference_invoice_id: toVoid.id })),
      409,
      /^The invoice is voided: it takes no credit note/,
    )
    // Company tokens: 403 on each write; the company reads its own credit note.
    for (const res of [
      await refund(t, other, paid.id, { reason_code: 'other' }, { token: other.token }),
      await createNote(t, c, note({}), { token: c.token }),
      await refundNote(t, other, foreignNote.id, {}, { token: other.token }),
    ]) {
      await refused(res, 403, /^Only a platform client may do this/)
    }
    assert.equal((await json(t, 200, { url: `${notesUrl(other)}/${foreignNote.id}`, token: other.token })).total, 100)
    // Nothing refused changed anything.
    assert.equal((await invoiceOf(t, other, paid.id)).amount_refunded, 0)
    assert.equal((await invoiceOf(t, c, unpaid.id)).amount_due, 12100)
  })
})

// Its own hooks: the app comes with a fake Chargebee (chargebeeApp), closed after the app.
// The fixture's plan on Chargebee: 29.90 × 5 = 149.50 + 22 % VAT 32.89 = 182.39 (18239 cents).
const CB_TOTAL = 18239

forEachEngine('refunds and credit notes on a Chargebee-managed subscription', (engine) => {
  let t: TestApp
  let fake: FakeChargebee
  before(async () => {
    ;({ t, fake } = await chargebeeApp(engine))
  })
  after(async () => {
    await t?.close()
    await fake?.close()
  })

  /** A Chargebee company with its first invoice, `status` at Chargebee, mirrored here. */
  async function mirrored(status: 'paid' | 'payment_due') {
    const c = await chargebeeCompany(t, fake)
    fake.change(c.subscriptionId, (s) =>
      Object.assign(s, { status: 'active', current_term_start: s.trial_end, current_term_end: s.trial_end + 30 * DAY }),
    )
    const copy = fake.addInvoice(c.subscriptionId, { status, first_invoice: true })
    assert.equal((await deliver(t, fake.event('invoice_generated', { invoice: copy }))).json().outcome, 'applied')
    const [invoice] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
    assert.equal(invoice.total, CB_TOTAL)
    return { c, invoice, copy }
  }
  const posts = () => fake.requests.filter((r) => r.method === 'POST').length

  it('refund: Chargebee refunds it (a refundable note, refunded); more than is left is 400 before any call', async () => {
    const { c, invoice, copy } = await mirrored('paid')
    const refunded = await ok(await refund(t, c, invoice.id, { amount: 3000, reason_code: 'waiver' }))
    assert.deepEqual([refunded.status, refunded.amount_paid, refunded.amount_refunded], ['paid', CB_TOTAL, 3000])
    const sent = fake.requests.filter((r) => r.path === `/invoices/${copy.id}/refund`)
    assert.deepEqual(sent.at(-1)!.params, { refund_amount: '3000', credit_note: { reason_code: 'waiver' } })
    const notes = await json<any[]>(t, 200, { url: notesUrl(c), token: c.token })
    assert.deepEqual(
      notes.map((n) => [n.type, n.status, n.total, n.amount_refunded, n.reference_invoice_id]),
      [['refundable', 'refunded', 3000, 3000, invoice.id]],
    )
    const asked = posts()
    await refused(
      await refund(t, c, invoice.id, { amount: 20000, reason_code: 'waiver' }),
      400,
      /^body\/amount must be at most 15239/,
    )
    assert.equal(posts(), asked, 'Chargebee was not asked')
    assert.deepEqual(await json(t, 200, { url: invoiceUrl(c, invoice.id) }), refunded)
    const events = await json<any[]>(t, 200, { url: `/api/v1/companies/${c.id}/events`, query: { limit: '100' } })
    const types = events.filter((e) => /^(invoice|credit_note)\./.test(e.type)).map((e) => e.type)
    assert.deepEqual(types.reverse(), ['invoice.created', 'invoice.paid', 'credit_note.created', 'invoice.refunded'])
    // Chargebee's webhook of the same copies changes nothing more.
    assert.equal(
      (await deliver(t, fake.event('invoice_updated', { invoice: fake.invoices.get(copy.id) }))).json().outcome,
      'stale',
    )
  })

  it('credit notes: an adjustment lowers what is due, a refundable one credits what was paid, then refunded', async () => {
    const due = await mirrored('payment_due')
    const adjustment = { reference_invoice_id: due.invoice.id, type: 'adjustment', reason_code: 'other' }
    const note = await issued(t, due.c, { ...adjustment, total: 2000 })
    assert.deepEqual([note.type, note.total, note.reference_invoice_id], ['adjustment', 2000, due.invoice.id])
    const lowered = await json(t, 200, { url: invoiceUrl(due.c, due.invoice.id) })
    assert.deepEqual([lowered.amount_adjusted, lowered.amount_due], [2000, CB_TOTAL - 2000])
    const asked = posts()
    await refused(await createNote(t, due.c, { ...adjustment, total: CB_TOTAL }), 400, /^body\/total must be at most/)
    assert.equal(posts(), asked, 'Chargebee was not asked')

    const paid = await mirrored('paid')
    const body = { reference_invoice_id: paid.invoice.id, type: 'refundable', reason_code: 'other', total: 5000 }
    const credit = await issued(t, paid.c, body)
    assert.deepEqual([credit.type, credit.status, credit.amount_available], ['refundable', 'refund_due', 5000])
    assert.equal(fake.balances(paid.c.id).refundable_credits, 5000)
    const part = await ok(await refundNote(t, paid.c, credit.id, { amount: 2000 }))
    assert.deepEqual([part.amount_refunded, part.amount_available], [2000, 3000])
    await refused(await refundNote(t, paid.c, credit.id, { amount: 3001 }), 400, /^body\/amount must be at most 3000/)
    const rest = await ok(await refundNote(t, paid.c, credit.id))
    assert.deepEqual([rest.status, rest.amount_refunded, rest.amount_available], ['refunded', 5000, 0])
    assert.equal(fake.balances(paid.c.id).refundable_credits, 0)
    const invoice = await json(t, 200, { url: invoiceUrl(paid.c, paid.invoice.id) })
    assert.equal(invoice.amount_refunded, 5000)
    await refused(await refundNote(t, paid.c, UNKNOWN), 404, /Credit note/)
  })
})
