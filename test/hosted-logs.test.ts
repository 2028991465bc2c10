import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { manualClock } from '../src/clock.ts'
import { ADMIN } from './helpers/app.ts'
import { engines, openTestDatabase } from './helpers/databases.ts'

/** A page's token is in its URL: the service's log (at info level, as in production) must never hold it. */
describe('hosted pages keep their tokens out of the log', () => {
  const lines: string[] = []
  const sink = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done() } })
  let close = async () => {}
  after(async () => { await close() })

  it('logs no token when a page is opened, viewed, posted and refused', async () => {
    const database = await openTestDatabase(engines[0]!)
    const config = loadConfig({}, { LOG_LEVEL: 'info', SCHEDULER_ENABLED: false, RATE_LIMIT_MAX: 0, ADMIN_CLIENT_ID: ADMIN.client_id, ADMIN_CLIENT_SECRET: ADMIN.client_secret })
    const app = await buildApp({ config, database, clock: manualClock(new Date()), logger: pino({ level: 'info' }, sink) })
    close = async () => { await app.close(); await database.close(); await database.drop() }
    await app.services.oauth.ensureAdminClient({ id: ADMIN.client_id, secret: ADMIN.client_secret })
    const token = (await app.inject({ method: 'POST', url: '/oauth/token', payload: { grant_type: 'client_credentials', ...ADMIN } })).json().access_token
    const auth = { authorization: `Bearer ${token}` }
    const plan = { sku: 'log-plan', name: 'Plan', price: 10, plan_family: 'core', period_unit: 'month', features: [] }
    assert.equal((await app.inject({ method: 'POST', url: '/api/v1/subscription/plans', headers: auth, payload: { plan } })).statusCode, 202)
    assert.equal((await app.inject({ method: 'POST', url: '/api/v1/subscription/products', headers: auth, payload: { product: { sku: 'log-product', name: 'P', visible: true, subscription_manager: 'local', allowed_plans: ['log-plan'] } } })).statusCode, 202)
    const created = await app.inject({ method: 'POST', url: '/api/v1/companies', headers: auth, payload: { name: 'Log Co', country: 'IT', timezone: 'Europe/Rome', product_sku: 'log-product', subscription_plan: 'log-plan', plan_quantity: 1 } })
    assert.equal(created.statusCode, 202, created.body)
    const companyId = String(created.headers.location).split('/').pop()
    const portal = await app.inject({ url: `/api/v1/subscription/${companyId}/portal/?redirect_url=${encodeURIComponent('http://localhost/back')}`, headers: auth })
    assert.equal(portal.statusCode, 200, portal.body)
    const session = portal.json()
    const path = new URL(session.access_url).pathname
    assert.equal((await app.inject({ url: path })).statusCode, 200)
    assert.equal((await app.inject({ method: 'POST', url: `${path}/cancel`, payload: 'csrf=wrong', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).statusCode, 403)
    assert.equal((await app.inject({ url: `${path}x` })).statusCode, 404)
    assert.ok(lines.length > 5, 'the log was written')
    assert.ok(lines.some((l) => l.includes('hosted page form refused')), 'the refusal is logged')
    const leaked = lines.filter((l) => l.includes(session.token))
    assert.deepEqual(leaked, [])
  })
})
