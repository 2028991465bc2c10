import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser } from 'playwright-core'
import { ADMIN, buildTestApp, engines, type TestApp } from '../helpers/app.ts'
import { CHROMIUM, has, requires } from '../helpers/requires.ts'
import { API_TITLE } from '../../src/http/openapi.ts'

/**
 * The API reference page at /docs in a real browser (Debian's Chromium through playwright-core),
 * with every request to anything but the service aborted and recorded: the page must be whole
 * from the service alone (no fonts, scripts, badges or analytics from elsewhere), titled after
 * it, free of third-party controls, and show every operation and schema of /openapi.json.
 * The page does not read the database: one engine is enough.
 */
const chromiumTest = requires('chromium')

describe('the /docs page in a browser', () => {
  let browser: Browser | undefined
  let t: TestApp
  let origin: string

  before(async () => {
    t = await buildTestApp(engines[0] ?? 'pglite')
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`
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
    await t?.close()
  })

  /** A browser context where every request to anything but the service is aborted, and listed in `elsewhere`. */
  async function offlineContext() {
    const context = await browser!.newContext()
    const elsewhere: string[] = []
    await context.route('**/*', (route) => {
      if (new URL(route.request().url()).origin === origin) return route.continue()
      elsewhere.push(route.request().url())
      return route.abort('blockedbyclient')
    })
    return { context, elsewhere }
  }

  it(
    'is whole from the service, titled after it, with every operation and schema and no third-party control',
    chromiumTest,
    async () => {
      const { context, elsewhere } = await offlineContext()
      const problems: string[] = []
      try {
        const page = await context.newPage()
        page.setDefaultTimeout(60_000)
        // A script error or a request refused by the page's Content-Security-Policy shows here.
        page.on('pageerror', (err) => problems.push(`page error: ${err.message}`))
        page.on('console', (message) => {
          if (message.type() === 'error') problems.push(`console: ${message.text()}`)
        })
        page.on('response', (res) => {
          if (res.status() >= 400) problems.push(`${res.status()} ${res.url()}`)
        })

        const res = await page.goto(`${origin}/docs`)
        assert.equal(res?.status(), 200)
        await page.locator('.opblock').first().waitFor()
        await page.waitForLoadState('networkidle')
        assert.equal(await page.title(), `${API_TITLE} — reference`)

        const doc = await t.json(200, { url: '/openapi.json', token: null })
        const operations = Object.values(doc.paths as Record<string, Record<string, unknown>>).flatMap((item) =>
          Object.keys(item).filter((k) => ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(k)),
        )
        assert.ok(operations.length > 50, `only ${operations.length} operations in /openapi.json`)
        assert.equal(
          await page.locator('.opblock').count(),
          operations.length,
          'every operation of /openapi.json is listed',
        )
        await page.getByRole('heading', { name: 'OAuth' }).first().waitFor()
        assert.ok((await page.locator('.opblock-summary-path', { hasText: /^\/oauth\/token$/ }).count()) >= 1)
        const schemas = Object.keys(doc.components.schemas as Record<string, unknown>)
        assert.ok(schemas.length > 10, `only ${schemas.length} schemas in /openapi.json`)
        assert.equal(
          await page.locator('.models .json-schema-2020-12-accordion .json-schema-2020-12__title').count(),
          schemas.length,
          'every schema of /openapi.json is listed',
        )

        // An operation opens to its parameters and answers.
        await page
          .locator('.opblock-summary-path', { hasText: /^\/oauth\/token$/ })
          .first()
          .click()
        await page.locator('.opblock.is-open .responses-table').first().waitFor()

        for (const control of ['Ask AI', 'Generate MCP', 'Deploy', 'Share']) {
          assert.equal(await page.getByText(control, { exact: true }).count(), 0, `"${control}" is on the page`)
        }
        assert.equal(await page.getByText(/Scalar|swagger\.io|validator/i).count(), 0, 'no third-party name or badge')
        // Links and forms lead to the service or within the page, nowhere else.
        const targets = await page
          .locator('a[href], form[action]')
          .evaluateAll((els) => els.map((el) => (el as HTMLAnchorElement).href || (el as HTMLFormElement).action))
        assert.deepEqual(
          targets.filter((href) => new URL(href).origin !== origin),
          [],
          'links to elsewhere',
        )

        const icon = await page.locator('link[rel="icon"]').getAttribute('href')
        assert.ok(icon, 'the page names its icon')
        const favicon = await page.request.get(new URL(icon, origin).toString())
        assert.equal(favicon.status(), 200)
        assert.equal(favicon.headers()['content-type'], 'image/png')

        assert.deepEqual(elsewhere, [], 'requests to anything but the service')
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    },
  )

  it(
    'is a console that works offline: a token from the Authorize dialog, then a request sent with it',
    chromiumTest,
    async () => {
      const { context, elsewhere } = await offlineContext()
      try {
        const page = await context.newPage()
        page.setDefaultTimeout(60_000)
        await page.goto(`${origin}/docs`)
        await page.locator('.opblock').first().waitFor()

        // A platform client's credentials, in the one scheme the dialog offers (client credentials,
        // with the scopes the routes use): the dialog posts them to /oauth/token.
        await page.getByRole('button', { name: 'Authorize' }).first().click()
        const scheme = page.locator('.modal-ux .auth-container', { hasText: 'A token from POST /oauth/token' })
        await scheme.waitFor()
        assert.equal(
          await page.locator('.modal-ux .auth-container').count(),
          1,
          'the dialog offers the client-credentials flow only',
        )
        assert.equal(await page.locator('.modal-ux').getByText('Basic authorization').count(), 0)
        assert.equal(
          (await scheme.locator('.scopes input[type=checkbox], .checkbox input').count()) > 0,
          true,
          'the scopes are offered',
        )
        assert.equal(await scheme.getByText('write:stamping').count(), 0, 'a scope no route uses is not offered')
        await scheme.locator('#client_id_clientCredentials').fill(ADMIN.client_id)
        await scheme.locator('#client_secret_clientCredentials').fill(ADMIN.client_secret)
        const token = page.waitForResponse((res) => new URL(res.url()).pathname === '/oauth/token')
        await scheme.getByRole('button', { name: 'Apply given OAuth2 credentials' }).click()
        assert.equal((await token).status(), 200)
        await scheme.getByRole('button', { name: 'Remove authorization' }).waitFor()
        await page.locator('.modal-ux').getByRole('button', { name: 'Close' }).first().click()

        // The list of companies, tried out with that token.
        const operation = page.locator('#operations-Companies-listCompanies')
        await operation.locator('.opblock-summary').first().click()
        await operation.getByRole('button', { name: 'Try it out' }).click()
        const answer = page.waitForResponse((res) => new URL(res.url()).pathname === '/api/v1/companies')
        await operation.getByRole('button', { name: 'Execute' }).click()
        const res = await answer
        assert.equal(res.status(), 200, await res.text())
        assert.match(res.request().headers().authorization ?? '', /^Bearer ey/)
        assert.equal(
          (await operation.locator('.live-responses-table tbody .response-col_status').first().textContent())?.trim(),
          '200',
        )
        assert.deepEqual(elsewhere, [])
      } finally {
        await context.close()
      }
    },
  )

  it('answers an unknown file under /docs with the usual 404, and sends the page with its policy', async () => {
    const missing = await fetch(`${origin}/docs/index.html`)
    assert.equal(missing.status, 404)
    assert.deepEqual(await missing.json(), { errors: 'No route GET /docs/index.html', code: 'not_found' })
    const page = await fetch(`${origin}/docs/`)
    assert.equal(page.status, 200)
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'.*script-src 'self'/)
    const script = await fetch(`${origin}/docs/swagger-ui-bundle.js`)
    assert.equal(script.status, 200)
    assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/)
  })
})
