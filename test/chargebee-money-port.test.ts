import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import { API_KEY, ATTEMPTS, withChargebee, chargebeeCompany, deliver, type CbCompany } from './chargebee.fixtures.ts'
import { SUB, json } from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'
import type { FakeChargebee } from './helpers/fake-chargebee.ts'
import { createChargebeeMoneyPort } from '../src/modules/chargebee/index.ts'
import { createChargebeeProvider } from '../src/modules/chargebee/chargebee.provider.ts'
import { createProviderLedger } from '../src/modules/chargebee/chargebee-ledger.service.ts'
import { createProviderLedgerRepository } from '../src/modules/chargebee/chargebee-ledger.repository.ts'

/**
 * The Chargebee port of the money operations that have no route on Chargebee yet (decisions §9.2):
 * invoice refund, credit_note.create and refund, promotional_credit.add/deduct, invoice.create and
 * subscription.add_charge_at_term_end, each against the fake Chargebee, its answer laid over the mirror.
 *
 * Figures: the fixture's invoice, 29.90 × 5 = 149.50 + 22 % VAT 32.89 = 182.39 (18239 cents).
 */
const TOTAL = 18239

function portOf(fake: FakeChargebee) {
  const provider = createChargebeeProvider({
    site: '127.0.0.1',
    apiKey: API_KEY,
    protocol: 'http',
    hostSuffix: '',
    port: fake.port,
    timeoutMs: 1000,
    retry: { delayMs: 0 },
  })
  return createChargebeeMoneyPort({
    money: provider.money,
    ledger: createProviderLedger({ repo: createProviderLedgerRepository() }),
  })
}

async function mirroredInvoice(t: TestApp, fake: FakeChargebee, c: CbCompany, status: 'paid' | 'payment_due') {
  const copy = fake.addInvoice(c.subscriptionId, { status })
  assert.equal((await deliver(t, fake.event('invoice_generated', { invoice: copy }))).json().outcome, 'applied')
  const invoices = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
  const invoice = invoices.find((i) => i.status === status)
  assert.equal(invoice.total, TOTAL)
  return { id: invoice.id as string, copy }
}

forEachEngine('the Chargebee money port', (engine) => {
  const { t, fake } = withChargebee(engine)
  const run = <T>(work: (trx: any) => Promise<T>) => t.app.database.db.transaction().execute(work)

  it('refunds a paid invoice in part (a refundable credit note, refunded), then refuses more than refundable', async () => {
    const port = portOf(fake)
    const c = await chargebeeCompany(t, fake)
    const owner = { companyId: c.id, subscriptionId: c.subscriptionId }
    const { id, copy } = await mirroredInvoice(t, fake, c, 'paid')
    const noteId = await run((trx) =>
      port.refundInvoice(trx, owner, id, { amount: 3000, reasonCode: 'waiver' }, t.clock.now()),
    )
    const notes = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/credit_notes` })
    assert.deepEqual(
      notes.map((n) => [n.id, n.type, n.total, n.reference_invoice_id]),
      [[noteId, 'refundable', 3000, id]],
    )
    const sent = fake.requests.filter((r) => r.path === `/invoices/${copy.id}/refund`)
    assert.deepEqual(sent.at(-1)!.params, { refund_amount: '3000', credit_note: { reason_code: 'waiver' } })
    // 182.39 − 30.00 = 152.39 is left to refund: 200.00 is refused on the mirror, Chargebee not asked.
    const asked = fake.requests.length
    await assert.rejects(
      run((trx) => port.refundInvoice(trx, owner, id, { amount: 20000, reasonCode: 'waiver' }, t.clock.now())),
      { code: 'validation_failed' },
    )
    assert.equal(fake.requests.length, asked)
  })

  it('creates credit notes (adjustment on what is due, refundable on what was paid), never past either; refunds one', async () => {
    const port = portOf(fake)
    const c = await chargebeeCompany(t, fake)
    const owner = { companyId: c.id, subscriptionId: c.subscriptionId }
    const { id } = await mirroredInvoice(t, fake, c, 'payment_due')
    const note = (type: 'adjustment' | 'refundable', total: number, on = id) =>
      run((trx) =>
        port.createCreditNote(
          trx,
          owner,
          { referenceInvoiceId: on, type, total, reasonCode: 'service_unsatisfactory' },
          t.clock.now(),
        ),
      )
    await note('adjustment', 2000)
    const invoice = await json(t, 200, { url: `${SUB}/${c.id}/invoices/${id}` })
    assert.deepEqual([invoice.amount_adjusted, invoice.amount_due], [2000, TOTAL - 2000])
    // Nothing paid of it to credit: refused on the mirror.
    await assert.rejects(note('refundable', 5000), { code: 'validation_failed' })
    const paid = await mirroredInvoice(t, fake, c, 'paid')
    const refundable = await note('refundable', 5000, paid.id)
    assert.equal(fake.balances(c.id).refundable_credits, 5000)
    // 50.00 credited of 182.39: 140.00 more is past it.
    await assert.rejects(note('refundable', 14000, paid.id), { code: 'validation_failed' })
    await run((trx) => port.refundCreditNote(trx, owner, refundable, { amount: null }, t.clock.now()))
    assert.equal(fake.balances(c.id).refundable_credits, 0)
    const refunded = [...fake.creditNotes.values()].find((n) => n.total === 5000)!
    assert.deepEqual([refunded.status, refunded.amount_refunded, refunded.amount_available], ['refunded', 5000, 0])
  })

  it('adds and deducts promotional credits, never below 0 (400 before Chargebee is asked)', async () => {
    const port = portOf(fake)
    const c = await chargebeeCompany(t, fake)
    const owner = { companyId: c.id, subscriptionId: c.subscriptionId }
    const change = (type: 'add' | 'deduct', amount: number) =>
      port.promotionalCredits(owner, { type, amount, description: 'Goodwill', currencyCode: 'EUR' })
    assert.deepEqual(await change('add', 5000), {
      promotional_credits: 5000,
      refundable_credits: 0,
      excess_payments: 0,
    })
    assert.equal((await change('deduct', 2000)).promotional_credits, 3000)
    const asked = fake.requests.filter((r) => r.method === 'POST').length
    await assert.rejects(change('deduct', 3001), { code: 'validation_failed' })
    assert.equal(fake.requests.filter((r) => r.method === 'POST').length, asked)
  })

  it('charges once now (an invoice, mirrored) or at term end (a line of the next renewal); a lost answer is read back', async () => {
    const port = portOf(fake)
    const c = await chargebeeCompany(t, fake)
    const owner = { companyId: c.id, subscriptionId: c.subscriptionId }
    const charge = (amount: number, description: string, invoiceImmediately: boolean) =>
      run((trx) =>
        port.charge(trx, owner, { amount, description, currencyCode: 'EUR', invoiceImmediately }, t.clock.now()),
      )
    // 500.00 onboarding + 22 % = 610.00.
    const invoiceId = await charge(50000, 'Onboarding', true)
    const invoice = await json(t, 200, { url: `${SUB}/${c.id}/invoices/${invoiceId}` })
    assert.deepEqual([invoice.total, invoice.line_items.map((l: any) => l.description)], [61000, ['Onboarding']])
    assert.equal(await charge(20000, 'Training day', false), null)
    fake.fail({ status: 0, hang: true, when: 'after', times: ATTEMPTS, match: /add_charge_at_term_end$/ })
    assert.equal(await charge(15000, 'Second training day', false), null)
    fake.releaseHanging()
    const pending = fake.subscriptions.get(c.subscriptionId)!.charges_at_term_end
    assert.deepEqual(
      pending.map((p: any) => p.description),
      ['Training day', 'Second training day'],
      'applied once, read back',
    )
  })
})
