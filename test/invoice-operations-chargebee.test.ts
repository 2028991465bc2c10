import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import { ATTEMPTS, withChargebee, chargebeeCompany, deliver, type CbCompany } from './chargebee.fixtures.ts'
import { DAY, SUB, call, json } from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'
import type { FakeChargebee } from './helpers/fake-chargebee.ts'

/**
 * Record a payment, void and write off on a Chargebee subscription's invoice (decisions §9.2,
 * docs/chargebee.md "Money operations"): Chargebee applies it (invoice.record_payment,
 * void_invoice, write_off), its answer updates the mirrored invoice, and the mirror's change
 * writes the same events as the local engine's, once even when Chargebee's webhook reports it too.
 *
 * Figures: the fixture's plan, 29.90 × 5 = 149.50, with the fake's 22 % VAT 32.89: 182.39 (18239 cents).
 */
const TOTAL = 18239

const invoiceUrl = (c: CbCompany, id: string) => `${SUB}/${c.id}/invoices/${id}`
const operate = (t: TestApp, c: CbCompany, id: string, operation: string, body: unknown = {}) =>
  call(t, { method: 'POST', url: `${invoiceUrl(c, id)}/${operation}`, body })

/** A Chargebee company whose first invoice (payment_due at Chargebee) is mirrored here: [ours, Chargebee's id]. */
async function dueInvoice(t: TestApp, fake: FakeChargebee) {
  const c = await chargebeeCompany(t, fake)
  fake.change(c.subscriptionId, (s) =>
    Object.assign(s, { status: 'active', current_term_start: s.trial_end, current_term_end: s.trial_end + 30 * DAY }),
  )
  const copy = fake.addInvoice(c.subscriptionId, { status: 'payment_due', first_invoice: true })
  assert.equal((await deliver(t, fake.event('invoice_generated', { invoice: copy }))).json().outcome, 'applied')
  const [invoice] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
  assert.equal(invoice.total, TOTAL)
  return { c, id: invoice.id as string, copy }
}

const eventsOf = async (t: TestApp, c: CbCompany, invoiceId: string) => {
  const events = await json<any[]>(t, 200, {
    url: `/api/v1/companies/${c.id}/events`,
    query: { type: 'invoice.*', limit: '100' },
  })
  return events
    .filter((e) => e.data.object.id === invoiceId)
    .map((e) => e.type)
    .reverse()
}

/** Chargebee's webhook reporting the invoice as Chargebee now has it. */
const reported = async (t: TestApp, fake: FakeChargebee, chargebeeId: string, type = 'invoice_updated') => {
  const res = await deliver(t, fake.event(type, { invoice: structuredClone(fake.invoices.get(chargebeeId)) }))
  assert.equal(res.statusCode, 200, res.body)
  return res.json().outcome
}

// The app on a fake Chargebee, built and closed by the hooks withChargebee registers.
forEachEngine('invoice operations on a Chargebee subscription', (engine) => {
  // A short timeout, so that a hung call times out quickly; a spurious one under load is retried like any other.
  const { t, fake } = withChargebee(engine, { CHARGEBEE_TIMEOUT_MS: 1000 })

  it('record_payment: Chargebee records it (part, then the rest and beyond: its excess_payments); the mirror follows, events once', async () => {
    const { c, id, copy } = await dueInvoice(t, fake)
    const first = await json(t, 200, {
      method: 'POST',
      url: `${invoiceUrl(c, id)}/record_payment`,
      body: { amount: 5000, payment_method: 'bank_transfer', reference: 'CRO 0123456789' },
    })
    assert.deepEqual(
      [first.status, first.amount_paid, first.amount_due, first.recorded_payments.length],
      ['payment_due', 5000, TOTAL - 5000, 1],
    )
    assert.deepEqual(
      [first.recorded_payments[0].payment_method, first.recorded_payments[0].reference],
      ['bank_transfer', 'CRO 0123456789'],
    )
    const sent = fake.requests.filter((r) => r.path === `/invoices/${copy.id}/record_payment`)
    assert.deepEqual(sent.at(-1)!.params.transaction, {
      amount: '5000',
      payment_method: 'bank_transfer',
      reference_number: 'CRO 0123456789',
      date: String(first.recorded_payments[0].date),
      status: 'success',
    })
    assert.ok(sent.at(-1)!.idempotencyKey, 'with an idempotency key')
    // 200.00 more: 132.39 settles it, 67.61 is the customer's excess_payments at Chargebee.
    const paid = await json(t, 200, {
      method: 'POST',
      url: `${invoiceUrl(c, id)}/record_payment`,
      body: { amount: 20000, payment_method: 'check' },
    })
    assert.deepEqual([paid.status, paid.amount_paid, paid.amount_due], ['paid', TOTAL, 0])
    assert.deepEqual(
      paid.recorded_payments.map((p: any) => [p.amount, p.applied_amount]),
      [
        [5000, 5000],
        [20000, TOTAL - 5000],
      ],
    )
    assert.equal(fake.balances(c.id).excess_payments, 20000 - (TOTAL - 5000))
    // Chargebee's webhooks of the same copy and of a payment change nothing more.
    assert.equal(await reported(t, fake, copy.id), 'stale')
    fake.changeInvoice(copy.id, () => {})
    assert.equal(await reported(t, fake, copy.id, 'payment_succeeded'), 'unchanged')
    assert.deepEqual(await json(t, 200, { url: invoiceUrl(c, id) }), paid)
    assert.deepEqual(await eventsOf(t, c, id), [
      'invoice.created',
      'invoice.payment_recorded',
      'invoice.payment_recorded',
      'invoice.paid',
    ])
  })

  it('void: Chargebee voids it with the reason; write_off: paid with write_off_amount and its credit note; events once', async () => {
    const voiding = await dueInvoice(t, fake)
    const voided = await json(t, 200, {
      method: 'POST',
      url: `${invoiceUrl(voiding.c, voiding.id)}/void`,
      body: { reason_code: 'order_change', comment: 'Billed twice' },
    })
    assert.deepEqual(
      [voided.status, voided.amount_due, voided.void_reason_code, voided.comments[0].comment],
      ['voided', 0, 'order_change', 'Billed twice'],
    )
    assert.equal(fake.invoices.get(voiding.copy.id)!.status, 'voided')
    assert.equal(await reported(t, fake, voiding.copy.id), 'stale')
    assert.deepEqual(await eventsOf(t, voiding.c, voiding.id), ['invoice.created', 'invoice.voided'])

    const writing = await dueInvoice(t, fake)
    const written = await json(t, 200, {
      method: 'POST',
      url: `${invoiceUrl(writing.c, writing.id)}/write_off`,
      body: { comment: 'Bankrupt' },
    })
    assert.deepEqual(
      [written.status, written.write_off_amount, written.amount_due, written.comments[0].operation],
      ['paid', TOTAL, 0, 'write_off'],
    )
    const notes = await json<any[]>(t, 200, { url: `${SUB}/${writing.c.id}/credit_notes` })
    assert.deepEqual(
      notes.map((n) => [n.type, n.total, n.reference_invoice_id]),
      [['adjustment', TOTAL, writing.id]],
    )
    fake.changeInvoice(writing.copy.id, () => {})
    assert.equal(await reported(t, fake, writing.copy.id), 'unchanged')
    assert.deepEqual(await eventsOf(t, writing.c, writing.id), ['invoice.created', 'invoice.written_off'])
    // Done: a second write-off or a void is 409, and Chargebee is not asked.
    const asked = fake.requests.length
    for (const operation of ['write_off', 'void']) {
      const res = await operate(t, writing.c, writing.id, operation)
      assert.equal(res.statusCode, 409, res.body)
      assert.match(res.json().errors, /^The invoice is paid: only a payment_due or not_paid invoice can be/)
    }
    assert.equal(fake.requests.length, asked)
  })

  it("checks before calling Chargebee; Chargebee's refusal maps as its other writes' (400 and 409 provider_error)", async () => {
    const { c, id, copy } = await dueInvoice(t, fake)
    const asked = fake.requests.length
    const future = Math.floor(t.clock.now().getTime() / 1000) + DAY
    const early = await operate(t, c, id, 'record_payment', { amount: 100, payment_method: 'cash', date: future })
    assert.equal(early.statusCode, 400, early.body)
    assert.match(early.json().errors, /^body\/date must not be in the future/)
    assert.equal(fake.requests.length, asked, 'Chargebee was not asked')
    // Paid at Chargebee meanwhile (its webhook not yet here): 409 from Chargebee's copy, nothing sent.
    fake.changeInvoice(copy.id, (i) => Object.assign(i, { status: 'paid', amount_paid: i.total, amount_due: 0 }))
    const late = await operate(t, c, id, 'write_off')
    assert.equal(late.statusCode, 409, late.body)
    assert.match(late.json().errors, /^The invoice is paid/)
    assert.ok(!fake.requests.slice(asked).some((r) => r.method === 'POST'), 'no write sent')
    fake.changeInvoice(copy.id, (i) => Object.assign(i, { status: 'payment_due', amount_paid: 0, amount_due: i.total }))

    const refusals: [number, string, number][] = [
      [400, 'param_wrong_value', 400],
      [409, 'invalid_state_for_request', 409],
    ]
    for (const [status, code, expected] of refusals) {
      fake.fail({ status, api_error_code: code, message: 'Refused by the fake', match: /record_payment$/ })
      const res = await operate(t, c, id, 'record_payment', { amount: 100, payment_method: 'cash' })
      assert.deepEqual([res.statusCode, res.json().code], [expected, 'provider_error'], res.body)
      assert.match(res.json().errors, new RegExp(`Chargebee refused to record the payment.*\\(${code}\\)`))
    }
    const seen = await json(t, 200, { url: invoiceUrl(c, id) })
    assert.deepEqual([seen.amount_paid, seen.recorded_payments], [0, []])
  })

  it('a timeout after Chargebee applied the payment, every retry too: read back, recorded once, not repeated', async () => {
    const { c, id, copy } = await dueInvoice(t, fake)
    fake.fail({ status: 0, hang: true, when: 'after', times: ATTEMPTS, match: /record_payment$/ })
    const res = await operate(t, c, id, 'record_payment', { amount: 3000, payment_method: 'bank_transfer' })
    fake.releaseHanging()
    assert.equal(res.statusCode, 200, res.body)
    const sent = fake.requests.filter((r) => r.path === `/invoices/${copy.id}/record_payment`)
    assert.equal(sent.length, ATTEMPTS, 'retried')
    assert.equal(new Set(sent.map((r) => r.idempotencyKey)).size, 1, 'under one idempotency key')
    assert.equal(fake.invoices.get(copy.id)!.linked_payments.length, 1, 'one payment at Chargebee')
    const invoice = res.json()
    assert.deepEqual(
      [invoice.amount_paid, invoice.amount_due, invoice.recorded_payments.map((p: any) => p.amount)],
      [3000, TOTAL - 3000, [3000]],
    )
    assert.deepEqual(await eventsOf(t, c, id), ['invoice.created', 'invoice.payment_recorded'])
  })
})
