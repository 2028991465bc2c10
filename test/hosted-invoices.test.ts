import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { TestApp } from './helpers/app.ts'
import { SUB, at, billedCompany, json, moveTo, setCard, update, type BillingFixture } from './subscriptions-helpers.ts'
import { ALLOWED, PageSession, assertHtml, pathOf, stateOf } from './hosted-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * The portal's ledger (issue 16): the company's invoices, credit notes and credits on the portal
 * (spec 10), and each invoice as a printable document, in English and Italian, only through
 * that company's portal session.
 */
const HOSTILE = `<script>alert("x")</script> & 'Acme'`
const SELLER = {
  SELLER_NAME: 'Rossi <b>S.r.l.</b>',
  SELLER_ADDRESS: 'Via Roma 1|20121 Milano MI',
  SELLER_VAT_NUMBER: 'IT01234567890',
}

const invoicesOf = (t: TestApp, c: BillingFixture) => json(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
const creditNotesOf = (t: TestApp, c: BillingFixture) =>
  json(t, 200, { url: `${SUB}/${c.id}/credit_notes`, token: c.token })

/** Only the text of a page (tags dropped, entities of the escaping kept): what a reader sees, escaped. */
const text = (body: string) => body.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ')

onEachEngine("the portal's invoices and credits", { REDIRECT_ALLOWED_HOSTS: ALLOWED, ...SELLER }, (t) => {
  /** An Italian company (22 % VAT), Gold €30 → Silver €15 on Apr 5: two invoices, one credit note, €15.86 of credits left. */
  let c: BillingFixture
  /** A German business with a VAT number the platform marked valid: reverse-charged. */
  let de: BillingFixture
  /** A card whose charges fail: its first invoice waits for payment, retried on Apr 2. */
  let failing: BillingFixture

  before(async () => {
    const plans = {
      gold: { price: 30, name: 'Gold', features: [] },
      silver: { price: 15, name: 'Silver', features: [] },
    }
    c = await billedCompany(t, {
      start: '2027-03-02T00:00:00.000Z',
      plans,
      company: {
        name: HOSTILE,
        plan_quantity: 1,
        address: 'Via Verdi 2',
        city: 'Torino',
        zip: '10121',
        province: 'TO',
        fiscal_code: 'RSSMRA80A01L219X',
      },
    })
    de = await billedCompany(t, {
      start: '2027-03-02T00:00:00.000Z',
      plans,
      company: {
        plan_quantity: 1,
        country: 'DE',
        timezone: 'Europe/Berlin',
        vat_number: 'DE123456789',
        vat_number_status: 'valid',
      },
    })
    failing = await billedCompany(t, { start: '2027-03-02T00:00:00.000Z', plans, company: { plan_quantity: 1 } })
    await setCard(t, c.id)
    await setCard(t, de.id)
    await setCard(t, failing.id, { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 })
    await at(t, '2027-04-01T00:00:00.000Z')
    // Apr 5, 26 of 30 days left: the unused Gold, 26.00 + 22 % = 31.72, is credited; Silver for
    // the rest of the term, 13.00 + 22 % = 15.86, is paid from it; 15.86 stays the customer's.
    await moveTo(t, '2027-04-05T00:00:00.000Z')
    assert.equal(
      (await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.silver }, c.token)).statusCode,
      200,
    )
  })

  it('lists the invoices (number, date, period, total, amount due, status, document links), the credit notes and the credits, in English', async () => {
    const [change, activation] = await invoicesOf(t, c)
    const [note] = await creditNotesOf(t, c)
    const portal = new PageSession(t, await pathOf(t, 'portal', c.id, c.token))
    const res = await portal.get()
    assertHtml(res, 200)
    const invoices = /<table id="invoices"[\s\S]*?<\/table>/.exec(res.body)?.[0] ?? ''
    const rows = [...invoices.matchAll(/<tr data-invoice="([^"]+)">([\s\S]*?)<\/tr>/g)]
    assert.deepEqual(
      rows.map((r) => r[1]),
      [change.id, activation.id],
      'newest first',
    )
    assert.equal(
      text(rows[1]![2]!).trim(),
      `${activation.id} 1 April 2027 1 April 2027 – 30 April 2027 €36.60 €0.00 Paid View and print · Download · PDF`,
    )
    assert.equal(
      text(rows[0]![2]!).trim(),
      `${change.id} 5 April 2027 5 April 2027 – 30 April 2027 €15.86 €0.00 Paid View and print · Download · PDF`,
    )
    assert.match(
      rows[1]![2]!,
      new RegExp(
        `<a href="${portal.path}/invoices/${activation.id}" aria-label="View and print invoice of 1 April 2027">`,
      ),
    )
    assert.match(rows[1]![2]!, new RegExp(`<a href="${portal.path}/invoices/${activation.id}/download"`))
    const pdfLink = `<a href="${portal.path}/invoices/${activation.id}/pdf" type="application/pdf"`
    assert.match(rows[1]![2]!, new RegExp(`${pdfLink} aria-label="Download the PDF of the invoice of 1 April 2027">`))

    const notes = /<table id="credit-notes"[\s\S]*?<\/table>/.exec(res.body)?.[0] ?? ''
    assert.match(text(notes), new RegExp(`${note.id} 5 April 2027 Unused part of a changed plan €31\\.72 €15\\.86`))
    assert.match(res.body, /<dd id="refundable-credits">€15\.86<\/dd>/)
    assert.match(text(res.body), /Promotional credits €0\.00 Excess payments €0\.00/)
  })

  it('shows the same in Italian, amounts and dates written the Italian way', async () => {
    const portal = new PageSession(t, await pathOf(t, 'portal', c.id, c.token), 'it-IT,it;q=0.9')
    const res = await portal.get()
    assertHtml(res, 200)
    assert.equal(res.headers['content-language'], 'it')
    const body = text(res.body)
    assert.match(body, /Fatture Numero Data Periodo Totale Da pagare Stato Documento/)
    assert.match(
      body,
      /1 aprile 2027 1 aprile 2027 – 30 aprile 2027 36,60 € 0,00 € Pagata Visualizza e stampa · Scarica · PDF/,
    )
    assert.match(body, /Parte non usata di un piano modificato 31,72 € 15,86 €/)
    assert.match(body, /Crediti rimborsabili 15,86 €/)
  })

  it('shows an invoice waiting for payment as due, with the day of the next attempt', async () => {
    const [invoice] = await invoicesOf(t, failing)
    assert.equal(invoice.status, 'payment_due')
    const portal = new PageSession(t, await pathOf(t, 'portal', failing.id, failing.token))
    const row = /<tr data-invoice="[^"]+">([\s\S]*?)<\/tr>/.exec((await portal.get()).body)?.[1] ?? ''
    assert.match(text(row), /€36\.60 €36\.60 Payment due/)
    assert.match(row, /<span class="badge payment_due">/)
    const en = text((await portal.get(`/invoices/${invoice.id}`)).body)
    assert.match(en, /Status Payment due: the card will be charged again on 2 April 2027/)
    assert.match(en, /Total €36\.60 Amount due €36\.60/)
    const it = text((await new PageSession(t, portal.path, 'it').get(`/invoices/${invoice.id}`)).body)
    assert.match(it, /In attesa di pagamento: la carta sarà addebitata di nuovo il 2 aprile 2027/)
  })

  it('says so when there is nothing yet: a company in trial has no invoice and no credit note', async () => {
    const fresh = await billedCompany(t)
    const res = await new PageSession(t, await pathOf(t, 'portal', fresh.id, fresh.token)).get()
    assertHtml(res, 200)
    assert.match(res.body, /<p id="no-invoices">No invoices yet\.<\/p>/)
    assert.match(res.body, /<p id="no-credit-notes">No credit notes\.<\/p>/)
  })

  it('opens an invoice as a printable document: seller, buyer, lines with their VAT, totals, paid; and downloads it as a file without any link', async () => {
    const [change, activation] = await invoicesOf(t, c)
    const portal = new PageSession(t, await pathOf(t, 'portal', c.id, c.token))
    assert.equal(await stateOf(t, portal.path), 'created')
    const res = await portal.get(`/invoices/${activation.id}`)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(
      await stateOf(t, portal.path),
      'logged_in',
      'opening a document first logs the session in, as the portal does',
    )
    assert.match(String(res.headers['content-type']), /^text\/html; charset=utf-8/)
    // Its one style is inside the document, allowed by its hash; nothing else may load or run.
    const csp = String(res.headers['content-security-policy'])
    assert.match(
      csp,
      /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+=*'; img-src 'none'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'$/,
    )
    assert.equal(res.headers['x-frame-options'], 'DENY')
    assert.equal(res.headers['cache-control'], 'no-store')
    assert.equal(res.headers['content-disposition'], undefined)
    assert.doesNotMatch(res.body, /<script/i)
    assert.match(res.body, /@media print/)
    const body = text(res.body)
    assert.match(
      body,
      new RegExp(
        `Invoice Invoice number ${activation.id} Date of issue 1 April 2027 Due date 1 April 2027 Billing period 1 April 2027 – 30 April 2027 Status Paid on 1 April 2027`,
      ),
    )
    assert.match(
      body,
      /Seller Rossi &lt;b&gt;S\.r\.l\.&lt;\/b&gt; Via Roma 1 20121 Milano MI Italy VAT number: IT01234567890/,
    )
    assert.match(
      body,
      /Bill to &lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt; &amp; &#39;Acme&#39; Via Verdi 2 10121 Torino \(TO\) Italy Tax code: RSSMRA80A01L219X/,
    )
    assert.match(body, /Description Quantity Unit price per term VAT Amount Gold 1 €30\.00 22% €30\.00/)
    assert.match(body, /Subtotal €30\.00 VAT IT 22% on €30\.00 €6\.60 Total €36\.60 Paid -€36\.60 Amount due €0\.00/)
    assert.doesNotMatch(body, /Reverse charge/)
    // In the portal: the way back and the hint to print it as a PDF (not printed: .tools).
    assert.match(
      res.body,
      new RegExp(`<nav class="tools"[^>]*><p><a href="${portal.path}">Back to your subscription</a>`),
    )
    assert.match(body, /use your browser&#39;s Print command and choose &quot;Save as PDF&quot;/)

    // The change: prorated Silver, paid from the credit.
    const changed = text((await portal.get(`/invoices/${change.id}`)).body)
    assert.match(changed, /Silver prorated for the part of the term billed 1 €15\.00 22% €13\.00/)
    assert.match(
      changed,
      /Subtotal €13\.00 VAT IT 22% on €13\.00 €2\.86 Total €15\.86 Credits applied -€15\.86 Amount due €0\.00/,
    )

    const file = await portal.get(`/invoices/${activation.id}/download`)
    assert.equal(file.statusCode, 200, file.body)
    assert.equal(file.headers['content-disposition'], `attachment; filename="invoice-${activation.id}.html"`)
    assert.match(text(file.body), /Total €36\.60/)
    // A file is forwarded as a link must not be: it carries no link at all, so not the portal's token.
    assert.doesNotMatch(file.body, /<a |href=/)
    assert.ok(!file.body.includes(portal.path.split('/').pop()!))
  })

  it('prints a reverse-charged invoice with both VAT numbers and the mention, in English and Italian', async () => {
    const [activation] = await invoicesOf(t, de)
    assert.deepEqual(
      activation.taxes.map((x: any) => [x.name, x.rate]),
      [['Reverse charge', 0]],
    )
    const path = await pathOf(t, 'portal', de.id, de.token)
    const en = text((await new PageSession(t, path).get(`/invoices/${activation.id}`)).body)
    assert.match(en, /Germany VAT number: DE123456789/)
    assert.match(en, /Gold 1 €30\.00 Reverse charge €30\.00/)
    assert.match(en, /Subtotal €30\.00 VAT: Reverse charge €0\.00 Total €30\.00/)
    assert.match(en, /Reverse charge: VAT to be accounted for by the customer/)
    assert.match(en, /VAT number: IT01234567890/)
    const itPage = await new PageSession(t, path, 'it').get(`/invoices/${activation.id}/download`)
    assert.equal(itPage.headers['content-disposition'], `attachment; filename="fattura-${activation.id}.html"`)
    const it = text(itPage.body)
    assert.match(it, /Fattura Numero fattura/)
    assert.match(it, /Cliente .* Germania Partita IVA: DE123456789/)
    assert.match(it, /Gold 1 30,00 € Inversione contabile 30,00 €/)
    assert.match(it, /Inversione contabile: IVA a carico del cliente/)
    assert.match(it, /Pagata il 1 aprile 2027/)
  })

  it("shows an invoice only to its company's portal: another company's id, an unknown one or no id is a 404 page", async () => {
    const [theirs] = await invoicesOf(t, de)
    const [mine] = await invoicesOf(t, c)
    const portal = new PageSession(t, await pathOf(t, 'portal', c.id, c.token))
    for (const suffix of [
      `/invoices/${theirs.id}`,
      `/invoices/${theirs.id}/download`,
      '/invoices/00000000-0000-4000-8000-000000000000',
      '/invoices/not-an-id',
      `/invoices/${mine.id}x`,
    ]) {
      const res = await portal.get(suffix)
      assertHtml(res, 404)
      assert.match(res.body, /This invoice does not exist, or it is not one of yours\./, suffix)
      assert.ok(!res.body.includes(theirs.id))
    }
    const italian = await new PageSession(t, portal.path, 'it').get(`/invoices/${theirs.id}`)
    assertHtml(italian, 404)
    assert.match(italian.body, /Questa fattura non esiste, o non è tra le tue\./)
    // The same id through the company's own portal is served.
    assert.equal(
      (await new PageSession(t, await pathOf(t, 'portal', de.id, de.token)).get(`/invoices/${theirs.id}`)).statusCode,
      200,
    )
  })

  it('refuses the documents with the portal: unknown token, another kind of page, logged out, expired, disabled company', async () => {
    const [mine] = await invoicesOf(t, c)
    const unknown = await t.app.inject({ method: 'GET', url: `/hosted/portal/${'A'.repeat(43)}/invoices/${mine.id}` })
    assertHtml(unknown, 404)
    const manager = await pathOf(t, 'manager', c.id, c.token)
    assertHtml(
      await t.app.inject({ method: 'GET', url: `${manager.replace('/manager/', '/portal/')}/invoices/${mine.id}` }),
      404,
    )

    const portal = new PageSession(t, await pathOf(t, 'portal', c.id, c.token))
    await portal.get()
    assert.equal((await portal.post('logout')).statusCode, 303)
    assertHtml(await portal.get(`/invoices/${mine.id}`), 409)
    assertHtml(await portal.get(`/invoices/${mine.id}/download`), 409)

    const later = new PageSession(t, await pathOf(t, 'portal', c.id, c.token))
    t.clock.advance(3601 * 1000)
    assertHtml(await later.get(`/invoices/${mine.id}`), 410)

    const other = await billedCompany(t)
    const page = new PageSession(t, await pathOf(t, 'portal', other.id, other.token))
    await t.json(202, { method: 'PUT', url: `/api/v1/companies/${other.id}` })
    assertHtml(await page.get(`/invoices/${mine.id}`), 403)
  })

  // Last: it moves the clock three years on, renewing every company of this app.
  it('lists the 36 newest invoices on the portal and pages through all of them, newest first; a forged cursor is a 400 page', async () => {
    const long = await billedCompany(t, {
      start: '2027-06-02T00:00:00.000Z',
      plans: { basic: { price: 10, name: 'Basic', features: [] } },
      company: { plan_quantity: 1 },
    })
    await setCard(t, long.id)
    for (let month = 0; month < 37; month++) await at(t, new Date(Date.UTC(2027, 6 + month, 2)).toISOString())
    const all = await invoicesOf(t, long)
    assert.equal(all.length, 37)
    const portal = new PageSession(t, await pathOf(t, 'portal', long.id, long.token))
    const view = await portal.get()
    assertHtml(view, 200)
    const listed = [...view.body.matchAll(/<tr data-invoice="([^"]+)">/g)].map((m) => m[1])
    assert.deepEqual(
      listed,
      all.slice(0, 36).map((i: any) => i.id),
    )
    const link = /<a id="all-invoices" href="([^"]+)">All your invoices<\/a>/.exec(view.body)?.[1]
    assert.equal(link, `${portal.path}/invoices?limit=36`)

    const seen: string[] = []
    let next: string | undefined = `${portal.path}/invoices?limit=10`
    while (next) {
      const res: LightMyRequestResponse = await t.app.inject({ method: 'GET', url: next.replace(/&amp;/g, '&') })
      assertHtml(res, 200)
      seen.push(...[...res.body.matchAll(/<tr data-invoice="([^"]+)">/g)].map((m) => m[1]!))
      next = /<a id="older-invoices" href="([^"]+)">Older invoices<\/a>/.exec(res.body)?.[1]
    }
    assert.deepEqual(
      seen,
      all.map((i: any) => i.id),
      'four pages, every invoice once, newest first',
    )

    const forged = await new PageSession(t, portal.path, 'it').get(
      `/invoices?limit=10&cursor=${Buffer.from('{"f":"x","p":2,"k":[]}').toString('base64url')}`,
    )
    assertHtml(forged, 400)
    assert.match(forged.body, /La richiesta non è valida: querystring\/cursor/)
    assertHtml(await portal.get('/invoices?limit=0'), 400)
  })
})
