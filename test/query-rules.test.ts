import { it } from 'node:test'
import assert from 'node:assert/strict'
import { company } from './helpers/factories.ts'
import { addon, billedCompany, estimate, update } from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Query strings are held to the rule bodies are: a parameter the route does not know is a 400
 * naming it, never silently ignored (docs/api-contract.md, "Strict bodies"). In the estimate (9), an
 * empty `addons=` means "no addons", and leaving `addons` out keeps the subscription's.
 */
onEachEngine('query strings', (t) => {
  it('refuses a parameter the route does not know, naming it, on routes with and without a query of their own', async () => {
    const c = await company(t)
    for (const url of [
      `/api/v1/companies/${c.id}`,
      `/api/v1/companies/${c.id}/teams`,
      `/api/v1/companies/${c.id}/communications`,
      '/api/v1/subscription/plans',
    ]) {
      const res = await t.call({ url, query: { colour: 'blue' } })
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`)
      assert.deepEqual(
        [res.json().code, res.json().errors],
        ['validation_failed', 'querystring/colour is not a known field'],
      )
    }
    // A known parameter still works, and so does a route's own query beside nothing else.
    assert.equal(
      (await t.call({ url: `/api/v1/companies/${c.id}/communications`, query: { year: '2026' } })).statusCode,
      200,
    )
    assert.equal(
      (await t.call({ url: `/api/v1/companies/${c.id}/communications`, query: { year: '2026', colour: 'blue' } }))
        .statusCode,
      400,
    )
  })

  it("estimate (9): addons= (empty) prices no addons; leaving addons out keeps the subscription's", async () => {
    const c = await billedCompany(t)
    const extra = await addon(t, { price: 5 })
    assert.equal((await update(t, c.id, c.subscriptionId, { addons: [extra] }, c.token)).statusCode, 200)
    const base = { company_id: c.id, product_sku: c.productSku, subscription_plan: c.planSku, plan_quantity: '5' }
    const lines = async (query: Record<string, string | string[]>) => {
      const res = await estimate(t, c.subscriptionId, query, c.token)
      assert.equal(res.statusCode, 200, res.body)
      return (res.json().estimate.invoice_estimate.line_items as Array<{ entity_type: string }>)
        .map((l) => l.entity_type)
        .sort()
    }
    assert.ok((await lines(base)).includes('addon'), "addons left out: the subscription's addon is priced")
    assert.ok(!(await lines({ ...base, addons: '' })).includes('addon'), 'addons= (empty): no addon')
  })
})
