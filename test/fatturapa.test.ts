import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { loadConfig } from '../src/config.ts'
import { execFileSync } from 'node:child_process'
import { PDFTOTEXT, requires } from './helpers/requires.ts'
import { FATTURAPA_SELLER, assertValidFatturapa, values } from './helpers/fatturapa.ts'
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
import { ALLOWED } from './hosted-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * FatturaPA documents (decisions §9.7): each one valid against the official 1.2.2 schema (xmllint),
 * with the seller, the customer, the lines' rates or natures and the totals of the ledger.
 */
const ITALIAN_ADDRESS = { address: 'Via Verdi 2', city: 'Torino', zip: '10121', province: 'TO' }
const plans = {
  gold: { price: 1000, name: 'Gold', features: [] },
  silver: { price: 500, name: 'Silver', features: [] },
}

onEachEngine('FatturaPA documents', { REDIRECT_ALLOWED_HOSTS: ALLOWED, ...FATTURAPA_SELLER }, (t) => {
  let italian: BillingFixture
  let german: BillingFixture
  let american: BillingFixture
  let dollars: BillingFixture
  let incomplete: BillingFixture
  const invoicesOf = (c: BillingFixture) => json(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
  const invoiceXml = (c: BillingFixture, id: string, token = c.token) =>
    call(t, { url: `${SUB}/${c.id}/invoices/${id}/fatturapa`, token })
  const fetchXml = async (c: BillingFixture, id: string) => {
    const res = await invoiceXml(c, id)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers['content-type'], 'application/xml')
    assertValidFatturapa(res.body)
    return res.body
  }

  before(async () => {
    const start = '2027-03-02T00:00:00.000Z'
    italian = await billedCompany(t, {
      start,
      plans,
      company: { plan_quantity: 1, ...ITALIAN_ADDRESS, vat_number: 'IT12345678901', sdi_code: 'abc1234' },
    })
    german = await billedCompany(t, {
      plans,
      company: {
        name: 'Łódź Café GmbH',
        plan_quantity: 1,
        country: 'DE',
        timezone: 'Europe/Berlin',
        address: 'Hauptstraße 5',
        city: 'Berlin',
        vat_number: 'DE123456789',
        vat_number_status: 'valid',
      },
    })
    american = await billedCompany(t, {
      plans,
      company: { plan_quantity: 1, country: 'US', timezone: 'UTC', address: '1 Main St', city: 'Austin' },
    })
    dollars = await billedCompany(t, {
      plans: { usd: { price: 99.99, name: 'Pro (USD)', features: [], currency_code: 'USD' } },
      company: { plan_quantity: 2, ...ITALIAN_ADDRESS, tax_code: 'RSSMRA85T10A562S', pec: 'acme@pec.example.it' },
    })
    incomplete = await billedCompany(t, { plans, company: { plan_quantity: 1, ...ITALIAN_ADDRESS } })
    for (const c of [italian, german, american, dollars, incomplete]) await setCard(t, c.id)
    await at(t, '2027-04-01T00:00:00.000Z')
    await moveTo(t, '2027-04-05T00:00:00.000Z')
    const changed = await update(t, italian.id, italian.subscriptionId, { subscription_plan: italian.plans.silver })
    assert.equal(changed.statusCode, 200, changed.body)
  })

  it(
    'makes a domestic invoice: TD01, seller and customer, 22 % VAT, totals of the ledger',
    requires('xmllint'),
    async () => {
      const activation = (await invoicesOf(italian)).at(-1)
      const xml = await fetchXml(italian, activation.id)
      const res = await invoiceXml(italian, activation.id)
      assert.match(
        res.headers['content-disposition'] as string,
        /^attachment; filename="IT01234567890_[0-9A-Z]{5}\.xml"$/,
      )
      assert.deepEqual(values(xml, 'TipoDocumento'), ['TD01'])
      assert.deepEqual(values(xml, 'Divisa'), ['EUR'])
      assert.deepEqual(values(xml, 'Data'), ['2027-04-01'])
      assert.deepEqual(values(xml, 'CodiceDestinatario'), ['ABC1234'])
      assert.deepEqual(values(xml, 'IdCodice'), ['01234567890', '01234567890', '12345678901'])
      assert.deepEqual(values(xml, 'Denominazione')[0], 'Rossi S.r.l.')
      assert.deepEqual(values(xml, 'AliquotaIVA'), ['22.00', '22.00'])
      assert.deepEqual(values(xml, 'ImponibileImporto'), ['1000.00'])
      assert.deepEqual(values(xml, 'Imposta'), ['220.00'])
      assert.deepEqual(values(xml, 'ImportoTotaleDocumento'), [(activation.total / 100).toFixed(2)])
      assert.deepEqual(values(xml, 'ModalitaPagamento'), ['MP08'])
      assert.deepEqual(values(xml, 'Causale'), [`Fattura ${activation.id}`])
      // The same document again: its progressive was given once.
      assert.equal((await invoiceXml(italian, activation.id)).body, xml)
    },
  )

  it('makes a credit note TD04 naming its invoice by number and date', requires('xmllint'), async () => {
    const [note] = await json(t, 200, { url: `${SUB}/${italian.id}/credit_notes`, token: italian.token })
    const res = await call(t, { url: `${SUB}/${italian.id}/credit_notes/${note.id}/fatturapa`, token: italian.token })
    assert.equal(res.statusCode, 200, res.body)
    assertValidFatturapa(res.body)
    const invoice = await fetchXml(italian, note.reference_invoice_id)
    assert.deepEqual(values(res.body, 'TipoDocumento'), ['TD04'])
    assert.deepEqual(values(res.body, 'IdDocumento'), values(invoice, 'Numero'))
    assert.deepEqual(values(res.body, 'Data'), ['2027-04-05', '2027-04-01'])
    assert.deepEqual(values(res.body, 'ImportoTotaleDocumento'), [(note.total / 100).toFixed(2)])
    assert.notDeepEqual(values(res.body, 'Numero'), values(invoice, 'Numero'))
  })

  it(
    'marks a reverse-charged EU business N6.9, with its VAT number and a Latin-1 name',
    requires('xmllint'),
    async () => {
      const [invoice] = await invoicesOf(german)
      const xml = await fetchXml(german, invoice.id)
      assert.deepEqual(values(xml, 'CodiceDestinatario'), ['XXXXXXX'])
      assert.deepEqual(values(xml, 'IdPaese'), ['IT', 'IT', 'DE'])
      assert.deepEqual(values(xml, 'Denominazione')[1], 'Lódz Café GmbH')
      assert.deepEqual(values(xml, 'Natura'), ['N6.9', 'N6.9'])
      assert.deepEqual(values(xml, 'AliquotaIVA'), ['0.00', '0.00'])
      assert.deepEqual(values(xml, 'EsigibilitaIVA'), ['I'])
      assert.deepEqual(values(xml, 'ImportoTotaleDocumento'), ['1000.00'])
    },
  )

  it('marks a non-EU export N3.1, the customer with the placeholder codes', requires('xmllint'), async () => {
    const [invoice] = await invoicesOf(american)
    const xml = await fetchXml(american, invoice.id)
    assert.deepEqual(values(xml, 'Natura'), ['N3.1', 'N3.1'])
    assert.deepEqual(values(xml, 'IdCodice').at(-1), '99999999999')
    assert.deepEqual(values(xml, 'CAP').at(-1), '00000')
    assert.deepEqual(values(xml, 'Imposta'), ['0.00'])
  })

  it("states another currency as Divisa, the amounts the invoice's own", requires('xmllint'), async () => {
    const [invoice] = await invoicesOf(dollars)
    assert.equal(invoice.currency_code, 'USD')
    const xml = await fetchXml(dollars, invoice.id)
    assert.deepEqual(values(xml, 'Divisa'), ['USD'])
    assert.deepEqual(values(xml, 'CodiceDestinatario'), ['0000000'])
    assert.deepEqual(values(xml, 'PECDestinatario'), ['acme@pec.example.it'])
    assert.deepEqual(values(xml, 'CodiceFiscale').at(-1), 'RSSMRA85T10A562S')
    assert.deepEqual(values(xml, 'Quantita'), ['2.00'])
    assert.deepEqual(values(xml, 'PrezzoUnitario'), ['99.99'])
    assert.deepEqual(values(xml, 'ImportoTotaleDocumento'), [(invoice.total / 100).toFixed(2)])
  })

  it('answers 400 naming both the SDI code and the PEC a company lacks', async () => {
    const [invoice] = await invoicesOf(incomplete)
    const res = await invoiceXml(incomplete, invoice.id)
    assert.equal(res.statusCode, 400, res.body)
    assert.equal(res.json().code, 'validation_failed')
    assert.match(res.json().errors, /sdi_code or pec/)
  })

  it("reads a company's own documents: another company's is 403 or 404, an unknown id 404, the platform any", async () => {
    const [invoice] = await invoicesOf(german)
    const across = await invoiceXml(german, invoice.id, italian.token)
    assert.ok([403, 404].includes(across.statusCode), across.body)
    const unknown = await invoiceXml(german, '00000000-0000-4000-8000-000000000000')
    assert.equal(unknown.statusCode, 404, unknown.body)
    const note = await call(t, {
      url: `${SUB}/${german.id}/credit_notes/00000000-0000-4000-8000-000000000000/fatturapa`,
      token: german.token,
    })
    assert.equal(note.statusCode, 404, note.body)
    const platform = await invoiceXml(german, invoice.id, undefined)
    assert.equal(platform.statusCode, 200, platform.body)
  })

  it("prints the customer's codice fiscale and PEC on its PDF invoice", requires('pdftotext'), async () => {
    const [invoice] = await invoicesOf(dollars)
    const res = await call(t, { url: `${SUB}/${dollars.id}/invoices/${invoice.id}/pdf`, token: dollars.token })
    const text = execFileSync(PDFTOTEXT, ['-enc', 'UTF-8', '-', '-'], { input: res.rawPayload }).toString('utf8')
    assert.match(text, /Codice fiscale: RSSMRA85T10A562S/)
    assert.match(text, /PEC: acme@pec\.example\.it/)
  })

  it('checks tax_code and sdi_code on write, naming the field; any client writes them', async () => {
    const patch = (body: unknown, token?: string) =>
      call(t, { method: 'PATCH', url: `/api/v1/companies/${incomplete.id}`, body, token })
    const bad = await patch({ sdi_code: 'AB12', tax_code: 'XYZ' }, incomplete.token)
    assert.equal(bad.statusCode, 400, bad.body)
    assert.match(bad.json().errors, /body\/tax_code XYZ is not a codice fiscale/)
    assert.match(bad.json().errors, /body\/sdi_code AB12 is not a codice destinatario/)
    const ok = await patch({ sdi_code: 'xyz9876', tax_code: '12345678901' }, incomplete.token)
    assert.equal(ok.statusCode, 202, ok.body)
    const company = await json(t, 200, { url: `/api/v1/companies/${incomplete.id}` })
    assert.deepEqual([company.sdi_code, company.tax_code], ['XYZ9876', '12345678901'])
  })
})

onEachEngine('FatturaPA without the seller in Italy', { SELLER_COUNTRY: 'DE' }, (t) => {
  it('answers 409 saying why no document is made, after a 404 for an unknown document', async () => {
    const c = await billedCompany(t, { company: ITALIAN_ADDRESS })
    const res = await call(t, { url: '/api/v1/fatturapa/export?month=2027-04' })
    assert.equal(res.statusCode, 409, res.body)
    assert.match(res.json().errors, /only when SELLER_COUNTRY is IT/)
    const unknown = await call(t, { url: `${SUB}/${c.id}/invoices/00000000-0000-4000-8000-000000000000/fatturapa` })
    assert.equal(unknown.statusCode, 404, unknown.body)
  })
})

it('refuses to start with SELLER_COUNTRY=IT and a seller setting missing, naming it', () => {
  const { SELLER_ZIP: _zip, SELLER_TAX_CODE: _code, ...rest } = FATTURAPA_SELLER
  assert.throws(() => loadConfig(rest), /SELLER_COUNTRY=IT .* need SELLER_TAX_CODE, SELLER_ZIP$/)
  assert.equal(loadConfig(FATTURAPA_SELLER).SELLER_ZIP, '20121')
  // The PDFs' settings alone ask for nothing more: the service starts and the routes answer 409.
  assert.equal(loadConfig({ SELLER_NAME: 'Rossi S.r.l.', SELLER_VAT_NUMBER: 'IT01234567890' }).SELLER_COUNTRY, 'IT')
  assert.equal(loadConfig({}).SELLER_COUNTRY, 'IT')
})
