import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { TestApp } from './helpers/app.ts'
import { plan } from './helpers/factories.ts'
import { corsOrigins, loadConfig } from '../src/config.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const ALLOWED = 'https://app.example.com'
const OTHER = 'http://localhost:5173'
const STRANGER = 'https://evil.example.net'

function corsHeaders(res: LightMyRequestResponse): string[] {
  return Object.keys(res.headers).filter((name) => name.startsWith('access-control-'))
}

function preflight(t: TestApp, url: string, origin: string, method = 'POST') {
  return t.call({
    method: 'OPTIONS',
    url,
    token: null,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization, content-type, idempotency-key',
    },
  })
}

describe('CORS_ORIGINS configuration', () => {
  it('is empty by default and reads a comma-separated list of origins, as a browser sends them', () => {
    assert.equal(loadConfig({}).CORS_ORIGINS, '')
    assert.deepEqual(corsOrigins(loadConfig({}).CORS_ORIGINS), [])
    const config = loadConfig({
      CORS_ORIGINS: ' https://App.Example.com , http://localhost:5173,,https://example.org:443,http://[::1]:8080',
    })
    assert.deepEqual(corsOrigins(config.CORS_ORIGINS), [
      'https://app.example.com',
      'http://localhost:5173',
      'https://example.org',
      'http://[::1]:8080',
    ])
  })

  it('refuses an entry that is not an origin with a sentence naming CORS_ORIGINS', () => {
    for (const bad of [
      'https://app.example.com/',
      'https://app.example.com/app',
      'app.example.com',
      '*',
      'ftp://files.example.com',
      'https://user@app.example.com',
      'https://app.example.com?x=1',
      'https://app.example.com:99999',
      'https://',
    ]) {
      assert.throws(
        () => loadConfig({ CORS_ORIGINS: `http://localhost:3000,${bad}` }),
        (err: Error) =>
          err.message ===
          `Invalid configuration: CORS_ORIGINS entry "${bad}" must be an origin like https://app.example.com (scheme://host[:port], no path)`,
        bad,
      )
    }
    // Overrides (the tests' way in) are checked as the environment is.
    assert.throws(
      () => loadConfig({}, { CORS_ORIGINS: 'https://a.example.com/path' }),
      /^Error: Invalid configuration: CORS_ORIGINS entry/,
    )
  })
})

onEachEngine('CORS', { CORS_ORIGINS: `${ALLOWED},${OTHER}` }, (t) => {
  it('answers a preflight from an allowed origin before authentication, with the methods and headers of the API', async () => {
    const res = await preflight(t, '/api/v1/companies', ALLOWED)
    assert.equal(res.statusCode, 204, res.body)
    assert.equal(res.body, '')
    assert.equal(res.headers['access-control-allow-origin'], ALLOWED)
    assert.equal(res.headers['access-control-allow-methods'], 'GET, POST, PUT, PATCH, DELETE')
    assert.equal(
      res.headers['access-control-allow-headers'],
      'Authorization, Content-Type, Idempotency-Key, X-Request-Id',
    )
    assert.equal(
      res.headers['access-control-expose-headers'],
      'Location, Retry-After, X-Request-Id, Idempotent-Replayed, Link, WWW-Authenticate, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Content-Disposition',
    )
    assert.equal(res.headers['access-control-max-age'], '600')
    assert.match(String(res.headers.vary), /Origin/)
    assert.equal(res.headers['access-control-allow-credentials'], undefined)
    // The other listed origin gets its own origin back, never the first one.
    const other = await preflight(t, '/api/v1/companies/3f1c2f60-0000-4000-8000-000000000000/teams', OTHER, 'PATCH')
    assert.equal(other.statusCode, 204)
    assert.equal(other.headers['access-control-allow-origin'], OTHER)
    // Without Access-Control-Request-Method: the same answer, not @fastify/cors' text/plain 400.
    const bare = await t.call({
      method: 'OPTIONS',
      url: '/api/v1/companies',
      token: null,
      headers: { origin: ALLOWED },
    })
    assert.equal(bare.statusCode, 204, bare.body)
    assert.equal(bare.headers['access-control-allow-origin'], ALLOWED)
  })

  it('echoes an allowed origin on an actual request, with Vary: Origin and the exposed headers', async () => {
    const created = await t.call({
      method: 'POST',
      url: '/api/v1/subscription/plans',
      headers: { origin: ALLOWED },
      body: {
        plan: {
          sku: `cors-${Date.now()}`,
          name: 'Pro',
          price: 1,
          plan_family: 'core',
          period_unit: 'month',
          features: [],
        },
      },
    })
    assert.equal(created.statusCode, 202, created.body)
    assert.equal(created.headers['access-control-allow-origin'], ALLOWED)
    assert.match(String(created.headers['access-control-expose-headers']), /\bLocation\b/)
    assert.ok(created.headers.location)
    const res = await t.call({
      method: 'GET',
      url: String(created.headers.location),
      token: null,
      headers: { origin: ALLOWED },
    })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers['access-control-allow-origin'], ALLOWED)
    assert.match(String(res.headers.vary), /\bOrigin\b/)
    // An error answer carries them too, or the browser would hide it from the script.
    const refused = await t.call({
      method: 'GET',
      url: '/api/v1/companies/3f1c2f60-0000-4000-8000-000000000000',
      token: null,
      headers: { origin: ALLOWED },
    })
    assert.equal(refused.statusCode, 401)
    assert.equal(refused.headers['access-control-allow-origin'], ALLOWED)
  })

  it('gives an origin not listed no CORS header, and its preflight a 404', async () => {
    await plan(t)
    const res = await t.call({
      method: 'GET',
      url: '/api/v1/subscription/plans',
      token: null,
      headers: { origin: STRANGER },
    })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(corsHeaders(res), [])
    // The answer depends on Origin, so a shared cache must keep the answers apart.
    assert.match(String(res.headers.vary), /\bOrigin\b/)
    const pre = await preflight(t, '/api/v1/companies', STRANGER)
    assert.equal(pre.statusCode, 404, pre.body)
    assert.deepEqual(corsHeaders(pre), [])
    assert.deepEqual(pre.json(), { errors: 'No route OPTIONS /api/v1/companies', code: 'not_found' })
    // The same host on another port is another origin.
    const port = await preflight(t, '/api/v1/companies', 'https://app.example.com:8443')
    assert.equal(port.statusCode, 404)
    // No Origin at all (same-origin or not a browser): no CORS header either.
    const plain = await t.call({ method: 'GET', url: '/api/v1/subscription/plans', token: null })
    assert.deepEqual(corsHeaders(plain), [])
  })

  it('gives the hosted pages no CORS, even for an allowed origin', async () => {
    const css = await t.call({
      method: 'GET',
      url: '/hosted/assets/hosted.css',
      token: null,
      headers: { origin: ALLOWED },
    })
    assert.equal(css.statusCode, 200)
    assert.deepEqual(corsHeaders(css), [])
    const pre = await preflight(t, '/hosted/manager/abc/confirm', ALLOWED)
    assert.equal(pre.statusCode, 404)
    assert.deepEqual(corsHeaders(pre), [])
  })

  it('lists OPTIONS in the Allow of a wrong method, and keeps the 404 of a refused preflight', async () => {
    const wrong = await t.call({
      method: 'DELETE',
      url: '/api/v1/companies',
      token: null,
      headers: { origin: ALLOWED },
    })
    assert.equal(wrong.statusCode, 405, wrong.body)
    assert.equal(wrong.headers.allow, 'GET, HEAD, POST, OPTIONS')
    // The browser reads the refusal: it carries the CORS headers as every other answer does.
    assert.equal(wrong.headers['access-control-allow-origin'], ALLOWED)
    // The preflight route (`OPTIONS *`) makes no path known: an unknown one stays 404.
    const unknown = await t.call({
      method: 'DELETE',
      url: '/api/v1/nothing',
      token: null,
      headers: { origin: ALLOWED },
    })
    assert.equal(unknown.statusCode, 404, unknown.body)
    assert.equal(unknown.headers.allow, undefined)
    // A preflight CORS refuses ends in the not-found handler with a method the path has: 404, as before.
    for (const url of ['/api/v1/companies', '/api/v1/nothing']) {
      const refused = await preflight(t, url, STRANGER)
      assert.equal(refused.statusCode, 404, refused.body)
      assert.equal(refused.headers.allow, undefined)
    }
  })

  it('leaves /openapi.json without the preflight route', async () => {
    const doc = await t.json(200, { url: '/openapi.json' })
    for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      assert.equal(operations.options, undefined, path)
    }
  })
})

onEachEngine('CORS preflights and the request limits', { CORS_ORIGINS: ALLOWED, RATE_LIMIT_MAX: 2 }, (t) => {
  it('answers preflights without counting them in the rate limit nor checking the query limit', async () => {
    // RATE_LIMIT_MAX is 2: a third preflight would be a 429 if preflights counted.
    for (let i = 0; i < 4; i++) {
      const res = await preflight(t, '/api/v1/subscription/plans', ALLOWED)
      assert.equal(res.statusCode, 204, res.body)
      assert.equal(res.headers['ratelimit-remaining'], undefined)
    }
    const query = Array.from({ length: 150 }, (_, i) => `p${i}=1`).join('&')
    const res = await preflight(t, `/api/v1/subscription/plans?${query}`, ALLOWED, 'GET')
    assert.equal(res.statusCode, 204, res.body)
    // The limit still holds for the requests themselves (so the loop above proves something).
    await t.call({ url: '/api/v1/subscription/plans', token: null, headers: { origin: ALLOWED } })
    await t.call({ url: '/api/v1/subscription/plans', token: null, headers: { origin: ALLOWED } })
    const limited = await t.call({ url: '/api/v1/subscription/plans', token: null, headers: { origin: ALLOWED } })
    assert.equal(limited.statusCode, 429)
    assert.equal(limited.headers['access-control-allow-origin'], ALLOWED)
  })
})

onEachEngine('CORS off by default', (t) => {
  it('sends no CORS header and answers no preflight', async () => {
    const res = await t.call({
      method: 'GET',
      url: '/api/v1/subscription/plans',
      token: null,
      headers: { origin: ALLOWED },
    })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(corsHeaders(res), [])
    // Nothing answers OPTIONS: a known path's preflight is a wrong method (405), an unknown path's a 404.
    const pre = await preflight(t, '/api/v1/companies', ALLOWED)
    assert.equal(pre.statusCode, 405)
    assert.equal(pre.headers.allow, 'GET, HEAD, POST')
    assert.deepEqual(corsHeaders(pre), [])
    assert.equal((await preflight(t, '/api/v1/nothing', ALLOWED)).statusCode, 404)
  })
})
