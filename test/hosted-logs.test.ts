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
  const sink = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done() } })
  let t: TestApp | undefined
  after(async () => { await t?.close() })

  it('logs no token when a page is opened, viewed, posted and refused', async () => {
    t = await buildTestApp(engines[0]!, {}, { logger: pino({ level: 'info' }, sink) })
    const c = await company(t)
    const portal = await t.call({ url: `/api/v1/subscription/${c.id}/portal/?redirect_url=${encodeURIComponent('http://localhost/back')}` })
    assert.equal(portal.statusCode, 200, portal.body)
    const session = portal.json()
    const path = new URL(session.access_url).pathname
    assert.equal((await t.call({ url: path, token: null })).statusCode, 200)
    assert.equal((await t.call({ method: 'POST', url: `${path}/cancel`, token: null, body: 'csrf=wrong', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).statusCode, 403)
    assert.equal((await t.call({ url: `${path}x`, token: null })).statusCode, 404)
    assert.ok(lines.length > 5, 'the log was written')
    assert.ok(lines.some((l) => l.includes('hosted page form refused')), 'the refusal is logged')
    const leaked = lines.filter((l) => l.includes(session.token))
    assert.deepEqual(leaked, [])
  })
})
