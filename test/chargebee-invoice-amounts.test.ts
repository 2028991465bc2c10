import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import { withChargebee, chargebeeCompany, deliver, type CbCompany } from './chargebee.fixtures.ts'
import { SUB } from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

/**
 * A Chargebee invoice's amounts as Chargebee has them. Credits applied are only Chargebee's
 * `credits_applied`; adjustments and write-offs are their own fields; a voided invoice owes
 * nothing and was paid by nothing it did not say.
 */
const invoiceOf = (t: TestApp, c: CbCompany, id: string) =>
  t.json<any>(200, { url: `${SUB}/${c.id}/invoices/${id}`, token: c.token })
const applied = async (t: TestApp, event: unknown) => {
  const res = await deliver(t, event)
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.json().outcome, 'applied')
}
const amounts = (i: any) => [
  i.status,
  i.total,
  i.credits_applied,
  i.amount_paid,
  i.amount_adjusted,
  i.write_off_amount,
  i.amount_due,
]

// The app on a fake Chargebee, built and closed by the hooks withChargebee registers.
forEachEngine('chargebee invoice amounts', (engine) => {
  const { t, fake } = withChargebee(engine)

  it('a voided invoice shows no credits applied, nothing paid and nothing due, in the API', async () => {
    const c = await chargebeeCompany(t, fake)
    const invoice = fake.addInvoice(c.subscriptionId, { status: 'payment_due', first_invoice: true })
    await applied(t, fake.event('invoice_generated', { invoice }))
    const voided = fake.changeInvoice(invoice.id, (i) =>
      Object.assign(i, { status: 'voided', amount_due: 0, voided_at: i.date + 3600 }),
    )
    await applied(t, fake.event('invoice_updated', { invoice: voided }))
    const [row] = await t.json<any[]>(200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
    assert.deepEqual(amounts(await invoiceOf(t, c, row.id)), ['voided', invoice.total, 0, 0, 0, 0, 0])
  })

  it('credits, adjustments and write-offs each land in their own field', async () => {
    const c = await chargebeeCompany(t, fake)
    const invoice = fake.addInvoice(c.subscriptionId, { status: 'payment_due' })
    await applied(t, fake.event('invoice_generated', { invoice }))
    const writeOff = invoice.total - 1000 - 500 - 200
    const settled = fake.changeInvoice(invoice.id, (i) =>
      Object.assign(i, {
        status: 'paid',
        credits_applied: 1000,
        amount_paid: 500,
        amount_adjusted: 200,
        write_off_amount: writeOff,
        amount_due: 0,
        paid_at: i.date,
      }),
    )
    await applied(t, fake.event('invoice_updated', { invoice: settled }))
    const [row] = await t.json<any[]>(200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
    assert.deepEqual(amounts(await invoiceOf(t, c, row.id)), ['paid', invoice.total, 1000, 500, 200, writeOff, 0])
  })
})
