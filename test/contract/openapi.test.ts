import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import SwaggerParser from '@apidevtools/swagger-parser'
import { company } from '../helpers/factories.ts'
import { ALL_SCOPE_STRINGS } from '../../src/modules/oauth/scopes.ts'
import { onEachEngine } from '../helpers/engine-suites.ts'

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options'] as const
type Operation = {
  operationId?: string
  summary?: string
  tags?: string[]
  security?: Array<Record<string, string[]>>
  requestBody?: unknown
  parameters?: Array<{ in: string; name: string }>
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>
}

/** `/a/:b/c` and `/a/{b}/c` both become `/a/{}/c`, so the router's routes and the document's paths compare. */
const normalize = (path: string) =>
  path
    .replace(/\{[^}]+\}/g, '{}')
    .replace(/:[A-Za-z0-9_]+(\|:[A-Za-z0-9_]+)*/g, '{}')
    .replace(/(.)\/$/, '$1')

/**
 * Every route the server answers, read from Fastify's own route tree (`printRoutes`), as
 * "METHOD /path": each line is a node whose path is its ancestors' joined with its own.
 */
export function serverRoutes(printed: string): Set<string> {
  const routes = new Set<string>()
  const stack: string[] = []
  for (const line of printed.split('\n')) {
    const match = /^([│ ]*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line)
    if (!match) continue
    const depth = match[1]!.length / 4
    stack.length = depth
    stack.push(match[2]!)
    const path = stack.join('')
    for (const method of (match[3] ?? '')
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean)) {
      routes.add(`${method} ${normalize(path)}`)
    }
  }
  return routes
}

function operations(doc: { paths: Record<string, Record<string, Operation>> }) {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method: method.toUpperCase(), op: item[method]! })),
  )
}

onEachEngine('OpenAPI document', (t) => {
  let doc: { openapi: string; paths: Record<string, Record<string, Operation>> }
  before(async () => {
    doc = await t.json(200, { url: '/openapi.json', token: null })
  })
  /** A shared answer (`$ref` to components.responses, such as NotFound) or an inline one. */
  const resolved = (answer: unknown) => {
    const ref = (answer as { $ref?: string }).$ref
    return ref ? (doc as any).components.responses[ref.split('/').pop()!] : answer
  }

  it('is a valid OpenAPI 3.1 document', async () => {
    assert.equal(doc.openapi, '3.1.0')
    // The package's semantic version (decisions §9.6; test/contract/versioning.test.ts).
    assert.match((doc as unknown as { info: { version: string } }).info.version, /^\d+\.\d+\.\d+/)
    await SwaggerParser.validate(structuredClone(doc) as never)
  })

  it('compiles every request and response schema (they are compiled lazily, at first use)', () => {
    // Dozens of routes have request and response schemas that no request of this file used yet.
    assert.ok(t.app.compileSchemas() > 50)
    assert.equal(t.app.compileSchemas(), 0)
  })

  it('lists exactly the routes the server has', () => {
    const served = new Set(
      [...serverRoutes(t.app.printRoutes({ commonPrefix: false }))]
        // The hosted pages (/hosted/) and the console (/console) are HTML for browsers, hidden from the
        // document on purpose (docs/hosted-pages.md, docs/console.md).
        .filter(
          (r) =>
            !r.startsWith('HEAD ') &&
            !/ \/(docs|console)\b/.test(r) &&
            r !== 'GET /openapi.json' &&
            !/ \/hosted\//.test(r),
        ),
    )
    assert.ok(served.size > 20, 'the route tree was read')
    const documented = new Set(operations(doc).map(({ method, path }) => `${method} ${normalize(path)}`))
    assert.deepEqual([...served].filter((r) => !documented.has(r)).sort(), [], 'served but not documented')
    assert.deepEqual([...documented].filter((r) => !served.has(r)).sort(), [], 'documented but not served')
  })

  it('gives every operation a unique operationId, tags and a summary', () => {
    const ids = new Map<string, string>()
    for (const { method, path, op } of operations(doc)) {
      const where = `${method} ${path}`
      assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${where} has an operationId`)
      assert.ok(!ids.has(op.operationId!), `${where} and ${ids.get(op.operationId!)} share ${op.operationId}`)
      ids.set(op.operationId!, where)
      assert.ok((op.tags ?? []).length > 0, `${where} has tags`)
      assert.ok((op.summary ?? '').length > 0, `${where} has a summary`)
    }
  })

  it('documents the error answers each operation can give', () => {
    for (const { method, path, op } of operations(doc)) {
      const where = `${method} ${path}`
      const statuses = Object.keys(op.responses)
      assert.ok(
        statuses.some((s) => /^2\d\d$/.test(s)),
        `${where} documents its success`,
      )
      if (op.requestBody || method === 'POST' || method === 'PUT')
        assert.ok(statuses.includes('400'), `${where} takes a body and documents 400`)
      if ((op.parameters ?? []).length > 0)
        assert.ok(statuses.includes('400'), `${where} has parameters and documents 400`)
      const secured = (op.security ?? []).some((s) => Object.keys(s).length > 0)
      if (secured) assert.ok(statuses.includes('401'), `${where} needs a token and documents 401`)
      if (path.includes('{')) assert.ok(statuses.includes('404'), `${where} has a path parameter and documents 404`)
      if (!['/health', '/ready', '/metrics'].includes(path))
        assert.ok(statuses.includes('429'), `${where} documents 429`)
      // Idempotency keys belong to callers with a token (the Chargebee webhook is idempotent by event id).
      const withToken = (op.security ?? []).some((s) => 'oauth2' in s)
      if ((method === 'POST' || method === 'PUT') && withToken) {
        assert.ok(
          (op.parameters ?? []).some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key'),
          `${where} documents Idempotency-Key`,
        )
      }
      for (const status of statuses.filter((s) => /^[45]/.test(s))) {
        const answer = resolved(op.responses[status]) as { content?: Record<string, { schema?: unknown }> }
        const given = answer.content?.['application/json']?.schema as { $ref?: string } | undefined
        // Error answers are named shapes (Error, TokenError) under components.schemas.
        const schema = (given?.$ref ? (doc as any).components.schemas[given.$ref.split('/').pop()!] : given) as
          | { properties?: Record<string, unknown> }
          | undefined
        assert.ok(schema?.properties?.errors, `${where} ${status} is documented as the error body`)
      }
    }
  })

  it("documents 502 and the provider's 503 on every operation that calls the billing provider, and only there", () => {
    // The routes whose service calls the provider (createSubscription, cancel, change, estimate, ...; docs/billing.md).
    const atProvider = [
      'createCompany',
      'cancelSubscription',
      'removeScheduledCancellation',
      'updateSubscription',
      'estimateSubscription',
      'setPaymentSource',
      'openSubscriptionManagerPage',
      'openPortalSession',
      'openPaymentPage',
      'receiveChargebeeWebhook',
      'pauseSubscription',
      'resumeSubscription',
      'removeScheduledChanges',
      'recordInvoicePayment',
      'voidInvoice',
      'writeOffInvoice',
      'refundInvoice',
      'createCreditNote',
      'refundCreditNote',
      'changePromotionalCredits',
      'createOneOffCharge',
    ]
    const documenting = operations(doc)
      .filter(({ op }) => '502' in op.responses)
      .map(({ op }) => op.operationId)
      .sort()
    assert.deepEqual(documenting, [...atProvider].sort())
    for (const { op } of operations(doc).filter(({ op }) => atProvider.includes(op.operationId!))) {
      assert.match(
        (resolved(op.responses['503']) as { description?: string }).description ?? '',
        /billing provider is rate limiting/,
        op.operationId,
      )
    }
  })

  it('answers junk on every route with a documented 4xx, never a 5xx', async () => {
    const c = await company(t)
    const junk: Array<unknown> = [
      null,
      0,
      'text',
      [],
      [{}],
      {},
      { a: 1 },
      { name: null },
      { name: 'x'.repeat(5000) },
      { id: 1, company_id: [] },
      { plan: null },
      { product: [] },
      { scopes: 'read:team' },
      { day: '2026-13-45' },
      { send_at: 'yesterday' },
      '{"__proto__": {"polluted": true}}',
      '{"constructor": {"prototype": {"polluted": true}}}',
      '[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]',
    ]
    const failures: string[] = []
    for (const { method, path, op } of operations(doc)) {
      const url = path
        .replace(/\{company_id[^}]*\}/g, c.id)
        .replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000')
      const bodies = method === 'POST' || method === 'PUT' ? junk : [undefined]
      for (const body of bodies) {
        for (const token of [t.platformToken, c.token]) {
          const res = await t.call({
            method: method as 'POST',
            url,
            token,
            ...(body === undefined
              ? {}
              : {
                  body: typeof body === 'string' ? body : JSON.stringify(body),
                  headers: { 'content-type': 'application/json' },
                }),
          })
          if (res.statusCode >= 500 || !(String(res.statusCode) in op.responses)) {
            failures.push(
              `${method} ${path} ${JSON.stringify(body)?.slice(0, 60)}: ${res.statusCode} ${res.body.slice(0, 200)}`,
            )
          }
        }
      }
    }
    assert.deepEqual(failures, [])
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  })

  it("names the scope of every route that needs one, and the scopes are the spec's", () => {
    const scopes = new Set(Object.keys((doc as any).components.securitySchemes.oauth2.flows.clientCredentials.scopes))
    // Only scopes of the specification; which of them are offered: test/contract/security-schemes.test.ts.
    for (const scope of scopes) assert.ok(ALL_SCOPE_STRINGS.includes(scope), `${scope} is a scope of the specification`)
    assert.ok(!scopes.has('write:calendar'))
    for (const { method, path, op } of operations(doc)) {
      for (const requirement of op.security ?? []) {
        for (const needed of requirement.oauth2 ?? [])
          assert.ok(scopes.has(needed), `${method} ${path} needs ${needed}`)
      }
    }
  })
})
