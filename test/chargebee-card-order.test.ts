import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import { withChargebee, chargebeeCompany, deliver, type CbCompany } from './chargebee.fixtures.ts'
import { detailsOf } from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

/**
 * The subscription's card never moves backwards. A late (retried) card event carrying an older
 * card is stale, whether it comes as Product Catalog 1.0's `content.card` or as another payment
 * source than the one applied last.
 */
const outcome = async (t: TestApp, event: unknown) => {
  const res = await deliver(t, event)
  assert.equal(res.statusCode, 200, res.body)
  return res.json().outcome as string
}
const cardOf = async (t: TestApp, c: CbCompany) =>
  (await detailsOf(t, c)).customer.payment_method?.last4 as string | undefined

// The app on a fake Chargebee, built and closed by the hooks withChargebee registers.
forEachEngine('chargebee card order', (engine) => {
  const { t, fake } = withChargebee(engine)
  const nowSeconds = () => Math.floor(t.clock.now().getTime() / 1000)

  it('a late card_updated carrying an older card (its resource_version) after a newer card_added is stale', async () => {
    const c = await chargebeeCompany(t, fake)
    const now = nowSeconds()
    const fresh = {
      card_type: 'mastercard',
      last4: '5454',
      expiry_month: 2,
      expiry_year: 2099,
      object: 'card',
      resource_version: now * 1000,
      updated_at: now,
    }
    const old = {
      card_type: 'visa',
      last4: '1111',
      expiry_month: 1,
      expiry_year: 2090,
      object: 'card',
      resource_version: (now - 100) * 1000,
      updated_at: now - 100,
    }
    assert.equal(await outcome(t, fake.event('card_added', { customerId: c.id, card: fresh }, now)), 'applied')
    assert.equal(await outcome(t, fake.event('card_updated', { customerId: c.id, card: old }, now - 100)), 'stale')
    assert.equal(await outcome(t, fake.event('card_expired', { customerId: c.id, card: old }, now - 50)), 'stale')
    assert.equal(await cardOf(t, c), '5454')
    // A newer copy still applies; a late deletion (an older copy) of the current card does not remove it.
    const renewed = { ...fresh, expiry_year: 2100, resource_version: (now + 10) * 1000, updated_at: now + 10 }
    assert.equal(await outcome(t, fake.event('card_updated', { customerId: c.id, card: renewed }, now + 10)), 'applied')
    assert.equal(
      await outcome(
        t,
        fake.event(
          'card_deleted',
          { customerId: c.id, card: { ...renewed, resource_version: (now + 5) * 1000 } },
          now + 5,
        ),
      ),
      'stale',
    )
    assert.equal(await cardOf(t, c), '5454')
    assert.equal(
      await outcome(
        t,
        fake.event(
          'card_deleted',
          { customerId: c.id, card: { ...renewed, resource_version: (now + 20) * 1000 } },
          now + 20,
        ),
      ),
      'applied',
    )
    assert.equal(await cardOf(t, c), undefined)
  })

  it("without a resource_version or updated_at the event's occurred_at orders the card (a same-second event still applies)", async () => {
    const c = await chargebeeCompany(t, fake)
    const now = nowSeconds()
    const card = (last4: string) => ({ card_type: 'visa', last4, expiry_month: 3, expiry_year: 2095, object: 'card' })
    assert.equal(await outcome(t, fake.event('card_added', { customerId: c.id, card: card('4242') }, now)), 'applied')
    assert.equal(
      await outcome(t, fake.event('card_updated', { customerId: c.id, card: card('1111') }, now - 100)),
      'stale',
    )
    assert.equal(await cardOf(t, c), '4242')
    assert.equal(await outcome(t, fake.event('card_updated', { customerId: c.id, card: card('0005') }, now)), 'applied')
    assert.equal(await cardOf(t, c), '0005')
  })

  it('a late event of another, older payment source does not replace the newer card', async () => {
    const c = await chargebeeCompany(t, fake)
    const now = nowSeconds()
    const source = (id: string, last4: string, at: number) => ({
      id,
      customer_id: c.id,
      type: 'card',
      object: 'payment_source',
      resource_version: at * 1000,
      updated_at: at,
      card: { brand: 'visa', last4, expiry_month: 4, expiry_year: 2096 },
    })
    assert.equal(
      await outcome(
        t,
        fake.event('payment_source_added', { customerId: c.id, payment_source: source('pm_new', '4444', now) }, now),
      ),
      'applied',
    )
    assert.equal(
      await outcome(
        t,
        fake.event(
          'payment_source_updated',
          { customerId: c.id, payment_source: source('pm_old', '3333', now - 100) },
          now - 100,
        ),
      ),
      'stale',
    )
    assert.equal(await cardOf(t, c), '4444')
  })
})
