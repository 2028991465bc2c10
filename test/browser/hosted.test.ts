import { describe, it, before, beforeEach, after } from 'node:test'
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type Page } from 'playwright-core'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { forEachEngine } from '../helpers/engine-suites.ts'
import { CHROMIUM, has, requires } from '../helpers/requires.ts'
import { at, billedCompany, json, setCard, statusOf, SUB, type BillingFixture } from '../subscriptions-helpers.ts'

/**
 * The hosted pages in a real browser (Debian's Chromium through playwright-core), end to end
 * against the app listening on 127.0.0.1: what the HTTP tests cannot see (forms really posted
 * under the Content-Security-Policy, cookies, the 303 to the redirect URL, labels and keyboard).
 */
// Without Chromium each test shows as skipped with the reason (under CI=true: the run fails), and
// the hooks, which node runs even when every test of their suite is skipped, do nothing.
const chromiumTest = requires('chromium')

let browser: Browser | undefined

describe('hosted pages in a browser', () => {
  before(async () => {
    if (!has('chromium')) return
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
  })
  after(async () => {
    await browser?.close()
  })

  // Its own hooks: they build nothing where Chromium is missing.
  forEachEngine(
    (engine) => `on ${engine}`,
    (engine) => {
      let t: TestApp
      let c: BillingFixture
      let origin: string
      /** Where finished pages send the browser: a page of the app itself, so the navigation ends somewhere real. */
      let back: string

      before(async () => {
        if (!has('chromium')) return
        t = await buildTestApp(engine, { REDIRECT_ALLOWED_HOSTS: '127.0.0.1', HOSTED_PAGE_TTL_SECONDS: 3600 })
        await t.app.listen({ port: 0, host: '127.0.0.1' })
        origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
        back = `${origin}/health`
      })
      // Each test on a company of its own, made at the same time of the clock: none reads what
      // another changed (plan, card, status) or where another left the clock.
      beforeEach(async () => {
        if (!has('chromium')) return
        c = await billedCompany(t, {
          start: '2026-03-02T09:00:00Z',
          plans: { basic: { price: 29.9, name: 'Basic' }, pro: { price: 49.9, name: 'Pro' } },
        })
      })
      after(async () => {
        await t?.close()
      })

      /** Opens a page through the API over real HTTP, as the customer's application would. */
      async function pageUrl(kind: 'manager_page' | 'portal' | 'payment_page', language = 'en-GB') {
        const res = await fetch(`${origin}${SUB}/${c.id}/${kind}/?redirect_url=${encodeURIComponent(back)}`, {
          headers: { authorization: `Bearer ${c.token}` },
        })
        assert.equal(res.status, 200, await res.clone().text())
        const body = (await res.json()) as { url?: string; access_url?: string }
        return { url: (body.url ?? body.access_url)!, language }
      }

      async function withPage<T>(language: string, fn: (page: Page) => Promise<T>): Promise<T> {
        const context = await browser!.newContext({ locale: language })
        try {
          const page = await context.newPage()
          page.setDefaultTimeout(10_000)
          return await fn(page)
        } finally {
          await context.close()
        }
      }

      const backed = (url: URL) => url.pathname === '/health'

      it('chooses a plan, sees the estimate, confirms, and the company changes', chromiumTest, async () => {
        const { url } = await pageUrl('manager_page')
        await withPage('en-GB', async (page) => {
          const res = await page.goto(url)
          assert.equal(res?.status(), 200)
          assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Choose your plan')
          await page.getByLabel(/^Pro — /).check()
          await page.getByLabel('Number of users').fill('3')
          await page.getByRole('button', { name: 'See the cost of the change' }).click()
          await page.getByRole('heading', { name: 'Cost of the change' }).waitFor()
          // 3 × 49.90 = 149.70 + 22 % VAT = 182.63, billed at the trial's end.
          assert.match((await page.locator('tfoot').textContent()) ?? '', /€182\.63/)
          await page.getByRole('button', { name: 'Confirm the change' }).click()
          await page.waitForURL(backed)
          assert.equal(new URL(page.url()).searchParams.get('state'), 'succeeded')
        })
        const company = await json(t, 200, { url: `/api/v1/companies/${c.id}` })
        assert.equal(company.subscription_plan, c.plans.pro)
        assert.equal(company.plan_quantity, 3)
      })

      it('adds a card with the keyboard, and the trial ends into active', chromiumTest, async () => {
        const { url } = await pageUrl('payment_page')
        await withPage('en-GB', async (page) => {
          await page.goto(url)
          await page.getByLabel('Card number').fill('4111 1111 1111 1112')
          await page.getByLabel('Month (1-12)').fill('10')
          await page.getByLabel('Year (YYYY)').fill('2030')
          await page.getByRole('button', { name: 'Save the card' }).click()
          assert.match((await page.getByRole('alert').textContent()) ?? '', /card number is not valid/)
          assert.equal(await page.getByLabel('Card number').getAttribute('aria-invalid'), 'true')
          assert.equal(await page.getByLabel('Card number').inputValue(), '', 'the refused number is not shown again')
          await page.getByLabel('Card number').focus()
          await page.keyboard.type('4111 1111 1111 1111')
          await page.keyboard.press('Tab')
          await page.keyboard.press('Tab')
          await page.keyboard.press('Enter')
          await page.waitForURL(backed)
        })
        const details = await json(t, 200, { url: `${SUB}/${c.id}/details` })
        assert.deepEqual(details.customer.payment_method, {
          type: 'card',
          brand: 'visa',
          last4: '1111',
          expiry_month: 10,
          expiry_year: 2030,
        })
        await at(t, new Date(details.subscription.trial_end * 1000 + 1000).toISOString())
        assert.equal((await statusOf(t, c)).status, 'active')
      })

      it('cancels at the end of the term and undoes it in the portal, then logs out', chromiumTest, async () => {
        // An active subscription with a card: the card given, the trial ended.
        await setCard(t, c.id, { brand: 'visa', last4: '1111', expiry_month: 10, expiry_year: 2030 })
        const trialEnd = (await json(t, 200, { url: `${SUB}/${c.id}/details` })).subscription.trial_end
        await at(t, new Date(trialEnd * 1000 + 1000).toISOString())
        assert.equal((await statusOf(t, c)).status, 'active')
        const { url } = await pageUrl('portal')
        await withPage('en-GB', async (page) => {
          await page.goto(url)
          assert.equal(await page.locator('#status').textContent(), 'Active')
          assert.match((await page.locator('#card').textContent()) ?? '', /visa ending in 1111/)
          await page.getByRole('button', { name: 'Cancel at the end of the term' }).click()
          assert.match((await page.getByRole('status').textContent()) ?? '', /Your subscription will end on/)
          assert.equal(await page.locator('#status').textContent(), 'Ending at the end of the term')
          assert.equal((await statusOf(t, c)).status, 'non_renewing')
          await page.getByRole('button', { name: 'Undo the cancellation' }).click()
          assert.match((await page.getByRole('status').textContent()) ?? '', /cancellation has been undone/)
          assert.equal((await statusOf(t, c)).status, 'active')
          await page.getByRole('button', { name: 'Log out' }).click()
          await page.waitForURL(backed)
          const again = await page.goto(url)
          assert.equal(again?.status(), 409)
        })
      })

      it(
        'lists the invoices in the portal, opens one as a printable invoice (inline style allowed, tools not printed), prints it as a PDF and downloads it',
        chromiumTest,
        async () => {
          // The trial ends into active with a card: the first invoice, Basic × 5 = 149.50 + 22 % VAT = 182.39.
          await setCard(t, c.id, { brand: 'visa', last4: '1111', expiry_month: 10, expiry_year: 2030 })
          const trialEnd = (await json(t, 200, { url: `${SUB}/${c.id}/details` })).subscription.trial_end
          await at(t, new Date(trialEnd * 1000 + 1000).toISOString())
          const [invoice] = await json(t, 200, { url: `${SUB}/${c.id}/invoices` })
          const { url } = await pageUrl('portal')
          await withPage('en-GB', async (page) => {
            const refused: string[] = []
            page.on('console', (message) => {
              if (/Content Security Policy/i.test(message.text())) refused.push(message.text())
            })
            await page.goto(url)
            const row = page.locator(`tr[data-invoice="${invoice.id}"]`)
            assert.match((await row.textContent()) ?? '', /€182\.39[\s\S]*€0\.00[\s\S]*Paid/)
            await row.getByRole('link', { name: /^View and print invoice of / }).click()
            await page.getByRole('heading', { level: 1, name: 'Invoice' }).waitFor()
            assert.equal(await page.locator('#invoice-number').textContent(), invoice.id)
            assert.match((await page.locator('#totals').textContent()) ?? '', /Total\s*€182\.39/)
            // The document's own style applies (the policy allows it by its hash): the totals are right-aligned.
            assert.equal(
              await page
                .locator('#totals td.amount')
                .first()
                .evaluate((cell) => getComputedStyle(cell).textAlign),
              'right',
            )
            assert.equal(await page.locator('nav.tools').isVisible(), true)
            await page.emulateMedia({ media: 'print' })
            assert.equal(await page.locator('nav.tools').isVisible(), false, "the portal's links are not printed")
            const pdf = await page.pdf({ format: 'A4' })
            assert.equal(pdf.subarray(0, 5).toString('latin1'), '%PDF-')
            await page.emulateMedia({ media: 'screen' })

            const [download] = await Promise.all([
              page.waitForEvent('download'),
              page.getByRole('link', { name: 'Download' }).click(),
            ])
            assert.equal(download.suggestedFilename(), `invoice-${invoice.id}.html`)
            await page.getByRole('link', { name: 'Back to your subscription' }).click()
            await page.getByRole('heading', { level: 1, name: 'Your subscription' }).waitFor()
            assert.deepEqual(refused, [])
          })
        },
      )

      it("refuses an expired link with a page in the customer's language", chromiumTest, async () => {
        const { url } = await pageUrl('manager_page')
        t.clock.advance(3601 * 1000)
        await withPage('it-IT', async (page) => {
          const res = await page.goto(url)
          assert.equal(res?.status(), 410)
          assert.equal(await page.locator('html').getAttribute('lang'), 'it')
          assert.match((await page.getByRole('alert').textContent()) ?? '', /link è scaduto/)
        })
      })
    },
  )
})
