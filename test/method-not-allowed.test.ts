import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { onEachEngine } from './helpers/engine-suites.ts'

/** The methods a wrong call is tried with; the document's own methods are these and OPTIONS. */
const TRIED = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
const DOCUMENTED = ['get', 'put', 'post', 'delete', 'patch', 'options'] as const
/** Any value fills a path parameter: no route runs, so nothing checks or reads it. */
const SAMPLE = '3f1c2f60-0000-4000-8000-000000000000'

const allowOf = (res: LightMyRequestResponse) =>
  String(res.headers.allow ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean)
    .sort()

onEachEngine('405 Method Not Allowed', (t) => {
  let paths: Record<string, Record<string, unknown>>
  before(async () => {
    paths = (await t.json<{ paths: typeof paths }>(200, { url: '/openapi.json', token: null })).paths
  })

  it("answers every path of the document called with a method it does not have 405, with Allow listing the path's methods", async () => {
    // A URL can match more than one path: `.../communications/attachments` (POST) is also
    // `.../communications/{id}` (GET, PUT). Its methods are those of every path it matches.
    const patterns = Object.entries(paths).map(([path, item]) => ({
      match: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      methods: DOCUMENTED.filter((m) => item[m]).map((m) => m.toUpperCase()),
    }))
    let calls = 0
    for (const path of Object.keys(paths)) {
      const url = path.replace(/\{[^}]+\}/g, SAMPLE)
      const methods = [...new Set(patterns.filter((p) => p.match.test(url)).flatMap((p) => p.methods))]
      // Fastify answers HEAD wherever there is a GET.
      const allow = [...methods, ...(methods.includes('GET') ? ['HEAD'] : [])].sort()
      for (const method of TRIED.filter((m) => !methods.includes(m))) {
        const res = await t.call({ method, url, token: null })
        const where = `${method} ${path}`
        assert.equal(res.statusCode, 405, `${where}: ${res.body}`)
        assert.deepEqual(allowOf(res), allow, `${where} Allow`)
        assert.deepEqual(
          res.json(),
          {
            errors: `${method} is not allowed on ${url}; its methods are ${res.headers.allow}`,
            code: 'method_not_allowed',
          },
          where,
        )
        calls++
      }
    }
    assert.ok(calls > 100, `${calls} wrong calls were tried`)
  })

  it('answers a path with parameters, a trailing slash or a query string as the router matches it', async () => {
    const res = await t.call({ method: 'DELETE', url: `/api/v1/companies/${SAMPLE}/?expand=teams`, token: null })
    assert.equal(res.statusCode, 405, res.body)
    assert.deepEqual(allowOf(res), ['GET', 'HEAD', 'PATCH', 'PUT'])
    assert.equal(
      res.json().errors,
      `DELETE is not allowed on /api/v1/companies/${SAMPLE}/; its methods are GET, HEAD, PUT, PATCH`,
    )
    // A static segment beside a parameter: `/plans` is its own path, `/plans/{id}` another.
    assert.deepEqual(allowOf(await t.call({ method: 'DELETE', url: '/api/v1/subscription/plans', token: null })), [
      'GET',
      'HEAD',
      'POST',
    ])
    assert.deepEqual(
      allowOf(await t.call({ method: 'DELETE', url: '/api/v1/subscription/plans/by_sku/pro', token: null })),
      ['GET', 'HEAD'],
    )
  })

  it('answers 405 before authentication: without a token, with an invalid one, with a valid one', async () => {
    for (const token of [null, 'not-a-token', undefined]) {
      const res = await t.call({ method: 'PATCH', url: '/api/v1/companies', token })
      assert.equal(res.statusCode, 405, res.body)
      assert.equal(res.headers['www-authenticate'], undefined)
      assert.deepEqual(allowOf(res), ['GET', 'HEAD', 'POST'])
    }
  })

  it('answers HEAD and OPTIONS on a path without them 405', async () => {
    // Node sends no body with an answer to HEAD (app.inject shows the one it would send).
    const head = await t.call({ method: 'HEAD', url: '/oauth/token', token: null })
    assert.equal(head.statusCode, 405)
    assert.equal(head.headers.allow, 'POST')
    // Without CORS_ORIGINS nothing answers OPTIONS (test/cors.test.ts: with it, Allow lists OPTIONS).
    const options = await t.call({ method: 'OPTIONS', url: '/api/v1/companies', token: null })
    assert.equal(options.statusCode, 405, options.body)
    assert.equal(options.headers.allow, 'GET, HEAD, POST')
  })

  it('answers a path the service does not have 404, whatever the method', async () => {
    for (const method of [...TRIED, 'HEAD', 'OPTIONS'] as const) {
      for (const url of ['/api/v1/nothing', `/api/v1/companies/${SAMPLE}/nothing`, '/api/v2/companies', '/']) {
        const res = await t.call({ method, url, token: null })
        assert.equal(res.statusCode, 404, `${method} ${url}: ${res.body}`)
        assert.equal(res.headers.allow, undefined)
        if (method !== 'HEAD') assert.deepEqual(res.json(), { errors: `No route ${method} ${url}`, code: 'not_found' })
      }
    }
  })

  it('keeps the 404 of a route that exists for the method but finds nothing', async () => {
    const res = await t.call({ method: 'GET', url: '/docs/missing.js', token: null })
    assert.equal(res.statusCode, 404, res.body)
    assert.equal(res.headers.allow, undefined)
  })
})
