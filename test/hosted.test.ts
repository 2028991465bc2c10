import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { buildTestApp } from './helpers/app.ts'
import { companyClient } from './helpers/factories.ts'
import { billedCompany, type BillingFixture } from './subscriptions-helpers.ts'
import { ALLOWED, BACK, KINDS, open, type Kind } from './hosted-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

// Without PUBLIC_BASE_URL, pages are served on the listening address: HOST 0.0.0.0 → 127.0.0.1, PORT 8080 by default.
const TOKEN_URL = (kind: string) => new RegExp(`^http://127\\.0\\.0\\.1:8080/hosted/${kind}/[A-Za-z0-9_-]{43}$`)

/** Redirect URLs that must be refused (400) without being repeated anywhere in the answer. */
const REFUSED = [
  'https://evil.example/cb',
  '//evil.example/cb',
  'https://app.example.com@evil.example/',
  'https://app.example.com.evil.example/',
  'javascript:alert(1)',
  'data:text/html,evil',
  'http://app.example.com/cb',
  'https:\\\\evil.example',
  'https://app.example.com\\@evil.example',
  'https://app.example.com/cb%0d%0aSet-Cookie:evil=1',
  'https://app.example.com/cb\r\nX: evil',
  'https://user:pw@app.example.com/',
  'ftp://app.example.com/',
  'app.example.com/cb',
  '/relative/evil',
  'https://evil.example#app.example.com',
  ' https://app.example.com/',
]

onEachEngine(
  'hosted pages, endpoints 1, 10, 11',
  { REDIRECT_ALLOWED_HOSTS: ALLOWED, HOSTED_PAGE_TTL_SECONDS: 1800 },
  (t, engine) => {
    let a: BillingFixture
    let b: BillingFixture
    before(async () => {
      a = await billedCompany(t, { plans: { basic: { price: 29.9 }, pro: { price: 49.9 } } })
      b = await billedCompany(t)
    })

    it('1 answers a SubscriptionManagerPage', async () => {
      const res = await open(t, 'manager', a.id, a.token)
      assert.equal(res.statusCode, 200, res.body)
      const body = res.json()
      assert.deepEqual(Object.keys(body).sort(), ['expires_at', 'url'])
      assert.match(body.url, TOKEN_URL('manager'))
      assert.equal(body.expires_at, Math.floor(t.clock.now().getTime() / 1000) + 1800)
    })

    it('10 answers a PortalSession for the customer (the company)', async () => {
      const body = (await open(t, 'portal', a.id, a.token)).json()
      assert.deepEqual(Object.keys(body).sort(), [
        'access_url',
        'created_at',
        'customer_id',
        'expires_at',
        'id',
        'object',
        'redirect_url',
        'status',
        'token',
      ])
      const now = Math.floor(t.clock.now().getTime() / 1000)
      assert.deepEqual(
        { ...body, id: '', token: '', access_url: '' },
        {
          id: '',
          token: '',
          access_url: '',
          status: 'created',
          redirect_url: BACK,
          object: 'portal_session',
          customer_id: a.id,
          created_at: now,
          expires_at: now + 1800,
        },
      )
      assert.match(body.access_url, TOKEN_URL('portal'))
      assert.ok(body.access_url.endsWith(`/${body.token}`), 'the access URL embeds the token')
    })

    it('11 answers a HostedPage in state created', async () => {
      const body = (await open(t, 'payment', a.id, a.token)).json()
      const now = Math.floor(t.clock.now().getTime() / 1000)
      assert.match(body.url, TOKEN_URL('payment'))
      assert.equal(typeof body.resource_version, 'number')
      assert.match(body.id, /^[0-9a-f-]{36}$/)
      assert.deepEqual(
        { ...body, url: '', id: '', resource_version: 0 },
        {
          url: '',
          id: '',
          resource_version: 0,
          updated_at: now,
          created_at: now,
          expires_at: now + 1800,
          type: 'manage_payment_sources',
          state: 'created',
          object: 'hosted_page',
          embed: false,
        },
      )
    })

    it("stores only the hash of a page's token, and each page has its own", async () => {
      const first = (await open(t, 'portal', a.id, a.token)).json()
      const second = (await open(t, 'portal', a.id, a.token)).json()
      assert.notEqual(first.token, second.token)
      const rows = await t.app.database.db
        .selectFrom('hosted_pages')
        .selectAll()
        .where('company_id', '=', a.id)
        .execute()
      assert.ok(rows.length >= 2)
      for (const row of rows)
        assert.ok(
          !Object.values(row)
            .map(String)
            .some((v) => v.includes(first.token) || v.includes(second.token)),
        )
    })

    it('accepts http only on localhost and 127.0.0.1, and normalises the URL', async () => {
      for (const url of ['http://localhost:3000/back', 'http://127.0.0.1/back?x=1', 'https://APP.example.com/a/../b']) {
        const res = await open(t, 'portal', a.id, a.token, url)
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
        assert.equal(res.json().redirect_url, new URL(url).href)
      }
    })

    for (const kind of Object.keys(KINDS) as Kind[]) {
      it(`${kind}: refuses every redirect URL outside the allow-list with 400, never echoing it`, async () => {
        for (const url of REFUSED) {
          const res = await open(t, kind, a.id, a.token, url)
          assert.equal(res.statusCode, 400, `${JSON.stringify(url)}: ${res.body}`)
          assert.match(res.json().errors, /^querystring\/redirect_url /)
          assert.ok(!res.body.includes('evil'), `${JSON.stringify(url)} is not repeated: ${res.body}`)
          assert.equal(res.headers.location, undefined)
        }
        const missing = await open(t, kind, a.id, a.token, null)
        assert.equal(missing.statusCode, 400)
        assert.equal(missing.json().errors, 'querystring/redirect_url is required')
      })

      it(`${kind}: 401 without a valid token, 403 without write:company`, async () => {
        assert.equal((await open(t, kind, a.id, null)).statusCode, 401)
        assert.equal((await open(t, kind, a.id, 'not-a-token')).statusCode, 401)
        const reader = await companyClient(t, a.id, ['read:company'])
        const res = await open(t, kind, a.id, await t.tokenFor(reader.client_id, reader.client_secret))
        assert.equal(res.statusCode, 403, res.body)
        assert.equal(res.json().code, 'insufficient_scope')
      })

      it(`${kind}: 404 for an unknown company and for another company's, nothing stored`, async () => {
        const count = async () =>
          (
            await t.app.database.db
              .selectFrom('hosted_pages')
              .select((e) => e.fn.countAll<string>().as('n'))
              .executeTakeFirstOrThrow()
          ).n
        const before = await count()
        const unknown = await open(t, kind, randomUUID(), t.platformToken)
        assert.equal(unknown.statusCode, 404, unknown.body)
        const foreign = await open(t, kind, b.id, a.token)
        assert.equal(foreign.statusCode, 404, foreign.body)
        assert.equal(foreign.json().errors, 'Company not found')
        // Refused before the query is read: a bad redirect on another company's path is still a 404.
        assert.equal((await open(t, kind, b.id, a.token, 'https://evil.example')).statusCode, 404)
        assert.equal(await count(), before)
        // The platform may open any company's page.
        assert.equal((await open(t, kind, b.id, t.platformToken)).statusCode, 200)
      })
    }

    for (const kind of Object.keys(KINDS) as Kind[]) {
      it(`${kind}: builds the page URL from the listening address, never from the request's Host, and answers with no-store`, async () => {
        for (const host of ['evil.example', 'evil.example:443', 'app.example.com']) {
          const res = await t.call({
            url: `/api/v1/subscription/${a.id}/${KINDS[kind]}/`,
            token: a.token,
            query: { redirect_url: BACK },
            headers: { host, 'x-forwarded-host': 'evil.example' },
          })
          assert.equal(res.statusCode, 200, res.body)
          assert.ok(!res.body.includes('evil.example'), `${host}: ${res.body}`)
          const url = res.json()[kind === 'portal' ? 'access_url' : 'url']
          assert.ok(!url.includes(host), `${host}: ${url}`)
          assert.match(url, TOKEN_URL(kind))
          assert.equal(res.headers['cache-control'], 'no-store')
        }
        // Refusals carry no URL, but nothing on these routes is kept by a cache.
        assert.equal((await open(t, kind, a.id, a.token, 'https://evil.example/')).headers['cache-control'], 'no-store')
      })
    }

    it('builds page URLs on PUBLIC_BASE_URL when it is set', async () => {
      const other = await buildTestApp(engine, {
        REDIRECT_ALLOWED_HOSTS: ALLOWED,
        PUBLIC_BASE_URL: 'https://billing.example.com/',
      })
      try {
        const c = await billedCompany(other)
        for (const kind of Object.keys(KINDS) as Kind[]) {
          const res = await other.call({
            url: `/api/v1/subscription/${c.id}/${KINDS[kind]}/`,
            token: c.token,
            query: { redirect_url: BACK },
            headers: { host: 'evil.example' },
          })
          assert.equal(res.statusCode, 200, res.body)
          assert.match(
            res.json()[kind === 'portal' ? 'access_url' : 'url'],
            new RegExp(`^https://billing\\.example\\.com/hosted/${kind}/[A-Za-z0-9_-]{43}$`),
          )
        }
      } finally {
        await other.close()
      }
    })

    it('documents 1, 10 and 11 and hides the /hosted/ pages', async () => {
      const doc = await t.json(200, { url: '/openapi.json', token: null })
      const paths = Object.keys(doc.paths)
      for (const p of [
        '/api/v1/subscription/{company_id}/manager_page',
        '/api/v1/subscription/{subscription_customer_id}/portal',
        '/api/v1/subscription/{subscription_customer_id}/payment_page',
      ]) {
        assert.ok(paths.includes(p), `${p} is documented`)
        assert.ok(doc.paths[p].get.responses['200'], `${p} documents its 200`)
      }
      assert.deepEqual(
        paths.filter((p) => p.startsWith('/hosted')),
        [],
      )
    })
  },
)
