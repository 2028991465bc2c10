import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import type { LightMyRequestResponse } from 'fastify'
import { companyClient } from './helpers/factories.ts'
import { PDFTOTEXT, requires } from './helpers/requires.ts'
import {
  SUB,
  at,
  billedCompany,
  call,
  json,
  moveTo,
  setCard,
  update,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { ALLOWED, PageSession, assertHtml, pathOf } from './hosted-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Invoices and credit notes as PDF files (decisions §9.2): made by a PDF library, read back here
 * with pdftotext as a reader's search would, in the company's language; the same file from the
 * portal under its token.
 */
const SELLER = {
  SELLER_NAME: 'Rossi S.r.l.',
  SELLER_ADDRESS: 'Via Roma 1|20121 Milano MI',
  SELLER_VAT_NUMBER: 'IT01234567890',
}
const UNKNOWN = '00000000-0000-4000-8000-000000000000'
const FAILING = { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 }

/** The text of a PDF, its runs of white space made one space. */
const textOf = (pdf: Buffer) =>
  execFileSync(PDFTOTEXT, ['-enc', 'UTF-8', '-', '-'], { input: pdf }).toString('utf8').replace(/\s+/g, ' ')

function assertNames(text: string, expected: string[]) {
  for (const fragment of expected) assert.ok(text.includes(fragment), `"${fragment}" is not in the PDF's text: ${text}`)
}

function assertPdf(res: LightMyRequestResponse, filename: string) {
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.headers['content-type'], 'application/pdf')
  assert.equal(res.headers['content-disposition'], `inline; filename="${filename}"`)
  assert.equal(res.rawPayload.subarray(0, 5).toString('latin1'), '%PDF-')
  assert.match(res.rawPayload.subarray(-8).toString('latin1'), /%%EOF\s*$/)
}

onEachEngine('invoice and credit-note PDFs', { REDIRECT_ALLOWED_HOSTS: ALLOWED, ...SELLER }, (t) => {
  /** An Italian business: Gold €1,000 + 22 % VAT from Apr 1, Silver from Apr 5 (a credit note on the first invoice). */
  let italian: BillingFixture
  /** A German business with a valid VAT number: reverse-charged, in English. */
  let german: BillingFixture
  let itInvoices: any[]
  let itNote: any
  let deInvoice: any

  before(async () => {
    const plans = {
      gold: { price: 1000, name: 'Gold', features: [] },
      silver: { price: 500, name: 'Silver', features: [] },
    }
    italian = await billedCompany(t, {
      start: '2027-03-02T00:00:00.000Z',
      plans,
      company: {
        plan_quantity: 1,
        address: 'Via Verdi 2',
        city: 'Torino',
        zip: '10121',
        province: 'TO',
        vat_number: 'IT12345678901',
      },
    })
    german = await billedCompany(t, {
      start: '2027-03-02T00:00:00.000Z',
      plans,
      company: {
        name: 'Łódź Café GmbH',
        plan_quantity: 1,
        country: 'DE',
        timezone: 'Europe/Berlin',
        vat_number: 'DE123456789',
        vat_number_status: 'valid',
      },
    })
    await setCard(t, italian.id)
    await setCard(t, german.id)
    await at(t, '2027-04-01T00:00:00.000Z')
    await moveTo(t, '2027-04-05T00:00:00.000Z')
    const silver = { subscription_plan: italian.plans.silver }
    const changed = await update(t, italian.id, italian.subscriptionId, silver, italian.token)
    assert.equal(changed.statusCode, 200, changed.body)
    itInvoices = await json(t, 200, { url: `${SUB}/${italian.id}/invoices`, token: italian.token })
    ;[itNote] = await json(t, 200, { url: `${SUB}/${italian.id}/credit_notes`, token: italian.token })
    ;[deInvoice] = await json(t, 200, { url: `${SUB}/${german.id}/invoices`, token: german.token })
  })

  const pdfUrl = (companyId: string, invoiceId: string) => `${SUB}/${companyId}/invoices/${invoiceId}/pdf`
  const noteUrl = (companyId: string, id: string) => `${SUB}/${companyId}/credit_notes/${id}/pdf`

  it('serves an invoice as a PDF file named after it, cached as the JSON invoice is', async () => {
    const activation = itInvoices.at(-1)
    const res = await call(t, { url: pdfUrl(italian.id, activation.id), token: italian.token })
    assertPdf(res, `${activation.id}.pdf`)
    assert.equal(res.headers['content-language'], 'it')
    const jsonInvoice = await call(t, { url: `${SUB}/${italian.id}/invoices/${activation.id}`, token: italian.token })
    assert.equal(res.headers['cache-control'], jsonInvoice.headers['cache-control'])
    // The same invoice makes the same file.
    const again = await call(t, { url: pdfUrl(italian.id, activation.id), token: italian.token })
    assert.deepEqual(again.rawPayload, res.rawPayload)
  })

  it(
    "prints an Italian company's invoice in Italian: number, parties, lines, VAT per rate, totals, credit notes",
    requires('pdftotext'),
    async () => {
      const activation = itInvoices.at(-1)
      assert.deepEqual([activation.total, activation.taxes.map((x: any) => x.rate)], [122000, [22]])
      const text = textOf((await call(t, { url: pdfUrl(italian.id, activation.id), token: italian.token })).rawPayload)
      assert.match(text, /^Fattura Numero fattura Data di emissione Scadenza Periodo di fatturazione Stato /)
      assertNames(text, [
        activation.id,
        '1 aprile 2027 – 30 aprile 2027',
        'Pagata il 1 aprile 2027',
        'FORNITORE CLIENTE',
        'Rossi S.r.l.',
        'Via Roma 1 20121 Milano MI Italia Partita IVA: IT01234567890',
        'Via Verdi 2 10121 Torino (TO) Italia Partita IVA: IT12345678901',
        'Gold',
        '22%',
        'IVA IT 22% su 1.000,00 € 220,00 €',
        'Totale 1.220,00 €',
        'Pagato -1.220,00 €',
        'Importo dovuto 0,00 €',
        'Importi in EUR.',
        'Note di credito emesse su questa fattura',
        itNote.id,
        'Parte non usata di un piano modificato',
        'Pagina 1 di 1',
      ])
    },
  )

  it(
    "prints a German business's invoice in English, reverse-charged, with its VAT number",
    requires('pdftotext'),
    async () => {
      const res = await call(t, { url: pdfUrl(german.id, deInvoice.id), token: german.token })
      assertPdf(res, `${deInvoice.id}.pdf`)
      assert.equal(res.headers['content-language'], 'en')
      const text = textOf(res.rawPayload)
      assert.match(text, /^Invoice Invoice number Date of issue /)
      assertNames(text, [
        deInvoice.id,
        '1 April 2027 – 30 April 2027',
        'SELLER BILL TO',
        'Germany VAT number: DE123456789',
        'Reverse charge',
        'Total €1,000.00',
        'Amount due €0.00',
        'Reverse charge: VAT to be accounted for by the customer',
        'Page 1 of 1',
        // The standard fonts have no Ł or ź: the letters without their marks.
        'Lódz Café GmbH',
      ])
    },
  )

  it(
    'serves a credit note as a PDF naming its reference invoice, reason, VAT and what is left of it',
    requires('pdftotext'),
    async () => {
      const res = await call(t, { url: noteUrl(italian.id, itNote.id), token: italian.token })
      assertPdf(res, `${itNote.id}.pdf`)
      const text = textOf(res.rawPayload)
      assert.match(text, /^Nota di credito Numero nota di credito Data di emissione Fattura di riferimento Causale /)
      assert.equal(itNote.reference_invoice_id, itInvoices.at(-1).id)
      // Apr 5, 26 of 30 days left: the unused Gold, 866.67 + 22 % = 1,057.34, is credited; Silver for the
      // rest of the term, 433.33 + 22 % = 528.66, is paid from it; 528.68 is left.
      assert.deepEqual([itNote.total, itNote.amount_allocated, itNote.amount_available], [105734, 52866, 52868])
      assertNames(text, [
        itNote.id,
        itNote.reference_invoice_id,
        'Parte non usata di un piano modificato',
        '5 aprile 2027',
        'Partita IVA: IT12345678901',
        'IVA IT 22% su 866,67 € 190,67 €',
        'Totale 1.057,34 €',
        'Applicato alle fatture -528,66 €',
        'Ancora disponibile 528,68 €',
      ])
    },
  )

  it('answers a platform token for any company', async () => {
    assertPdf(await call(t, { url: pdfUrl(german.id, deInvoice.id) }), `${deInvoice.id}.pdf`)
    assertPdf(await call(t, { url: noteUrl(italian.id, itNote.id) }), `${itNote.id}.pdf`)
  })

  it("refuses without a token (401), without read:company (403), an id not the company's (404), a malformed id (400)", async () => {
    const activation = itInvoices.at(-1)
    const teamOnly = await companyClient(t, italian.id, ['read:team'])
    const weak = await t.tokenFor(teamOnly.client_id, teamOnly.client_secret)
    for (const url of [pdfUrl(italian.id, activation.id), noteUrl(italian.id, itNote.id)]) {
      const anonymous = await call(t, { url, token: null })
      assert.deepEqual([anonymous.statusCode, anonymous.json().code], [401, 'unauthorized'], url)
      const refused = await call(t, { url, token: weak })
      assert.deepEqual([refused.statusCode, refused.json().code], [403, 'insufficient_scope'], url)
    }
    const notFound: Array<[string, string | undefined]> = [
      [pdfUrl(german.id, deInvoice.id), italian.token],
      [pdfUrl(italian.id, deInvoice.id), italian.token],
      [noteUrl(german.id, itNote.id), german.token],
      [pdfUrl(italian.id, UNKNOWN), undefined],
      [noteUrl(italian.id, UNKNOWN), undefined],
      [noteUrl(german.id, itNote.id), undefined],
    ]
    for (const [url, token] of notFound) {
      const res = await call(t, { url, token })
      assert.deepEqual([res.statusCode, res.json().code], [404, 'not_found'], url)
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    }
    // As the JSON invoice answers a malformed id.
    assert.equal((await call(t, { url: `${SUB}/${italian.id}/invoices/not-an-id` })).statusCode, 400)
    const malformed = [
      [pdfUrl(italian.id, 'not-an-id'), 'invoice_id'],
      [noteUrl(italian.id, 'x'), 'credit_note_id'],
    ]
    for (const [url, field] of malformed) {
      const res = await call(t, { url: url! })
      assert.equal(res.statusCode, 400, url)
      assert.match(res.json().errors, new RegExp(`params/${field}`))
    }
  })

  it("links each invoice's PDF from the portal, and serves the same file under the portal's token", async () => {
    const activation = itInvoices.at(-1)
    const portal = new PageSession(t, await pathOf(t, 'portal', italian.id, italian.token), 'en')
    const page = await portal.get()
    assertHtml(page, 200)
    const link = `<a href="${portal.path}/invoices/${activation.id}/pdf" type="application/pdf"`
    assert.match(page.body, new RegExp(link))
    const file = await portal.get(`/invoices/${activation.id}/pdf`)
    assertPdf(file, `${activation.id}.pdf`)
    // The company's language, whatever the browser's: the document is the customer's.
    assert.equal(file.headers['content-language'], 'it')
    assert.equal(file.headers['cache-control'], 'no-store')
    assert.deepEqual(file.rawPayload, (await call(t, { url: pdfUrl(italian.id, activation.id) })).rawPayload)
    for (const suffix of [`/invoices/${deInvoice.id}/pdf`, `/invoices/${UNKNOWN}/pdf`, '/invoices/not-an-id/pdf']) {
      const refused = await portal.get(suffix)
      assertHtml(refused, 404)
      assert.match(refused.body, /This invoice does not exist, or it is not one of yours\./)
    }
    const unknownToken = `/hosted/portal/${'x'.repeat(43)}/invoices/${activation.id}/pdf`
    assertHtml(await t.app.inject({ method: 'GET', url: unknownToken }), 404)
  })

  // Last: its companies move the clock past the others' renewals.
  it('prints the payments recorded, the refunds and a void with its reason', requires('pdftotext'), async () => {
    /** An Italian company whose first invoice, 100.00 + 22 % = 122.00 on Jul 1, the card failed to pay. */
    const unpaid = async () => {
      const plans = { basic: { price: 100, name: 'Basic', features: [] } }
      const c = await billedCompany(t, { start: '2027-06-01T00:00:00.000Z', plans, company: { plan_quantity: 1 } })
      await setCard(t, c.id, FAILING)
      await at(t, '2027-07-01T00:00:00.000Z')
      const [invoice] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
      return { c, invoice }
    }
    const operate = (c: BillingFixture, id: string, operation: string, body: unknown) =>
      json(t, 200, { method: 'POST', url: `${SUB}/${c.id}/invoices/${id}/${operation}`, body })
    // 50.00 by bank transfer and 72.00 in cash: 122.00, paid; then 30.00 of it refunded.
    const { c, invoice } = await unpaid()
    await operate(c, invoice.id, 'record_payment', {
      amount: 5000,
      payment_method: 'bank_transfer',
      reference: 'CRO 42',
    })
    await operate(c, invoice.id, 'record_payment', { amount: 7200, payment_method: 'cash' })
    await operate(c, invoice.id, 'refund', { amount: 3000, reason_code: 'product_unsatisfactory' })
    const [note] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/credit_notes`, token: c.token })
    const text = textOf((await call(t, { url: pdfUrl(c.id, invoice.id) })).rawPayload)
    assertNames(text, [
      'Pagato -122,00 €',
      'Pagamenti registrati',
      '1 luglio 2027 Bonifico bancario CRO 42 50,00 €',
      '1 luglio 2027 Contanti 72,00 €',
      'Note di credito emesse su questa fattura',
      'Rimborsi',
      `1 luglio 2027 ${note.id} Prodotto non soddisfacente 30,00 €`,
    ])
    const noteText = textOf((await call(t, { url: noteUrl(c.id, note.id) })).rawPayload)
    assertNames(noteText, ['Prodotto non soddisfacente', 'Rimborsato -30,00 €', 'Ancora disponibile 0,00 €'])
    // Voided, with its reason.
    const other = await unpaid()
    await operate(other.c, other.invoice.id, 'void', { reason_code: 'order_change' })
    const voided = textOf((await call(t, { url: pdfUrl(other.c.id, other.invoice.id) })).rawPayload)
    assertNames(voided, ['Annullata il 1 luglio 2027: Ordine modificato'])
  })
})
