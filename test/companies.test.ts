import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { buildTestApp, engines, type TestApp } from './helpers/app.ts'
import { company, contract, subsidiary } from './helpers/factories.ts'

for (const engine of engines) {
  describe(`companies on ${engine}`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(engine) })
    after(async () => { await t?.close() })

    it('creates a company in trial and reads it with its subscription mirror', async () => {
      const c = await company(t, { name: 'Acme Srl', vat: 'IT01234567890' }, { features: ['stamping', 'expense'] })
      const body = await t.json(200, { url: `/api/v1/companies/${c.id}`, token: c.token })
      assert.equal(body.name, 'Acme Srl')
      assert.equal(body.subscription_status, 'in_trial')
      assert.equal(body.subscription_plan, c.planSku)
      assert.equal(body.plan_quantity, 5)
      assert.deepEqual(body.subscribed_features, ['stamping', 'expense'])
      const trialEnd = new Date(body.trial_expiration_date).getTime()
      assert.equal(Math.round((trialEnd - t.clock.now().getTime()) / 86_400_000), 30)
    })

    it('creates subsidiaries and contracts', async () => {
      const c = await company(t)
      const s = await subsidiary(t, c.id, { name: 'Torino' })
      const k = await contract(t, c.id, { subsidiary_id: s, first_name: 'Anna' })
      const got = await t.json(200, { url: `/api/v1/companies/${c.id}/contracts/${k}`, token: c.token })
      assert.deepEqual(got, { id: k, first_name: 'Anna', last_name: got.last_name, email: 'mario@example.com', subsidiary_id: s, team_ids: [], active: true })
      const other = await company(t)
      const foreign = await subsidiary(t, other.id)
      const res = await t.call({ method: 'POST', url: `/api/v1/companies/${c.id}/contracts`, token: c.token, body: { first_name: 'A', last_name: 'B', subsidiary_id: foreign } })
      assert.equal(res.statusCode, 400)
    })
  })
}
