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
  setCard,
  statusOf,
  unix,
  update,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Money operations on the local engine's invoices (decisions §9.2), through HTTP with the test
 * clock: record a payment, void, write off. Platform tokens only.
 *
 * Figures: a plan at €100.00 × 1, an Italian customer: 22 % VAT = 22.00, total 122.00 (12200
 * cents). The card 4000 0000 0000 0341 is accepted but every charge fails, so the first invoice,
 * at the trial's end (30 days), is left payment_due and retried 1, 3 and 5 days after its date.
 */
const FAILING = { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 }
const GOOD = { number: '4242 4242 4242 4242', expiry_month: 12, expiry_year: 2099 }

const invoicesOf = (t: TestApp, c: BillingFixture) =>
  json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
const invoiceUrl = (c: BillingFixture, id: string) => `${SUB}/${c.id}/invoices/${id}`
type Extra = { token?: string; headers?: Record<string, string> }
const operate = (t: TestApp, c: BillingFixture, id: string, operation: string, body?: unknown, extra: Extra = {}) =>
  call(t, {
    method: 'POST',
    url: `${invoiceUrl(c, id)}/${operation}`,
    ...(body !== undefined ? { body } : {}),
    ...extra,
  })
/** The operation, which must answer 200: the invoice. */
const done = (t: TestApp, c: BillingFixture, id: string, operation: string, body?: unknown) =>
  json(t, 200, { method: 'POST', url: `${invoiceUrl(c, id)}/${operation}`, ...(body !== undefined ? { body } : {}) })
const settlement = (i: any) => ({
  status: i.status,
  credits_applied: i.credits_applied,
  amount_paid: i.amount_paid,
  write_off_amount: i.write_off_amount,
  amount_due: i.amount_due,
  dunning_status: i.dunning_status,
  attempt_count: i.attempt_count,
  next_retry_at: i.next_retry_at,
})
const invoiceEvents = async (t: TestApp, c: BillingFixture, invoiceId: string) => {
  const query = { type: 'invoice.*', limit: '100' }
  const events = await json<any[]>(t, 200, { url: `/api/v1/companies/${c.id}/events`, query })
  return events
    .filter((e) => e.data.object.id === invoiceId)
    .map((e) => e.type)
    .reverse()
}

/** A company whose first invoice, 122.00 on `start` + 30 days, is payment_due (its first charge failed). */
async function unpaid(t: TestApp, start: string) {
  const c = await billedCompany(t, { start, plans: { basic: { price: 100 } }, company: { plan_quantity: 1 } })
  await setCard(t, c.id, FAILING)
  const trialEnd = new Date(Date.parse(start) + 30 * 86_400_000).toISOString()
  await at(t, trialEnd)
  const [invoice] = await invoicesOf(t, c)
  assert.deepEqual(settlement(invoice), {
    status: 'payment_due',
    credits_applied: 0,
    amount_paid: 0,
    write_off_amount: 0,
    amount_due: 12200,
    dunning_status: 'in_progress',
    attempt_count: 1,
    next_retry_at: Math.floor(unix(trialEnd)) + 86_400,
  })
  return { c, invoice, trialEnd: Math.floor(unix(trialEnd)) }
}

onEachEngine('invoice operations: record a payment, void, write off', { TEST_CLOCK_ENABLED: true }, (t) => {
  it('paid 50.00 then 72.00: paid, and dunning stops', async () => {
    const { c, invoice } = await unpaid(t, '2041-01-01T00:00:00.000Z')
    // 122.00 − 50.00 = 72.00 still due; the invoice stays payment_due and its retries go on.
    const transfer = { amount: 5000, payment_method: 'bank_transfer', reference: 'CRO 1' }
    const first = await done(t, c, invoice.id, 'record_payment', transfer)
    assert.deepEqual(settlement(first), { ...settlement(invoice), amount_paid: 5000, amount_due: 7200 })
    const recorded = { ...transfer, applied_amount: 5000, date: unix('2041-01-31T00:00:00Z') }
    assert.deepEqual(first.recorded_payments, [recorded])
    // Day 1's retry charges the 72.00 left, and fails.
    await at(t, '2041-02-01T12:00:00.000Z')
    const retried = await json(t, 200, { url: invoiceUrl(c, invoice.id) })
    assert.deepEqual(
      [retried.attempt_count, retried.amount_due, retried.next_retry_at],
      [2, 7200, unix('2041-02-03T00:00:00Z')],
    )
    // 50.00 + 72.00 = 122.00: paid on the payment's date, no retry left.
    const date = unix('2041-02-01T09:00:00Z')
    const paid = await done(t, c, invoice.id, 'record_payment', { amount: 7200, payment_method: 'check', date })
    assert.deepEqual(settlement(paid), {
      status: 'paid',
      credits_applied: 0,
      amount_paid: 12200,
      write_off_amount: 0,
      amount_due: 0,
      dunning_status: 'success',
      attempt_count: 2,
      next_retry_at: null,
    })
    assert.equal(paid.paid_at, date)
    const payments = paid.recorded_payments.map((p: any) => [p.amount, p.applied_amount, p.payment_method, p.reference])
    assert.deepEqual(payments, [
      [5000, 5000, 'bank_transfer', 'CRO 1'],
      [7200, 7200, 'check', null],
    ])
    // Days 3 and 5 pass: no charge is tried again, the subscription stays active, nothing is in excess.
    await at(t, '2041-02-06T00:00:00.000Z')
    assert.deepEqual(await json(t, 200, { url: invoiceUrl(c, invoice.id) }), paid)
    assert.equal((await statusOf(t, c)).status, 'active')
    assert.equal((await detailsOf(t, c)).customer.excess_payments, 0)
    assert.deepEqual(await invoiceEvents(t, c, invoice.id), [
      'invoice.created',
      'invoice.payment_failed',
      'invoice.payment_recorded',
      'invoice.payment_failed',
      'invoice.payment_recorded',
      'invoice.paid',
    ])
  })

  it('paid 150.00 at once: paid, 28.00 in excess, which the next renewal takes in credits_applied', async () => {
    const { c, invoice } = await unpaid(t, '2041-03-01T00:00:00.000Z')
    // 150.00 − 122.00 = 28.00 beyond what was due.
    const paid = await done(t, c, invoice.id, 'record_payment', { amount: 15000, payment_method: 'bank_transfer' })
    assert.deepEqual(settlement(paid), {
      status: 'paid',
      credits_applied: 0,
      amount_paid: 12200,
      write_off_amount: 0,
      amount_due: 0,
      dunning_status: 'success',
      attempt_count: 1,
      next_retry_at: null,
    })
    assert.deepEqual(
      paid.recorded_payments.map((p: any) => [p.amount, p.applied_amount]),
      [[15000, 12200]],
    )
    const { customer } = await detailsOf(t, c)
    const credits = [customer.promotional_credits, customer.refundable_credits, customer.excess_payments]
    assert.deepEqual(credits, [0, 0, 2800])
    await setCard(t, c.id, GOOD)
    // The renewal: 122.00, of which 28.00 from the excess payment and 94.00 charged to the card.
    const { current_term_end: renewal } = await statusOf(t, c)
    await at(t, new Date(renewal * 1000).toISOString())
    const [next] = await invoicesOf(t, c)
    assert.notEqual(next.id, invoice.id)
    const figures = [next.total, next.credits_applied, next.amount_paid, next.amount_due, next.status]
    assert.deepEqual(figures, [12200, 2800, 9400, 0, 'paid'])
    assert.equal((await detailsOf(t, c)).customer.excess_payments, 0)
  })

  it('a void during dunning: no more retries, and the credits applied to it go back to the customer', async () => {
    const { c, invoice } = await unpaid(t, '2041-06-01T00:00:00.000Z')
    await done(t, c, invoice.id, 'record_payment', { amount: 15000, payment_method: 'cash' })
    // The renewal takes the 28.00 of excess: 122.00 − 28.00 = 94.00 due, charged to the failing card.
    const { current_term_end: renewal } = await statusOf(t, c)
    await at(t, new Date(renewal * 1000).toISOString())
    const [due] = await invoicesOf(t, c)
    assert.deepEqual(settlement(due), {
      status: 'payment_due',
      credits_applied: 2800,
      amount_paid: 0,
      write_off_amount: 0,
      amount_due: 9400,
      dunning_status: 'in_progress',
      attempt_count: 1,
      next_retry_at: renewal + 86_400,
    })
    assert.equal((await detailsOf(t, c)).customer.excess_payments, 0)

    const voided = await done(t, c, due.id, 'void', { reason_code: 'order_change', comment: 'Billed by mistake' })
    // Voided: nothing owed, its 28.00 of credit back with the customer.
    assert.deepEqual(settlement(voided), {
      status: 'voided',
      credits_applied: 0,
      amount_paid: 0,
      write_off_amount: 0,
      amount_due: 0,
      dunning_status: 'exhausted',
      attempt_count: 1,
      next_retry_at: null,
    })
    const comment = { operation: 'void', comment: 'Billed by mistake', date: renewal }
    assert.deepEqual([voided.void_reason_code, voided.voided_at, voided.comments], ['order_change', renewal, [comment]])
    assert.equal((await detailsOf(t, c)).customer.excess_payments, 2800)
    // Days 1, 3 and 5 pass: nothing retried, the subscription stays active.
    await at(t, new Date((renewal + 6 * 86_400) * 1000).toISOString())
    assert.deepEqual(await json(t, 200, { url: invoiceUrl(c, due.id) }), voided)
    assert.equal((await statusOf(t, c)).status, 'active')
    assert.deepEqual(await invoiceEvents(t, c, due.id), ['invoice.created', 'invoice.payment_failed', 'invoice.voided'])
    // Void again, or void a paid invoice: 409, nothing changes.
    for (const id of [due.id, invoice.id]) {
      const refused = await operate(t, c, id, 'void')
      assert.equal(refused.statusCode, 409, refused.body)
      assert.match(
        refused.json().errors,
        /^The invoice is (voided|paid): only a payment_due or not_paid invoice can be voided/,
      )
    }
  })

  it('a void gives refundable credits back to the credit note they came from', async () => {
    const plans = { gold: { price: 100 }, silver: { price: 80 } }
    const c = await billedCompany(t, { start: '2041-07-01T00:00:00.000Z', plans, company: { plan_quantity: 1 } })
    await setCard(t, c.id, GOOD)
    await at(t, '2041-07-31T00:00:00.000Z')
    // On gold, 122.00 paid; at once down to silver for the whole term: 80.00 + 17.60 = 97.60 billed,
    // paid from the unused 122.00 of gold, which leaves 122.00 − 97.60 = 24.40 of refundable credit.
    assert.equal((await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.silver })).statusCode, 200)
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 2440)
    await setCard(t, c.id, FAILING)
    // The renewal on silver: 97.60, of which 24.40 of credit, and 73.20 the card fails to pay.
    const { current_term_end: renewal } = await statusOf(t, c)
    await at(t, new Date(renewal * 1000).toISOString())
    const [due] = await invoicesOf(t, c)
    assert.deepEqual([due.total, due.credits_applied, due.amount_due, due.status], [9760, 2440, 7320, 'payment_due'])
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 0)
    const voided = await done(t, c, due.id, 'void')
    const figures = [voided.status, voided.credits_applied, voided.amount_due, voided.void_reason_code]
    assert.deepEqual(figures, ['voided', 0, 0, null])
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 2440)
    const [note] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/credit_notes`, token: c.token })
    assert.deepEqual([note.total, note.amount_allocated, note.amount_available], [12200, 9760, 2440])
  })

  it('a void of an invoice partly paid: 409', async () => {
    const { c, invoice } = await unpaid(t, '2041-09-01T00:00:00.000Z')
    await done(t, c, invoice.id, 'record_payment', { amount: 100, payment_method: 'other' })
    const refused = await operate(t, c, invoice.id, 'void', {})
    assert.equal(refused.statusCode, 409, refused.body)
    assert.match(refused.json().errors, /has 100 paid: only an invoice with nothing paid can be voided/)
    assert.equal((await json(t, 200, { url: invoiceUrl(c, invoice.id) })).status, 'payment_due')
  })

  it('a write-off: paid with write_off_amount what was due; dunning stops', async () => {
    const { c, invoice } = await unpaid(t, '2041-11-01T00:00:00.000Z')
    await done(t, c, invoice.id, 'record_payment', { amount: 2200, payment_method: 'bank_transfer' })
    // 122.00 − 22.00 paid = 100.00 written off.
    const written = await done(t, c, invoice.id, 'write_off', { comment: 'Bankrupt' })
    assert.deepEqual(settlement(written), {
      status: 'paid',
      credits_applied: 0,
      amount_paid: 2200,
      write_off_amount: 10000,
      amount_due: 0,
      dunning_status: 'exhausted',
      attempt_count: 1,
      next_retry_at: null,
    })
    assert.equal(written.comments[0].comment, 'Bankrupt')
    await at(t, new Date((invoice.date + 6 * 86_400) * 1000).toISOString())
    assert.deepEqual(await json(t, 200, { url: invoiceUrl(c, invoice.id) }), written)
    assert.equal((await statusOf(t, c)).status, 'active')
    assert.deepEqual(await invoiceEvents(t, c, invoice.id), [
      'invoice.created',
      'invoice.payment_failed',
      'invoice.payment_recorded',
      'invoice.written_off',
    ])
    const again = await operate(t, c, invoice.id, 'write_off')
    assert.equal(again.statusCode, 409, again.body)
    assert.match(again.json().errors, /^The invoice is paid: only a payment_due or not_paid invoice can be written off/)
  })

  it('a not_paid invoice paid late: paid, and its subscription stays cancelled', async () => {
    const { c, invoice, trialEnd } = await unpaid(t, '2042-01-01T00:00:00.000Z')
    for (const day of [1, 3, 5]) await at(t, new Date((trialEnd + day * 86_400) * 1000).toISOString())
    assert.equal((await json(t, 200, { url: invoiceUrl(c, invoice.id) })).status, 'not_paid')
    assert.equal((await statusOf(t, c)).status, 'cancelled')
    const paid = await done(t, c, invoice.id, 'record_payment', { amount: 12200, payment_method: 'bank_transfer' })
    const figures = [paid.status, paid.amount_paid, paid.amount_due, paid.dunning_status]
    assert.deepEqual(figures, ['paid', 12200, 0, 'exhausted'])
    assert.equal((await statusOf(t, c)).status, 'cancelled')
  })

  it('an Idempotency-Key replays the payment instead of recording it twice', async () => {
    const { c, invoice } = await unpaid(t, '2042-03-01T00:00:00.000Z')
    const body = { amount: 1000, payment_method: 'cash' }
    const headers = { 'idempotency-key': `pay-${invoice.id}` }
    const first = await operate(t, c, invoice.id, 'record_payment', body, { headers })
    const second = await operate(t, c, invoice.id, 'record_payment', body, { headers })
    assert.deepEqual([first.statusCode, second.statusCode, second.headers['idempotent-replayed']], [200, 200, 'true'])
    assert.deepEqual(second.json(), first.json())
    assert.equal((await json(t, 200, { url: invoiceUrl(c, invoice.id) })).amount_paid, 1000)
  })

  it("takes a payment dated the invoice's own date, as shown in whole seconds", async () => {
    // The clock stands half a second past the minute: the invoice's date is shown floored to the second.
    const { c, invoice } = await unpaid(t, '2043-05-01T00:00:00.500Z')
    const paid = await done(t, c, invoice.id, 'record_payment', {
      amount: 12200,
      payment_method: 'bank_transfer',
      date: invoice.date,
    })
    assert.deepEqual([paid.status, paid.paid_at], ['paid', invoice.date])
  })

  it("refuses bad input with a sentence naming the field, other companies' invoices and company tokens", async () => {
    const { c, invoice, trialEnd } = await unpaid(t, '2042-05-01T00:00:00.000Z')
    const refusals: [unknown, RegExp][] = [
      [{ amount: 0, payment_method: 'cash' }, /^body\/amount must be >= 1/],
      [{ amount: -500, payment_method: 'cash' }, /^body\/amount must be >= 1/],
      [{ amount: '50', payment_method: 'cash' }, /^body\/amount must be integer/],
      [{ amount: 50.5, payment_method: 'cash' }, /^body\/amount must be integer/],
      [{ payment_method: 'cash' }, /^body\/amount is required/],
      [{ amount: 100, payment_method: 'card' }, /^body\/payment_method must be one of/],
      [{ amount: 100 }, /^body\/payment_method is required/],
      [{ amount: 100, payment_method: 'cash', note: 'x' }, /body.*note/],
      [{ amount: 100, payment_method: 'cash', date: trialEnd - 1 }, /^body\/date must not be before the invoice's/],
      [{ amount: 100, payment_method: 'cash', date: trialEnd + 86_400 }, /^body\/date must not be in the future/],
      [{ amount: 100, payment_method: 'cash', date: 9e12 }, /^body\/date must be <= 253402300799/],
      [{ amount: 100, payment_method: 'cash', reference: '   ' }, /^body\/reference must not be blank/],
    ]
    for (const [body, message] of refusals) {
      const res = await operate(t, c, invoice.id, 'record_payment', body)
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`)
      assert.match(res.json().errors, message, JSON.stringify(body))
    }
    const badReason = await operate(t, c, invoice.id, 'void', { reason_code: 'bored' })
    assert.equal(badReason.statusCode, 400, badReason.body)
    assert.match(badReason.json().errors, /^body\/reason_code must be one of/)

    const other = await unpaid(t, '2042-05-01T00:00:00.000Z')
    const unknown = '00000000-0000-4000-8000-000000000000'
    for (const operation of ['record_payment', 'void', 'write_off']) {
      const body = operation === 'record_payment' ? { amount: 100, payment_method: 'cash' } : {}
      for (const id of [unknown, other.invoice.id]) {
        const res = await operate(t, c, id, operation, body)
        assert.equal(res.statusCode, 404, `${operation} ${id}: ${res.body}`)
        assert.equal(res.json().errors, 'Invoice not found')
      }
      const forbidden = await operate(t, c, invoice.id, operation, body, { token: c.token })
      assert.equal(forbidden.statusCode, 403, forbidden.body)
      assert.equal(forbidden.json().errors, 'Only a platform client may do this')
    }
    const now = await json(t, 200, { url: invoiceUrl(c, invoice.id) })
    assert.deepEqual(settlement(now), settlement(invoice), 'nothing refused changed it')

    const full = await operate(t, c, invoice.id, 'record_payment', { amount: 12200, payment_method: 'cash' })
    assert.equal(full.statusCode, 200, full.body)
    const again = await operate(t, c, invoice.id, 'record_payment', { amount: 100, payment_method: 'cash' })
    assert.equal(again.statusCode, 409, again.body)
    assert.match(again.json().errors, /^The invoice is paid: only a payment_due or not_paid invoice can be paid/)
  })
})
