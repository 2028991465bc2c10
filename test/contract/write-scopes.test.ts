import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { ADMIN } from '../helpers/app.ts'
import { company, companyClient, type CompanyFixture } from '../helpers/factories.ts'
import { ALL_SCOPE_STRINGS, READ_WRITE_AREAS } from '../../src/modules/oauth/scopes.ts'
import { onEachEngine } from '../helpers/engine-suites.ts'

/**
 * A token holding only read scopes changes nothing: walked over the OpenAPI document, so that
 * every write route added later is covered without touching this file. Every operation that is
 * not a GET (and every GET documented as needing a write: scope, such as 1, 10 and 11, which
 * open sessions able to change the subscription) answers 403 to a company token holding every
 * read scope of its company, and to a platform token narrowed to every read scope.
 */

type Operation = {
  security?: Array<Record<string, string[]>>
  'x-platform-only'?: boolean
  parameters?: Array<{ in: string; name: string; required?: boolean }>
  requestBody?: { content: Record<string, unknown> }
}
interface Route {
  method: string
  path: string
  op: Operation
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch']
// Write routes that take no bearer token at all, each with how it is protected instead. A new
// one must be added here on purpose.
const TOKENLESS = new Map([
  ['POST /oauth/token', 'the client credentials'],
  ['POST /api/v1/subscription/webhooks/chargebee', 'HTTP Basic credentials of the Chargebee webhook'],
])

const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(100, 0x20), Buffer.from('\n%%EOF\n')])
function pdfForm() {
  const boundary = '----write-scopes-boundary'
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="policy.pdf"\r\nContent-Type: application/pdf\r\n\r\n`,
    ),
    PDF,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  return { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

/** Whether a bearer token reaches the route (`security: []` and HTTP Basic routes take none). */
const bearer = (op: Operation) => (op.security ?? []).some((s) => 'oauth2' in s)
const writes = (op: Operation) =>
  (op.security ?? []).some((s) => (s.oauth2 ?? []).some((scope) => scope.startsWith('write:')))

onEachEngine('write routes refuse read-only tokens', (t) => {
  let routes: Route[]
  let c: CompanyFixture
  let readCompany: string
  let readPlatform: string
  const readScopes = ALL_SCOPE_STRINGS.filter((s) => s.startsWith('read:'))

  before(async () => {
    const doc = await t.json(200, { url: '/openapi.json', token: null })
    routes = Object.entries<Record<string, Operation>>(doc.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => ({ method: m.toUpperCase(), path, op: item[m]! })),
    )
    // Every area in the plan, so that the company may hold every read scope there is.
    c = await company(t, {}, { features: [...READ_WRITE_AREAS, 'calendar'] })
    const reader = await companyClient(t, c.id, readScopes)
    readCompany = await t.tokenFor(reader.client_id, reader.client_secret)
    readPlatform = await t.tokenFor(ADMIN.client_id, ADMIN.client_secret, readScopes.join(' '))
  })

  /** The route on company c's own paths, with a JSON body `{}` (or a real file), and its required query filled. */
  function callOf(route: Route, token: string) {
    const url = route.path.replace(/\{([^}]+)\}/g, (_whole, name: string) =>
      name.startsWith('company_id') || name === 'subscription_customer_id' ? c.id : randomUUID(),
    )
    const query: Record<string, string> = {}
    for (const p of route.op.parameters ?? [])
      if (p.in === 'query' && p.required) query[p.name] = p.name === 'redirect_url' ? 'http://localhost/back' : 'x'
    const content = route.op.requestBody?.content ?? {}
    const body = 'multipart/form-data' in content ? pdfForm() : 'application/json' in content ? { body: {} } : {}
    return { method: route.method as 'POST', url, token, query, ...body }
  }

  it('walks every write route, and takes no token only where listed', () => {
    const tokenless = routes.filter((r) => r.method !== 'GET' && !bearer(r.op)).map((r) => `${r.method} ${r.path}`)
    assert.deepEqual(tokenless.sort(), [...TOKENLESS.keys()].sort())
    const walked = routes
      .filter((r) => (r.method !== 'GET' && bearer(r.op)) || writes(r.op))
      .map((r) => `${r.method} ${r.path}`)
    // What the issue named: the attachment upload and the three hosted pages.
    for (const must of [
      'POST /api/v1/companies/{company_id}/communications/attachments',
      'PUT /api/v1/companies/{company_id}',
      'GET /api/v1/subscription/{company_id}/manager_page',
      'GET /api/v1/subscription/{subscription_customer_id}/portal',
      'GET /api/v1/subscription/{subscription_customer_id}/payment_page',
      'POST /api/v1/subscription/plans',
    ])
      assert.ok(walked.includes(must), `${must} is walked`)
  })

  it('answers 403 insufficient_scope to a platform token holding only read scopes, on every write route', async () => {
    const failures: string[] = []
    let checked = 0
    for (const route of routes.filter((r) => (r.method !== 'GET' && bearer(r.op)) || writes(r.op))) {
      const res = await t.call(callOf(route, readPlatform))
      checked++
      if (res.statusCode !== 403 || res.json().code !== 'insufficient_scope')
        failures.push(`${route.method} ${route.path}: ${res.statusCode} ${res.body}`)
    }
    assert.deepEqual(failures, [])
    assert.ok(checked >= 30, `${checked} write routes were walked`)
    // Nothing changed: the company is still enabled, and the reader's platform token still reads.
    assert.equal((await t.json(200, { url: `/api/v1/companies/${c.id}`, token: readPlatform })).disabled, false)
  })

  it('answers 403 to a company token holding every read scope of its company, on every write route of its company', async () => {
    const failures: string[] = []
    let checked = 0
    for (const route of routes.filter((r) => (r.method !== 'GET' && bearer(r.op)) || writes(r.op))) {
      const res = await t.call(callOf(route, readCompany))
      checked++
      // A route of another area's scope says which scope it lacks; a platform route, that it is the platform's.
      const expected = route.op['x-platform-only'] ? 'forbidden' : 'insufficient_scope'
      if (res.statusCode !== 403 || res.json().code !== expected)
        failures.push(`${route.method} ${route.path}: ${res.statusCode} ${res.body}`)
    }
    assert.deepEqual(failures, [])
    assert.ok(checked >= 30, `${checked} write routes were walked`)
    assert.equal((await t.json(200, { url: `/api/v1/companies/${c.id}`, token: readCompany })).disabled, false)
  })

  it('refuses an attachment upload with read:company_communication (403, nothing stored), and takes it with write:company_communication', async () => {
    const reader = await companyClient(t, c.id, ['read:company_communication'])
    const url = `/api/v1/companies/${c.id}/communications/attachments`
    const refused = await t.call({
      method: 'POST',
      url,
      token: await t.tokenFor(reader.client_id, reader.client_secret),
      ...pdfForm(),
    })
    assert.equal(refused.statusCode, 403, refused.body)
    assert.deepEqual(refused.json(), {
      errors: 'The token lacks the scope write:company_communication',
      code: 'insufficient_scope',
    })
    const stored = () =>
      t.app.database.db.selectFrom('communication_attachments').select('id').where('company_id', '=', c.id).execute()
    assert.deepEqual(await stored(), [])
    const writer = await companyClient(t, c.id, ['write:company_communication'])
    const created = await t.call({
      method: 'POST',
      url,
      token: await t.tokenFor(writer.client_id, writer.client_secret),
      ...pdfForm(),
    })
    assert.equal(created.statusCode, 201, created.body)
    assert.equal((await stored()).length, 1)
  })
})
