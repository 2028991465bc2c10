import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { buildTestApp, type TestApp } from './helpers/app.ts'
import { engines } from './helpers/databases.ts'
import { company } from './helpers/factories.ts'

/** A page's token is in its URL: the service's log (at info level, as in production) must never hold it. */
describe('hosted pages keep their tokens out of the log', () => {
  const lines: string[] = []
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  let t: TestApp | undefined
  after(async () => {
    await t?.close()
  })

  it('logs no token when a page is opened, viewed, posted and refused', async () => {
    t = await buildTestApp(engines[0]!, {}, { logger: pino({ level: 'info' }, sink) })
    const c = await company(t)
    const portal = await t.call({
      url: `/api/v1/subscription/${c.id}/portal/?redirect_url=${encodeURIComponent('http://localhost/back')}`,
    })
    assert.equal(portal.statusCode, 200, portal.body)
    const session = portal.json()
    const path = new URL(session.access_url).pathname
    assert.equal((await t.call({ url: path, token: null })).statusCode, 200)
    assert.equal(
      (
        await t.call({
          method: 'POST',
          url: `${path}/cancel`,
          token: null,
          body: 'csrf=wrong',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        })
      ).statusCode,
      403,
    )
    assert.equal((await t.call({ url: `${path}x`, token: null })).statusCode, 404)
    assert.ok(lines.length > 5, 'the log was written')
    assert.ok(
      lines.some((l) => l.includes('hosted page form refused')),
      'the refusal is logged',
    )
    const leaked = lines.filter((l) => l.includes(session.token))
    assert.deepEqual(leaked, [])
  })
})

/** Every request that names a page's token, whatever its method or answer, logs it redacted. */
describe('hosted page tokens are redacted from every log line', () => {
  const lines: string[] = []
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  let t: TestApp | undefined
  after(async () => {
    await t?.close()
  })

  it('logs HEAD, unknown actions, other methods and 404s of a page without its token', async () => {
    t = await buildTestApp(engines[0]!, {}, { logger: pino({ level: 'info' }, sink) })
    const c = await company(t)
    const tokens: string[] = []
    for (const kind of ['portal', 'manager_page', 'payment_page']) {
      const res = await t.call({
        url: `/api/v1/subscription/${c.id}/${kind}/?redirect_url=${encodeURIComponent('http://localhost/back')}`,
      })
      assert.equal(res.statusCode, 200, res.body)
      const url = new URL(res.json().access_url ?? res.json().url)
      tokens.push(url.pathname.split('/').pop()!)
      const path = url.pathname
      for (const [method, suffix] of [
        ['HEAD', ''],
        ['HEAD', 'x'],
        ['HEAD', '/cancel'],
        ['GET', '/nothing'],
        ['GET', '?done=cancelled'],
        ['PUT', ''],
        ['DELETE', '/leave'],
        ['OPTIONS', ''],
        ['GET', '//'],
        ['GET', '/invoices/00000000-0000-4000-8000-000000000000'],
        ['GET', '/invoices/x/download'],
        ['HEAD', '/invoices/x'],
      ] as const) {
        const res = await t.app.inject({ method, url: `${path}${suffix}` })
        assert.ok(res.statusCode < 500, `${method} ${suffix}: ${res.statusCode}`)
      }
      // The same token elsewhere in a URL, as a stray link or a probe would send it.
      assert.equal((await t.app.inject({ method: 'HEAD', url: `/hosted/other/${tokens.at(-1)}` })).statusCode, 404)
      assert.equal((await t.app.inject({ method: 'GET', url: `/somewhere?next=${path}` })).statusCode, 404)
    }
    const heads = lines.filter((l) => l.includes('"method":"HEAD"'))
    assert.ok(heads.length >= 12, `the HEAD requests were logged (${heads.length} lines)`)
    assert.ok(
      heads.every((l) => l.includes('/hosted/')),
      'with their path, token redacted',
    )
    const leaked = lines.filter((l) => tokens.some((token) => l.includes(token)))
    assert.deepEqual(leaked, [])
  })
})
