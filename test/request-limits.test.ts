import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { ADMIN, uniq } from './helpers/app.ts'
import { company, type CompanyFixture } from './helpers/factories.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * What one request may cost (docs/adr/0020-bounded-cost-per-request.md): bodies
 * whose parsing costs far more than their size are refused with a 4xx naming the limit. How
 * long they hold the event loop is measured by the reliability suite (scenario 12), not here.
 */

const TOKEN = '/oauth/token'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const JSON_TYPE = { 'content-type': 'application/json' }
const nested = (levels: number, inner = '') => '['.repeat(levels) + inner + ']'.repeat(levels)
const distinctForm = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=1`).join('&')

/** Every error answer of the service: `{errors, code}`, the sentence matching `message`. */
function assertError(res: LightMyRequestResponse, status: number, code: string, message: RegExp) {
  assert.equal(res.statusCode, status, res.body)
  const body = res.json()
  assert.equal(body.code, code, res.body)
  assert.match(body.errors, message)
}

onEachEngine('request limits', (t) => {
  let c: CompanyFixture
  before(async () => {
    c = await company(t)
  })

  const teams = () => `/api/v1/companies/${c.id}/teams`
  const postJson = (url: string, raw: string, headers: Record<string, string> = {}) =>
    t.call({ method: 'POST', url, token: c.token, body: raw, headers: { ...JSON_TYPE, ...headers } })

  describe('the token endpoint', () => {
    it("refuses a form of 20,000 keys (150 KB) as too large, in the service's error shape", async () => {
      const res = await t.call({ method: 'POST', url: TOKEN, token: null, body: distinctForm(20_000), headers: FORM })
      assertError(res, 413, 'payload_too_large', /larger than the limit of 8192 bytes/)
    })

    it('refuses a JSON body over 8 KiB as too large', async () => {
      const res = await t.call({
        method: 'POST',
        url: TOKEN,
        token: null,
        body: {
          grant_type: 'client_credentials',
          client_id: ADMIN.client_id,
          client_secret: ADMIN.client_secret,
          scope: 'x'.repeat(9000),
        },
      })
      assertError(res, 413, 'payload_too_large', /8192 bytes/)
    })

    it('still takes a form near the limit, and names a parameter repeated after a thousand others', async () => {
      const credentials = `grant_type=client_credentials&client_id=${ADMIN.client_id}&client_secret=${ADMIN.client_secret}`
      // Unknown parameters are ignored (RFC 6749 §3.2): a full form within the limit is served.
      const padded = `${credentials}&${distinctForm(1100)}`
      assert.ok(padded.length > 7000 && padded.length < 8192, String(padded.length))
      const ok = await t.call({ method: 'POST', url: TOKEN, token: null, body: padded, headers: FORM })
      assert.equal(ok.statusCode, 200, ok.body)
      const repeated = await t.call({ method: 'POST', url: TOKEN, token: null, body: `${padded}&k3=2`, headers: FORM })
      assert.equal(repeated.statusCode, 400, repeated.body)
      assert.equal(repeated.json().error, 'invalid_request')
      assert.equal(repeated.json().error_description, 'The parameter k3 is repeated')
    })

    it("refuses nested JSON in OAuth's error format, naming the problem", async () => {
      const res = await t.call({
        method: 'POST',
        url: TOKEN,
        token: null,
        body: `{"grant_type":${nested(100, '1')}}`,
        headers: JSON_TYPE,
      })
      assert.equal(res.statusCode, 400, res.body)
      assert.equal(res.json().error, 'invalid_request')
      assert.equal(res.json().error_description, 'The body is nested deeper than 64 levels')
    })
  })

  describe('JSON bodies', () => {
    it('refuses a megabyte of nested arrays before parsing it, naming the problem', async () => {
      const res = await postJson(teams(), nested(500_000))
      assertError(res, 400, 'validation_failed', /^The body is nested deeper than 64 levels$/)
    })

    it('counts objects and arrays alike, ignores brackets inside strings, and takes exactly 64 levels', async () => {
      // The top-level object is level 1; `id` is a field the route accepts and ignores.
      const at = (levels: number) =>
        `{"name":"n","code":"${uniq('C')}","id":${nested(levels - 2, '{"a":"[[[[{{{{\\"]]"}')}}`
      assertError(
        await postJson(teams(), at(65)),
        400,
        'validation_failed',
        /^The body is nested deeper than 64 levels$/,
      )
      const deepObjects = `{"name":"n","code":"c","id":${'{"a":'.repeat(70)}1${'}'.repeat(70)}}`
      assertError(await postJson(teams(), deepObjects), 400, 'validation_failed', /nested deeper than 64 levels/)
      const ok = await postJson(teams(), at(64))
      assert.equal(ok.statusCode, 202, ok.body)
    })

    it('answers a deep value in an ignored field with an Idempotency-Key 400, not 500', async () => {
      const res = await postJson(teams(), `{"name":"n","code":"${uniq('C')}","id":${nested(20_000)}}`, {
        'idempotency-key': uniq('deep'),
      })
      assertError(res, 400, 'validation_failed', /nested deeper than 64 levels/)
    })

    it('refuses a body of more than 20,000 array elements and object members', async () => {
      const wideArray = `{"name":"n","code":"${uniq('C')}","id":[${Array(20_001).fill('1').join(',')}]}`
      assertError(
        await postJson(teams(), wideArray, { 'idempotency-key': uniq('wide') }),
        400,
        'validation_failed',
        /^The body has more than 20000 array elements and object members$/,
      )
      const wideObject = `{${Array.from({ length: 80_000 }, (_, i) => `"k${i}":1`).join(',')}}`
      assertError(await postJson(teams(), wideObject), 400, 'validation_failed', /more than 20000 array elements/)
      const emptyObjects = `[${Array(300_000).fill('{}').join(',')}]`
      assertError(await postJson(teams(), emptyObjects), 400, 'validation_failed', /more than 20000 array elements/)
      // Commas inside strings are text, not members.
      const ok = await postJson(teams(), JSON.stringify({ name: 'n', code: uniq('C'), id: ','.repeat(100_000) }))
      assert.equal(ok.statusCode, 202, ok.body)
    })

    it('still refuses prototype keys, broken JSON and empty bodies as before', async () => {
      assertError(
        await postJson(teams(), '{"name":"n","code":"c","__proto__":{"x":1}}'),
        400,
        'validation_failed',
        /not valid JSON/,
      )
      assertError(
        await postJson(teams(), '{"name":"n","code":"c","constructor":{"prototype":{"x":1}}}'),
        400,
        'validation_failed',
        /not valid JSON/,
      )
      assertError(await postJson(teams(), '{"name":"n",'), 400, 'validation_failed', /not valid JSON/)
      assertError(await postJson(teams(), '"\\"[[['), 400, 'validation_failed', /not valid JSON/)
      assertError(await postJson(teams(), ''), 400, 'validation_failed', /empty/)
    })
  })

  describe('query strings', () => {
    it("documents the 400 on every route, and the token endpoint's own 413", async () => {
      const doc = (await t.call({ url: '/openapi.json', token: null })).json()
      for (const [path, ops] of Object.entries(
        doc.paths as Record<string, Record<string, { responses: Record<string, { description: string }> }>>,
      )) {
        for (const [method, op] of Object.entries(ops))
          assert.ok(op.responses['400'], `${method} ${path} documents 400`)
      }
      assert.match(doc.paths['/oauth/token'].post.responses['413'].description, /8192 bytes/)
    })

    it('refuses more than 100 parameters, repeated or not', async () => {
      const repeated = await t.call({ url: `${teams()}?${'x=1&'.repeat(2000)}`, token: c.token })
      assertError(repeated, 400, 'validation_failed', /^The query string has more than 100 parameters$/)
      const distinct = await t.call({
        url: `/health?${Array.from({ length: 101 }, (_, i) => `q${i}=1`).join('&')}`,
        token: null,
      })
      assertError(distinct, 400, 'validation_failed', /more than 100 parameters/)
      // 100 are not refused for their number (the route may refuse them for what they are).
      const hundred = await t.call({
        url: `/health?${Array.from({ length: 100 }, (_, i) => `q${i}=1`).join('&')}`,
        token: null,
      })
      assert.ok(hundred.statusCode < 500 && !/more than 100 parameters/.test(hundred.body), hundred.body)
    })
  })

  describe('multipart bodies', () => {
    const boundary = 'b0undary'
    const tiny = `--${boundary}\r\nContent-Disposition: form-data; name="f"\r\n\r\nx\r\n`.repeat(17_000)
    const file = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n`
    const upload = (body: string) =>
      t.call({
        method: 'POST',
        url: `/api/v1/companies/${c.id}/communications/attachments`,
        token: c.token,
        body: `${body}--${boundary}--\r\n`,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      })

    it('refuses thousands of tiny parts before the file as too many parts', async () => {
      assertError(
        await upload(tiny),
        413,
        'payload_too_large',
        /^The file is larger than \d+ bytes, or the form has more than 11 parts before it$/,
      )
    })

    it('takes the file and ignores whatever follows it, thousands of parts included', async () => {
      const res = await upload(file + tiny)
      assert.equal(res.statusCode, 201, res.body)
      assert.deepEqual({ name: res.json().name, size: res.json().size }, { name: 'a.txt', size: 5 })
    })
  })
})
