import { it } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { locationId, uniq, type TestApp } from './helpers/app.ts'
import type { FakeChargebee } from './helpers/fake-chargebee.ts'
import { ATTEMPTS, withChargebee, chargebeeProduct, createCompany, failNextCommit } from './chargebee.fixtures.ts'
import { SUB, call, json } from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

/**
 * POST /api/v1/companies on a Chargebee product under faults (docs/chargebee.md, "Writes", 6):
 * replayed, undone, retried under an Idempotency-Key; after each the company here and its
 * customer and subscription at Chargebee are the same on both sides, and no orphan is left there.
 */

/** POST /api/v1/companies with one body each call of the returned function (a retry sends the same). */
function creation(product: { productSku: string; plans: Record<string, string> }, headers: Record<string, string>) {
  const body = {
    name: uniq('Acme'),
    country: 'IT',
    product_sku: product.productSku,
    subscription_plan: Object.values(product.plans)[0],
    plan_quantity: 5,
  }
  return (t: TestApp) => call(t, { method: 'POST', url: '/api/v1/companies', headers, body })
}

/** Chargebee's subscriptions of a customer. */
const subscriptionsOf = (fake: FakeChargebee, customerId: string) =>
  [...fake.subscriptions.values()].filter((s) => s.customer_id === customerId)

/** Makes every insert into subscription_events fail (a failure inside the creation, after Chargebee made both); returns the undo. */
async function failEventInserts(t: TestApp) {
  const db = t.app.database.db
  await sql
    .raw(
      `CREATE OR REPLACE FUNCTION test_fail_event() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`,
    )
    .execute(db)
  await sql`CREATE TRIGGER test_fail_event BEFORE INSERT ON subscription_events FOR EACH ROW EXECUTE FUNCTION test_fail_event()`.execute(
    db,
  )
  return async () => {
    await sql`DROP TRIGGER test_fail_event ON subscription_events`.execute(db)
  }
}

// The app on a fake Chargebee, built and closed by the hooks withChargebee registers.
forEachEngine('company creation at Chargebee under faults', (engine) => {
  const { t, fake } = withChargebee(engine)

  it('company creation: a timeout after Chargebee created the customer is replayed, one customer; a failed commit deletes it there', async () => {
    const product = await chargebeeProduct(t, fake)
    fake.fail({ status: 0, hang: true, when: 'after', match: /^POST \/customers$/ })
    const res = await createCompany(t, product)
    fake.releaseHanging()
    assert.equal(res.statusCode, 202, res.body)
    const id = locationId(res)
    const creates = fake.requests.filter((r) => r.path === '/customers' && r.params.id === id)
    assert.ok(creates.length >= 2, 'retried')
    assert.deepEqual([...new Set(creates.map((r) => r.idempotencyKey))], [`customer-create:${id}`])
    assert.ok(fake.customers.has(id))

    // The subscription created, its answer lost and every retry failing: read back, it is there; one of it.
    fake.fail({ status: 500, when: 'after', match: /subscription_for_items$/ })
    fake.fail({ status: 503, times: ATTEMPTS - 1, match: /subscription_for_items$/ })
    const settled = await createCompany(t, product)
    assert.equal(settled.statusCode, 202, settled.body)
    const settledId = locationId(settled)
    assert.equal([...fake.subscriptions.values()].filter((sub) => sub.customer_id === settledId).length, 1)

    // Under an Idempotency-Key the request commits once at its end; that commit failing (after Chargebee made
    // the customer and subscription) is a 500, and the retry with the key makes the same company, finding them.
    const headers = { 'idempotency-key': `create-${Date.now()}` }
    let disarm = await failNextCommit(t)
    const lost = await createCompany(t, product, headers)
    await disarm()
    assert.equal(lost.statusCode, 500, lost.body)
    const madeFor = fake.requests.filter((r) => r.path === '/customers').at(-1)!.params.id as string
    assert.ok(fake.customers.has(madeFor))
    const again = await createCompany(t, product, headers)
    assert.equal(again.statusCode, 202, again.body)
    assert.equal(locationId(again), madeFor, 'the same company')
    assert.equal(
      [...fake.subscriptions.values()].filter((sub) => sub.customer_id === madeFor).length,
      1,
      'one subscription at Chargebee',
    )
    assert.equal(
      (await json(t, 200, { url: `${SUB}/${madeFor}/status` })).subscription_id,
      [...fake.subscriptions.values()].find((sub) => sub.customer_id === madeFor)!.id,
    )

    const customers = fake.customers.size
    const subscriptions = fake.subscriptions.size
    disarm = await failNextCommit(t)
    const failed = await createCompany(t, product)
    await disarm()
    assert.ok(failed.statusCode >= 500, failed.body)
    assert.deepEqual(
      [fake.customers.size, fake.subscriptions.size],
      [customers, subscriptions],
      'no orphan customer or subscription at Chargebee',
    )
  })

  it('a failure inside the creation deletes what Chargebee made; the retry with the key makes them again rather than replaying the deleted ones', async () => {
    const product = await chargebeeProduct(t, fake)
    const send = creation(product, { 'idempotency-key': `abandoned-${Date.now()}` })
    const disarm = await failEventInserts(t)
    const first = await send(t)
    await disarm()
    assert.equal(first.statusCode, 500, first.body)
    const abandoned = fake.requests.filter((r) => r.path === '/customers').at(-1)!.params.id as string
    assert.equal(fake.customers.has(abandoned), false, 'deleted at Chargebee')

    const again = await send(t)
    assert.equal(again.statusCode, 202, again.body)
    const id = locationId(again)
    assert.ok(fake.customers.has(id), 'the customer exists at Chargebee')
    const remote = subscriptionsOf(fake, id)
    assert.equal(remote.length, 1, 'its subscription exists at Chargebee')
    assert.equal((await json(t, 200, { url: `${SUB}/${id}/status` })).subscription_id, remote[0]!.id)
    // Replayed, it is the same answer.
    const replay = await send(t)
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.equal(locationId(replay), id)
  })

  it("the same, retried after Chargebee forgot its idempotency keys: the deleted customer's id stays taken there, so the retry takes another", async () => {
    const product = await chargebeeProduct(t, fake)
    const send = creation(product, { 'idempotency-key': `forgotten-${Date.now()}` })
    const disarm = await failEventInserts(t)
    assert.equal((await send(t)).statusCode, 500)
    await disarm()
    const abandoned = fake.requests.filter((r) => r.path === '/customers').at(-1)!.params.id as string
    fake.expireIdempotencyKeys()

    const again = await send(t)
    assert.equal(again.statusCode, 202, again.body)
    const id = locationId(again)
    assert.notEqual(id, abandoned)
    assert.ok(fake.customers.has(id))
    assert.equal(subscriptionsOf(fake, id).length, 1)
  })

  it('a key used again after its record expired (purged) is a new request: a new company, not a 409', async () => {
    const product = await chargebeeProduct(t, fake)
    const headers = { 'idempotency-key': `expired-${Date.now()}` }
    const first = await createCompany(t, product, headers)
    assert.equal(first.statusCode, 202, first.body)
    await t.app.database.db.deleteFrom('idempotency_keys').where('key', '=', headers['idempotency-key']).execute()

    const send = creation(product, headers)
    const later = await send(t)
    assert.equal(later.statusCode, 202, later.body)
    const [a, b] = [locationId(first), locationId(later)]
    assert.notEqual(b, a, 'another company')
    for (const id of [a, b]) {
      assert.equal((await json(t, 200, { url: `/api/v1/companies/${id}` })).id, id)
      assert.equal(subscriptionsOf(fake, id).length, 1, 'one subscription at Chargebee for each')
    }
    // The new request's own retry (its answer kept) replays it.
    const replay = await send(t)
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.equal(locationId(replay), b)
  })
})
