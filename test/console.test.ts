import { it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import axe from 'axe-core'
import { ADMIN, buildTestApp, engines, type TestApp } from './helpers/app.ts'
import { forEachEngine } from './helpers/engine-suites.ts'
import { CHROMIUM, has, requires } from './helpers/requires.ts'
import { at, billedCompany, json, SUB, setCard } from './subscriptions-helpers.ts'
import { buildConsole, CONSOLE_SCRIPT_BUDGET, consoleScriptBytes } from '../scripts/build-console.mjs'

/**
 * The operator's console (/console) in a real browser (Debian's Chromium through playwright-core)
 * against the app listening on 127.0.0.1, with every request elsewhere aborted: sign-in by
 * keyboard, finding a company, recording a payment behind its confirmation, a downgrade at the
 * term's end, a refund, the test clock and the dashboard's figures against the API's, the API's
 * sentences on a wrong secret and a failed call, and axe-core on each page. Screenshots for docs/console.md.
 */
const chromiumTest = requires('chromium')
const ROOT = path.resolve(import.meta.dirname, '..')
const BUILT = path.join(ROOT, 'console/dist')
const FAILING_CARD = { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 }

let browser: Browser | undefined

before(async () => {
  // The service running from its sources serves console/dist.
  await buildConsole(BUILT)
  if (!has('chromium')) return
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  })
})
after(async () => {
  await browser?.close()
})

/**
 * axe-core's serious and critical violations on the page as it is now (its source run through
 * DevTools: a script tag would be refused by the page's policy).
 */
async function accessibilityProblems(page: Page, where: string): Promise<string[]> {
  await page.evaluate(axe.source)
  const found = (await page.evaluate(() =>
    (globalThis as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] }),
  )) as axe.AxeResults
  return found.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${where}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)
}

forEachEngine(
  (engine) => `the operator console on ${engine}`,
  (engine) => {
    let t: TestApp
    let origin: string
    let context: BrowserContext | undefined
    /** Script errors, Content-Security-Policy refusals, requests elsewhere. */
    const problems: string[] = []

    before(async () => {
      t = await buildTestApp(engine, { TEST_CLOCK_ENABLED: true })
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
      if (!browser) return
      context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: 'en-GB' })
      await context.route('**/*', (route) => {
        if (new URL(route.request().url()).origin === origin) return route.continue()
        problems.push(`request elsewhere: ${route.request().url()}`)
        return route.abort('blockedbyclient')
      })
    })
    after(async () => {
      await context?.close()
      await t?.close()
    })

    async function open(hash = ''): Promise<Page> {
      const page = await context!.newPage()
      page.setDefaultTimeout(20_000)
      page.on('pageerror', (err) => problems.push(`page error: ${err.message}`))
      page.on('console', (m) => {
        if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) problems.push(`console: ${m.text()}`)
      })
      await page.goto(`${origin}/console${hash}`)
      return page
    }

    async function signInByKeyboard(page: Page) {
      for (let i = 0; i < 6; i++) {
        await page.keyboard.press('Tab')
        if (await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name === 'client_id')) break
      }
      await page.keyboard.type(ADMIN.client_id)
      await page.keyboard.press('Tab')
      await page.keyboard.type(ADMIN.client_secret)
      await page.keyboard.press('Enter')
      await page.getByRole('button', { name: 'Sign out' }).waitFor()
    }

    it(
      'signs in by keyboard, shows the fiscal fields and why there is no FatturaPA, records a payment on an unpaid ' +
        'invoice (then paid), changes the plan after the estimate',
      chromiumTest,
      async () => {
        // Its first invoice, at the trial's end, is left payment_due: the card's charges fail.
        const start = '2026-04-01T09:00:00Z'
        const fiscal = { tax_code: '01234567897', sdi_code: 'ABC1234', pec: 'billing@pec.example.it' }
        const c = await billedCompany(t, {
          start,
          plans: { basic: { price: 100 } },
          company: { plan_quantity: 1, ...fiscal },
        })
        await setCard(t, c.id, FAILING_CARD)
        await at(t, '2026-05-01T09:00:00Z')
        const [invoice] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices` })
        assert.equal(invoice.status, 'payment_due')
        const name = (await json(t, 200, { url: `/api/v1/companies/${c.id}` })).name as string

        const page = await open()
        const a11y = await accessibilityProblems(page, 'sign-in')
        await signInByKeyboard(page)

        await page.getByRole('heading', { name: 'Dashboard' }).waitFor()

        await page.getByRole('link', { name: 'Companies' }).click()
        await page.getByRole('searchbox').fill(name)
        await page.getByRole('searchbox').press('Enter')
        await page.getByRole('link', { name }).click()
        const row = page.getByRole('row').filter({ hasText: invoice.id })
        await row.getByText('payment_due').waitFor()
        a11y.push(...(await accessibilityProblems(page, 'company')))
        if (engine === engines[0]) await page.screenshot({ path: path.join(ROOT, 'docs/console-company.png') })

        const download = page.waitForEvent('download')
        await row.getByRole('button', { name: `PDF ${invoice.id}` }).click()
        assert.equal((await download).suggestedFilename(), `invoice-${invoice.id}.pdf`)
        for (const [term, value] of [
          ['Tax code', fiscal.tax_code],
          ['SDI code', fiscal.sdi_code],
          ['PEC', fiscal.pec],
        ]) {
          const shown = page.getByRole('term').filter({ hasText: new RegExp(`^${term}$`) })
          assert.equal(await shown.locator('xpath=following-sibling::dd[1]').textContent(), value)
        }
        // No Italian seller configured: the service makes no FatturaPA document, and says why.
        const refused = await json(t, 409, { url: `${SUB}/${c.id}/invoices/${invoice.id}/fatturapa` })
        await row.getByRole('button', { name: `FatturaPA ${invoice.id}` }).click()
        await page.getByRole('alert').getByText(refused.errors, { exact: true }).waitFor()

        await row.getByRole('button', { name: `Record payment ${invoice.id}` }).click()
        const dialog = page.getByRole('dialog')
        await dialog
          .getByText(`Records an offline payment of €122.00 on invoice ${invoice.id}`, { exact: false })
          .waitFor()
        a11y.push(...(await accessibilityProblems(page, 'record-payment dialog')))
        await dialog.getByRole('button', { name: 'Confirm' }).click()
        await dialog.waitFor({ state: 'hidden' })
        await row.getByText('paid', { exact: true }).waitFor()
        const paid = await json(t, 200, { url: `${SUB}/${c.id}/invoices/${invoice.id}` })
        assert.deepEqual([paid.status, paid.amount_due, paid.recorded_payments.length], ['paid', 0, 1])

        // A plan change shows its estimate before it can be confirmed.
        await page.getByRole('button', { name: 'Change plan' }).click()
        await dialog.getByRole('spinbutton', { name: 'Quantity' }).fill('2')
        assert.equal(await dialog.getByRole('button', { name: 'Confirm' }).isDisabled(), true)
        await dialog.getByRole('button', { name: 'Show the estimate' }).click()
        await dialog.getByRole('table', { name: 'Estimate' }).getByRole('rowheader', { name: 'Total' }).waitFor()
        await dialog.getByRole('button', { name: 'Confirm' }).click()
        await dialog.waitFor({ state: 'hidden' })
        await page.getByText('Plan basic × 2').waitFor()
        assert.equal((await json(t, 200, { url: `${SUB}/${c.id}/details` })).subscription.plan_quantity, 2)

        await page.getByRole('link', { name: 'Catalogue' }).click()
        await page.getByRole('table', { name: 'Plans' }).getByText(c.planSku).waitFor()
        a11y.push(...(await accessibilityProblems(page, 'catalogue')))
        await page.getByRole('link', { name: 'Test clock' }).click()
        await page.getByText('Business time now').waitFor()
        a11y.push(...(await accessibilityProblems(page, 'test clock')))

        // Italian on request; signing out, or a new page load, leaves no token behind.
        await page.getByLabel('Language').selectOption('it')
        await page.getByRole('link', { name: 'Aziende' }).waitFor()
        await page.getByRole('button', { name: 'Esci' }).click()
        await page.getByRole('button', { name: 'Accedi' }).waitFor()
        const stored = await page.evaluate(() => localStorage.length + sessionStorage.length + document.cookie.length)
        assert.equal(stored, 0, 'nothing kept in storage or cookies')
        await page.close()

        assert.deepEqual(a11y, [], 'serious or critical accessibility violations')
        assert.deepEqual(problems, [])
      },
    )

    it('shows the API sentence for a wrong secret and for a failed call', chromiumTest, async () => {
      const page = await open('#/companies/00000000-0000-4000-8000-000000000000')
      await page.getByLabel('Client id').fill(ADMIN.client_id)
      await page.getByLabel('Client secret').fill('not-the-secret')
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('alert').getByText('Unknown client or wrong secret', { exact: true }).waitFor()

      await page.getByLabel('Client secret').fill(ADMIN.client_secret)
      await page.getByRole('button', { name: 'Sign in' }).click()
      const missing = await json(t, 404, { url: '/api/v1/companies/00000000-0000-4000-8000-000000000000' })
      assert.ok(missing.errors)
      await page.getByRole('alert').getByText(missing.errors, { exact: true }).first().waitFor()
      await page.reload()
      await page.getByRole('button', { name: 'Sign in' }).waitFor()
      await page.close()
      assert.deepEqual(problems, [])
    })

    it(
      'schedules a downgrade at the term end after its estimate, refunds a paid invoice into a credit note, ' +
        'then moves the test clock: the downgrade applies and the dashboard shows the MRR the API gives',
      chromiumTest,
      async () => {
        const c = await billedCompany(t, {
          start: '2026-06-01T09:00:00Z',
          plans: { pro: { price: 200 }, basic: { price: 100 } },
          company: { plan_quantity: 1 },
        })
        await setCard(t, c.id)
        await at(t, '2026-07-01T09:00:00Z')
        const [invoice] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices` })
        assert.deepEqual([invoice.status, invoice.total], ['paid', 24400])

        const page = await open(`#/companies/${c.id}`)
        await signInByKeyboard(page)
        const dialog = page.getByRole('dialog')
        await page.getByRole('button', { name: 'Change plan' }).click()
        await dialog.getByRole('combobox', { name: 'Plan' }).selectOption(c.plans.basic!)
        await dialog.getByRole('radio', { name: 'At the end of the term' }).check()
        assert.equal(await dialog.getByRole('button', { name: 'Confirm' }).isDisabled(), true)
        await dialog.getByRole('button', { name: 'Show the estimate' }).click()
        await dialog.getByRole('table', { name: 'Estimate' }).getByRole('rowheader', { name: 'Total' }).waitFor()
        await dialog.getByText(`Schedules ${c.plans.basic} × 1 for the end of the term`, { exact: false }).waitFor()
        await dialog.getByRole('button', { name: 'Confirm' }).click()
        await dialog.waitFor({ state: 'hidden' })
        await page
          .getByRole('definition')
          .filter({ hasText: `${c.plans.basic} × 1, 1 Aug 2026` })
          .waitFor()
        const scheduled = (await json(t, 200, { url: `${SUB}/${c.id}/details` })).subscription
        assert.deepEqual(
          [scheduled.plan_id, scheduled.scheduled_change?.subscription_plan],
          [c.plans.pro, c.plans.basic],
        )

        const row = page.getByRole('row').filter({ hasText: invoice.id })
        await row.getByRole('button', { name: `Refund ${invoice.id}` }).click()
        await dialog.getByRole('textbox', { name: 'Amount' }).fill('50')
        await dialog.getByText(`Refunds €50.00 of invoice ${invoice.id} as a refundable credit note.`).waitFor()
        const a11y = await accessibilityProblems(page, 'refund dialog')
        await dialog.getByRole('button', { name: 'Confirm' }).click()
        await dialog.waitFor({ state: 'hidden' })
        const notes = page.getByRole('table', { name: 'Credit notes' })
        await notes.getByRole('row').filter({ hasText: 'refundable' }).filter({ hasText: '€50.00' }).waitFor()
        const [note] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/credit_notes` })
        assert.deepEqual([note.reference_invoice_id, note.type, note.total], [invoice.id, 'refundable', 5000])

        await page.getByRole('link', { name: 'Test clock' }).click()
        await page.getByLabel('Advance to (UTC)').fill('2026-08-02T09:00')
        await page.getByRole('button', { name: 'Advance' }).click()
        await dialog.getByRole('button', { name: 'Confirm' }).click()
        await dialog.waitFor({ state: 'hidden' })
        await page.getByRole('definition').filter({ hasText: '2 Aug 2026, 09:00 UTC' }).waitFor()
        const renewed = (await json(t, 200, { url: `${SUB}/${c.id}/details` })).subscription
        assert.deepEqual([renewed.plan_id, renewed.scheduled_change], [c.plans.basic, null])

        const range = { from: '2026-05-01', to: '2026-08-02', interval: 'month' }
        await page.getByRole('link', { name: 'Dashboard' }).click()
        await page.getByLabel('From').fill(range.from)
        await page.getByLabel('To', { exact: true }).fill(range.to)
        await page.getByRole('button', { name: 'Show' }).click()
        const series = await json(t, 200, { url: `/api/v1/analytics/mrr?${new URLSearchParams(range)}` })
        const summary = await json(t, 200, { url: `/api/v1/analytics/summary?date=${range.to}` })
        const eur = (minor: number) =>
          new Intl.NumberFormat('en-GB', { style: 'currency', currency: 'EUR' }).format(minor / 100)
        assert.ok(summary.mrr > 0, 'the renewed subscriptions bring MRR')
        const mrrCard = page.getByRole('term').filter({ hasText: /^MRR$/ }).locator('xpath=following-sibling::dd[1]')
        await mrrCard.filter({ hasText: eur(summary.mrr) }).waitFor()
        const line = series.points.map((p: { date: string; mrr: number }) => `${p.date} ${eur(p.mrr)}`).join(', ')
        await page.getByRole('img', { name: `MRR: ${line}` }).waitFor()
        assert.equal(await page.locator('.uplot').count(), 2, 'the MRR line and the movements')
        a11y.push(...(await accessibilityProblems(page, 'dashboard')))
        if (engine === engines[0]) await page.screenshot({ path: path.join(ROOT, 'docs/console-dashboard.png') })
        await page.close()
        assert.deepEqual(a11y, [], 'serious or critical accessibility violations')
        assert.deepEqual(problems, [])
      },
    )

    it('serves the console under its policy, outside /openapi.json, within its script budget', async () => {
      const res = await fetch(`${origin}/console`)
      assert.equal(res.status, 200)
      const policy = res.headers.get('content-security-policy') ?? ''
      assert.match(policy, /default-src 'none'/)
      assert.match(policy, /script-src 'self'(;|$)/)
      assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|https?:/)
      const html = await res.text()
      assert.doesNotMatch(html, /<script>|<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|https?:\/\//)
      const script = /<script[^>]+src="([^"]+)"/.exec(html)?.[1]
      assert.ok(script)
      const js = await fetch(new URL(script, origin))
      assert.equal(js.status, 200)
      assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/)
      assert.match(js.headers.get('cache-control') ?? '', /immutable/)
      const unknown = await fetch(`${origin}/console/assets/nothing.js`)
      assert.equal(unknown.status, 404)
      assert.equal(((await unknown.json()) as { code: string }).code, 'not_found')

      const doc = await json(t, 200, { url: '/openapi.json', token: null })
      assert.deepEqual(
        Object.keys(doc.paths).filter((p) => p.startsWith('/console')),
        [],
        'the console is a page, not an API route',
      )
      const bytes = consoleScriptBytes(BUILT)
      assert.ok(bytes <= CONSOLE_SCRIPT_BUDGET, `${bytes} bytes of gzipped JavaScript`)
    })
  },
)
