import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { strFromU8, unzipSync } from 'fflate'
import type { TestApp } from './helpers/app.ts'
import { chargebeeCompany, deliver, withChargebee, type CbCompany } from './chargebee.fixtures.ts'
import type { FakeChargebee } from './helpers/fake-chargebee.ts'
import { requires } from './helpers/requires.ts'
import { FATTURAPA_SELLER, assertValidFatturapa, values } from './helpers/fatturapa.ts'
import { SUB, call } from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

/**
 * The month's FatturaPA export (decisions §9.7): a ZIP named as the exchange system expects, each
 * progressive given once and kept across exports; Chargebee's invoices come from the same ledger,
 * among them one at two VAT rates with a discount.
 */
const EXPORT = '/api/v1/fatturapa/export'
const FILE = /^IT01234567890_([0-9A-Z]{5})\.xml$/
const ITALIAN = { address: 'Via Verdi 2', city: 'Torino', zip: '10121', province: 'TO', vat_number: 'IT12345678901' }

/** An invoice at 22 % and 10 % with a discount of 15.00 spread over both lines, mirrored from Chargebee. */
async function multiRateInvoice(t: TestApp, fake: FakeChargebee, c: CbCompany) {
  const invoice = fake.addInvoice(c.subscriptionId, {
    line_items: [
      {
        id: 'li_1',
        entity_type: 'plan_item_price',
        entity_id: 'suite',
        description: 'Suite',
        unit_amount: 5000,
        quantity: 2,
        amount: 10000,
      },
      {
        id: 'li_2',
        entity_type: 'addon_item_price',
        entity_id: 'books',
        description: 'Libri',
        unit_amount: 5000,
        quantity: 1,
        amount: 5000,
      },
    ],
    discounts: [{ entity_type: 'item_level_coupon', entity_id: 'SPRING', description: 'SPRING', amount: 1500 }],
    sub_total: 15000,
    taxes: [
      { name: 'IT VAT 22', amount: 1980 },
      { name: 'IT VAT 10', amount: 450 },
    ],
    line_item_taxes: [
      { tax_name: 'IT VAT 22', tax_rate: 22 },
      { tax_name: 'IT VAT 10', tax_rate: 10 },
    ],
    tax: 2430,
    total: 15930,
    amount_paid: 15930,
    amount_due: 0,
    currency_code: 'EUR',
  })
  const res = await deliver(t, fake.event('invoice_generated', { invoice }))
  assert.equal(res.statusCode, 200, res.body)
}

const unzip = (body: Buffer) =>
  Object.fromEntries(Object.entries(unzipSync(new Uint8Array(body))).map(([name, data]) => [name, strFromU8(data)]))

forEachEngine('FatturaPA export', (engine) => {
  const { t, fake } = withChargebee(engine, FATTURAPA_SELLER)
  let company: CbCompany
  let month: string

  const patchCompany = async (id: string, body: unknown) => {
    const res = await call(t, { method: 'PATCH', url: `/api/v1/companies/${id}`, body })
    assert.equal(res.statusCode, 202, res.body)
  }
  const exportOf = (m: string, token?: string) => call(t, { url: `${EXPORT}?month=${m}`, token })

  before(async () => {
    month = new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Rome' }).format(t.clock.now()).slice(0, 7)
    company = await chargebeeCompany(t, fake)
    await patchCompany(company.id, { ...ITALIAN, sdi_code: 'ABC1234' })
    await multiRateInvoice(t, fake, company)
  })

  it('puts each line at its rate, the discount on its lines, the summary per rate', requires('xmllint'), async () => {
    const [invoice] = await t.json<any[]>(200, { url: `${SUB}/${company.id}/invoices`, token: company.token })
    const res = await call(t, { url: `${SUB}/${company.id}/invoices/${invoice.id}/fatturapa`, token: company.token })
    assert.equal(res.statusCode, 200, res.body)
    assertValidFatturapa(res.body)
    assert.deepEqual(values(res.body, 'PrezzoUnitario'), ['50.00', '50.00'])
    assert.deepEqual(values(res.body, 'Importo'), ['10.00', '5.00'])
    assert.deepEqual(values(res.body, 'PrezzoTotale'), ['90.00', '45.00'])
    assert.deepEqual(values(res.body, 'AliquotaIVA'), ['22.00', '10.00', '22.00', '10.00'])
    assert.deepEqual(values(res.body, 'ImponibileImporto'), ['90.00', '45.00'])
    assert.deepEqual(values(res.body, 'Imposta'), ['19.80', '4.50'])
    assert.deepEqual(values(res.body, 'ImportoTotaleDocumento'), ['159.30'])
  })

  it('answers 400 naming each company and field missing, and gives no progressive then', async () => {
    const other = await chargebeeCompany(t, fake)
    await patchCompany(other.id, { address: 'Via Po 1', city: 'Torino', zip: '10100', province: 'TO' })
    await multiRateInvoice(t, fake, other)
    const refused = await exportOf(month)
    assert.equal(refused.statusCode, 400, refused.body)
    assert.match(refused.json().errors, new RegExp(`company ${other.id} has no vat_number or tax_code`))
    assert.match(refused.json().errors, new RegExp(`company ${other.id} has no sdi_code or pec`))
    await patchCompany(other.id, { tax_code: 'RSSMRA85T10A562S', pec: 'other@pec.example.it', sdi_code: '0000000' })
  })

  it('exports the month as a ZIP whose names and progressives stay across exports', requires('xmllint'), async () => {
    const first = await exportOf(month)
    assert.equal(first.statusCode, 200, first.body)
    assert.equal(first.headers['content-type'], 'application/zip')
    assert.equal(first.headers['content-disposition'], `attachment; filename="IT01234567890_${month}.zip"`)
    const files = unzip(first.rawPayload)
    const names = Object.keys(files)
    assert.equal(names.length, 2)
    for (const [name, xml] of Object.entries(files)) {
      assert.match(name, FILE)
      assertValidFatturapa(xml)
      assert.deepEqual(values(xml, 'ProgressivoInvio'), [FILE.exec(name)![1]])
    }
    // A new invoice gets a new progressive; the others keep theirs.
    await multiRateInvoice(t, fake, company)
    const second = unzip((await exportOf(month)).rawPayload)
    const again = Object.keys(second)
    assert.equal(again.length, 3)
    assert.deepEqual(
      again.filter((n) => names.includes(n)),
      names,
    )
    for (const name of names) assert.equal(second[name], files[name])
    const added = again.find((n) => !names.includes(n))!
    assert.ok(parseInt(FILE.exec(added)![1]!, 36) > Math.max(...names.map((n) => parseInt(FILE.exec(n)![1]!, 36))))
  })

  it('leaves a voided invoice out', async () => {
    const before = Object.keys(unzip((await exportOf(month)).rawPayload))
    const invoice = fake.addInvoice(company.subscriptionId, {
      status: 'voided',
      voided_at: Math.floor(t.clock.now().getTime() / 1000),
    })
    const res = await deliver(t, fake.event('invoice_generated', { invoice }))
    assert.equal(res.statusCode, 200, res.body)
    assert.equal((await t.json<any[]>(200, { url: `${SUB}/${company.id}/invoices` }))[0].status, 'voided')
    assert.deepEqual(Object.keys(unzip((await exportOf(month)).rawPayload)), before)
  })

  it('is empty for a month without documents, for platform tokens only', async () => {
    const empty = await exportOf('2001-01')
    assert.equal(empty.statusCode, 200, empty.body)
    assert.deepEqual(unzip(empty.rawPayload), {})
    const byCompany = await exportOf(month, company.token)
    assert.equal(byCompany.statusCode, 403, byCompany.body)
    const bad = await exportOf('2027-13')
    assert.equal(bad.statusCode, 400, bad.body)
    const unauthenticated = await call(t, { url: `${EXPORT}?month=${month}`, token: null as never })
    assert.equal(unauthenticated.statusCode, 401, unauthenticated.body)
  })
})
