import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import { postgresOnly } from './helpers/requires.ts'
import type { FakeChargebee, FakeFailure } from './helpers/fake-chargebee.ts'
import {
  ATTEMPTS,
  withChargebee,
  chargebeeCompany,
  deliver,
  failNextCommit,
  type CbCompany,
} from './chargebee.fixtures.ts'
import { SUB, addon, call, coupon, detailsOf, eventsOf } from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

/**
 * Chargebee writes under faults (docs/chargebee.md, "Writes"): at every step a write can fail
 * (a timeout before or after Chargebee applies it, 429, 500, the local commit), and after each
 * the subscription here and at Chargebee are the same. Company creation: chargebee-creation.test.ts.
 */

/** The subscription as both sides hold it, in the same terms. */
async function bothSides(t: TestApp, fake: FakeChargebee, c: CbCompany) {
  const d = (await detailsOf(t, c)).subscription
  const remote = fake.subscriptions.get(c.subscriptionId)!
  const items = remote.subscription_items as { item_price_id: string; item_type: string; quantity: number }[]
  const plan = items.find((i) => i.item_type === 'plan')!
  const seconds = (v: unknown) => (typeof v === 'number' ? v : null)
  return {
    here: {
      status: d.status,
      plan: d.plan_id,
      quantity: d.plan_quantity,
      addons: d.addons.map((a: any) => `${a.id}×${a.quantity}`).sort(),
      coupon: d.coupon_code,
      cancelled_at: d.scheduled_cancellation_at ?? d.cancelled_at,
    },
    there: {
      status: remote.status,
      plan: plan.item_price_id,
      quantity: plan.quantity,
      addons: items
        .filter((i) => i.item_type === 'addon')
        .map((i) => `${i.item_price_id}×${i.quantity}`)
        .sort(),
      coupon:
        (remote.coupons as { coupon_id: string }[]).find((k) => k.coupon_id === d.coupon_code)?.coupon_id ??
        remote.coupons[0]?.coupon_id ??
        null,
      cancelled_at: seconds(remote.cancelled_at),
    },
  }
}

async function assertSameOnBothSides(t: TestApp, fake: FakeChargebee, c: CbCompany) {
  const { here, there } = await bothSides(t, fake, c)
  assert.deepEqual(here, there, 'the subscription here and at Chargebee')
}

/**
 * The writes to a path, one per idempotency key (a retry after a spurious timeout under load is
 * the same write). Every write carries a key: one without would be a write of its own, which
 * merging by key would hide.
 */
function writesOf(requests: FakeChargebee['requests'], path: string) {
  const seen = new Set<string>()
  return requests.filter((r) => {
    if (!r.path.endsWith(path)) return false
    assert.ok(r.idempotencyKey, `a write without an idempotency key: ${r.method} ${r.path}`)
    return !seen.has(r.idempotencyKey) && seen.add(r.idempotencyKey)
  })
}

/** The document the fake Chargebee made last (its stores keep insertion order). */
const lastOf = <T>(store: Map<string, T>): T => [...store.values()].at(-1)!

const updateUrl = (c: CbCompany) => `${SUB}/companies/${c.id}/update/${c.subscriptionId}`

// The app on a fake Chargebee, built and closed by the hooks withChargebee registers.
forEachEngine('chargebee writes under faults', (engine) => {
  // A short timeout so that a hung request times out quickly; a spurious one under load is retried like any other.
  const { t, fake } = withChargebee(engine, { CHARGEBEE_TIMEOUT_MS: 2000 })

  const failures: [string, FakeFailure[], number][] = [
    ['a timeout before Chargebee applies it', [{ status: 0, hang: true, when: 'before' }], 200],
    ['a timeout after Chargebee applied it', [{ status: 0, hang: true, when: 'after' }], 200],
    [
      '429 with Retry-After',
      [{ status: 429, api_error_code: 'api_request_limit_exceeded', retryAfter: 0, times: 2 }],
      200,
    ],
    ['a 500 before applying', [{ status: 500, times: 2 }], 200],
    ['a 500 after applying', [{ status: 500, when: 'after' }], 200],
    [
      'a 500 after applying, then every retry failing: settled by reading Chargebee back',
      [
        { status: 500, when: 'after' },
        { status: 503, times: ATTEMPTS - 1 },
      ],
      200,
    ],
    [
      'a timeout after applying, then 429s: settled by reading Chargebee back',
      [
        { status: 0, hang: true, when: 'after' },
        { status: 429, retryAfter: 0, times: ATTEMPTS - 1 },
      ],
      200,
    ],
    ['every attempt failing before applying: not applied, 502', [{ status: 500, times: ATTEMPTS }], 502],
    [
      'a timeout before applying, then 429 asking for longer than we wait: not applied, 503',
      [
        { status: 0, hang: true, when: 'before' },
        { status: 429, retryAfter: 60 },
      ],
      503,
    ],
  ]

  for (const [name, injected, status] of failures) {
    it(`update: ${name}; both sides equal, one key for all attempts`, async () => {
      const c = await chargebeeCompany(t, fake)
      const from = fake.requests.length
      for (const f of injected) fake.fail({ ...f, match: /update_for_items$/ })
      const res = await call(t, { method: 'PUT', url: updateUrl(c), token: c.token, body: { plan_quantity: 8 } })
      fake.clearFailures()
      fake.releaseHanging()
      assert.equal(res.statusCode, status, res.body)
      const writes = fake.requests.slice(from).filter((r) => r.path.endsWith('/update_for_items'))
      assert.ok(writes.length >= 2, 'retried')
      assert.equal(new Set(writes.map((r) => r.idempotencyKey)).size, 1, 'the same idempotency key on every attempt')
      assert.equal(fake.subscriptions.get(c.subscriptionId)!.subscription_items[0].quantity, status === 200 ? 8 : 5)
      await assertSameOnBothSides(t, fake, c)
      assert.deepEqual(
        (await eventsOf(t, c.id)).map((e) => e.type),
        status === 200 ? ['created', 'changed'] : ['created'],
      )
    })
  }

  it("an outcome that cannot be settled (Chargebee unreadable) is a 502 that says so; Chargebee's webhook then brings both sides together", async () => {
    const c = await chargebeeCompany(t, fake)
    fake.fail({ status: 500, when: 'after', match: /update_for_items$/ })
    fake.fail({ status: 503, times: ATTEMPTS - 1, match: /update_for_items$/ })
    fake.fail({ status: 503, times: ATTEMPTS, match: /^GET \/subscriptions\// })
    const res = await call(t, { method: 'PUT', url: updateUrl(c), token: c.token, body: { plan_quantity: 9 } })
    assert.equal(res.statusCode, 502, res.body)
    assert.match(res.json().errors, /did not answer whether it applied .* could not be read back/)
    fake.clearFailures()
    const changed = fake.event('subscription_changed', { subscriptionId: c.subscriptionId })
    assert.equal((await deliver(t, changed)).statusCode, 200)
    await assertSameOnBothSides(t, fake, c)
    assert.equal((await detailsOf(t, c)).subscription.plan_quantity, 9)
  })

  it('cancel and its undo: a timeout after Chargebee applied, and a 500 after applying with every retry failing', async () => {
    const c = await chargebeeCompany(t, fake)
    fake.fail({ status: 0, hang: true, when: 'after', match: /cancel_for_items$/ })
    assert.equal((await call(t, { method: 'PUT', url: `${SUB}/${c.id}/cancel`, token: c.token })).statusCode, 200)
    fake.releaseHanging()
    await assertSameOnBothSides(t, fake, c)
    fake.fail({ status: 500, when: 'after', match: /remove_scheduled_cancellation$/ })
    fake.fail({ status: 502, times: ATTEMPTS - 1, match: /remove_scheduled_cancellation$/ })
    assert.equal(
      (
        await call(t, {
          method: 'PUT',
          url: `${SUB}/${c.id}/remove_scheduled_cancellation/${c.subscriptionId}`,
          token: c.token,
        })
      ).statusCode,
      200,
    )
    await assertSameOnBothSides(t, fake, c)
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => e.type),
      ['created', 'cancellation_scheduled', 'scheduled_cancellation_removed'],
    )
  })

  it('a local commit that fails after Chargebee applied: saved again from Chargebee, answered as done', async () => {
    const c = await chargebeeCompany(t, fake)
    const code = await coupon(t, { discount_value: 10, max_redemptions: 5 })
    fake.addCoupon({ id: code, discount_type: 'percentage', discount_percentage: 10 })
    let disarm = await failNextCommit(t)
    const res = await call(t, {
      method: 'PUT',
      url: updateUrl(c),
      token: c.token,
      body: { plan_quantity: 6, coupon_code: code },
    })
    await disarm()
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual([res.json().subscription.plan_quantity, res.json().subscription.coupon_code], [6, code])
    await assertSameOnBothSides(t, fake, c)
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => e.type),
      ['created', 'changed'],
    )
    // The redemption counts once.
    const row = await t.app.database.db
      .selectFrom('coupons')
      .select('redemptions')
      .where('code', '=', code)
      .executeTakeFirstOrThrow()
    assert.equal(row.redemptions, 1)

    disarm = await failNextCommit(t)
    const cancelled = await call(t, {
      method: 'PUT',
      url: `${SUB}/${c.id}/cancel?end_of_term=false`,
      token: c.token,
      body: { cancellation_reason: 'moving' },
    })
    await disarm()
    assert.equal(cancelled.statusCode, 200, cancelled.body)
    await assertSameOnBothSides(t, fake, c)
    assert.equal((await detailsOf(t, c)).subscription.cancellation_reason, 'moving')
  })

  it('with an Idempotency-Key the request commits once, at its end: if that commit fails after Chargebee applied, the retry with the key brings both sides together', async () => {
    const c = await chargebeeCompany(t, fake)
    const headers = { 'idempotency-key': `cb-write-${c.id}` }
    const disarm = await failNextCommit(t)
    const first = await call(t, {
      method: 'PUT',
      url: updateUrl(c),
      token: c.token,
      headers,
      body: { plan_quantity: 11 },
    })
    await disarm()
    // The limit docs/chargebee.md states: the request's one commit fails after the handler answered, so 500
    // and nothing kept for the key; Chargebee holds the change.
    assert.equal(first.statusCode, 500, first.body)
    assert.equal(fake.subscriptions.get(c.subscriptionId)!.subscription_items[0].quantity, 11)
    const retry = await call(t, {
      method: 'PUT',
      url: updateUrl(c),
      token: c.token,
      headers,
      body: { plan_quantity: 11 },
    })
    assert.equal(retry.statusCode, 200, retry.body)
    assert.equal(retry.json().subscription.plan_quantity, 11)
    await assertSameOnBothSides(t, fake, c)
  })

  it('a coupon that cannot be redeemed is refused before Chargebee is asked; a failed Chargebee call releases the redemption', async () => {
    const code = await coupon(t, { discount_value: 10, max_redemptions: 1 })
    fake.addCoupon({ id: code, discount_type: 'percentage', discount_percentage: 10 })
    const first = await chargebeeCompany(t, fake)
    const second = await chargebeeCompany(t, fake)
    fake.fail({ status: 400, api_error_code: 'param_wrong_value', match: /update_for_items$/ })
    assert.equal(
      (await call(t, { method: 'PUT', url: updateUrl(first), token: first.token, body: { coupon_code: code } }))
        .statusCode,
      400,
    )
    // Released: the second company takes the only redemption.
    assert.equal(
      (await call(t, { method: 'PUT', url: updateUrl(second), token: second.token, body: { coupon_code: code } }))
        .statusCode,
      200,
    )
    const from = fake.requests.length
    const refused = await call(t, {
      method: 'PUT',
      url: updateUrl(first),
      token: first.token,
      body: { coupon_code: code },
    })
    assert.equal(refused.statusCode, 400)
    assert.match(refused.json().errors, /max_redemptions/)
    assert.equal(fake.requests.length, from, 'Chargebee was not asked')
    await assertSameOnBothSides(t, fake, first)
    await assertSameOnBothSides(t, fake, second)
  })

  it('an update sends only what changed: addon quantities, extra coupons and addons set at Chargebee stay; an addon unknown here never blocks', async () => {
    const c = await chargebeeCompany(t, fake)
    const [a1, a2] = [await addon(t, { name: 'Badge', price: 5 }), await addon(t, { name: 'Kiosk', price: 3 })]
    for (const id of [a1!, a2!]) fake.addItemPrice({ id, price: 500, period_unit: 'month', item_type: 'addon' })
    const foreign = `cb-only-${c.id.slice(0, 8)}`
    fake.addItemPrice({ id: foreign, price: 100, period_unit: 'month', item_type: 'addon' })
    const extra = `CB-EXTRA-${c.id.slice(0, 8)}`
    fake.addCoupon({ id: extra, discount_type: 'fixed_amount', discount_amount: 100 })
    assert.equal(
      (await call(t, { method: 'PUT', url: updateUrl(c), token: c.token, body: { addons: [a1] } })).statusCode,
      200,
    )
    // Set at Chargebee (its UI, its pages): four of a1, an addon this catalogue lacks, a second coupon.
    fake.change(c.subscriptionId, (sub) => {
      sub.subscription_items.find((i: any) => i.item_price_id === a1).quantity = 4
      sub.subscription_items.push({
        item_price_id: foreign,
        item_type: 'addon',
        quantity: 2,
        unit_price: 100,
        amount: 200,
        object: 'subscription_item',
      })
      sub.coupons.push({ coupon_id: extra, applied_count: 0, object: 'coupon' })
    })

    let from = fake.requests.length
    const quantity = await call(t, { method: 'PUT', url: updateUrl(c), token: c.token, body: { plan_quantity: 7 } })
    assert.equal(quantity.statusCode, 200, quantity.body)
    const sent = writesOf(fake.requests.slice(from), '/update_for_items')
    assert.deepEqual(
      sent.map((r) => r.params),
      [
        {
          subscription_items: [{ item_price_id: c.plans.basic, quantity: '7' }],
          prorate: 'true',
          invoice_immediately: 'true',
        },
      ],
    )
    await assertSameOnBothSides(t, fake, c)
    assert.deepEqual(
      (await detailsOf(t, c)).subscription.addons.map((a: any) => [a.id, a.quantity]).sort(),
      [
        [a1, 4],
        [foreign, 2],
      ].sort(),
    )

    // The addon unknown here does not block; taking a1 off sends Chargebee's list without it.
    from = fake.requests.length
    const swap = await call(t, { method: 'PUT', url: updateUrl(c), token: c.token, body: { addons: [a2] } })
    assert.equal(swap.statusCode, 200, swap.body)
    const replaced = writesOf(fake.requests.slice(from), '/update_for_items')
    assert.deepEqual(
      replaced.map((r) => r.params),
      [
        {
          subscription_items: [
            { item_price_id: c.plans.basic, quantity: '7' },
            { item_price_id: foreign, quantity: '2' },
            { item_price_id: a2, quantity: '1' },
          ],
          replace_items_list: 'true',
          prorate: 'true',
          invoice_immediately: 'true',
        },
      ],
    )
    const there = fake.subscriptions.get(c.subscriptionId)!
    assert.deepEqual(
      there.subscription_items.map((i: any) => `${i.item_price_id}×${i.quantity}`),
      [`${c.plans.basic}×7`, `${foreign}×2`, `${a2}×1`],
    )
    assert.deepEqual(
      there.coupons.map((k: any) => k.coupon_id),
      [extra],
    )
    await assertSameOnBothSides(t, fake, c)

    // Our coupon on and off: the extra coupon stays at Chargebee.
    const code = await coupon(t, { discount_value: 10 })
    fake.addCoupon({ id: code, discount_type: 'percentage', discount_percentage: 10 })
    assert.equal(
      (await call(t, { method: 'PUT', url: updateUrl(c), token: c.token, body: { coupon_code: code } })).statusCode,
      200,
    )
    assert.deepEqual(
      fake.subscriptions.get(c.subscriptionId)!.coupons.map((k: any) => k.coupon_id),
      [extra, code],
    )
    assert.equal((await detailsOf(t, c)).subscription.coupon_code, code)
    assert.equal(
      (await call(t, { method: 'PUT', url: updateUrl(c), token: c.token, body: { coupon_code: '' } })).statusCode,
      200,
    )
    assert.deepEqual(
      fake.subscriptions.get(c.subscriptionId)!.coupons.map((k: any) => k.coupon_id),
      [extra],
    )
    await assertSameOnBothSides(t, fake, c)
  })

  it(
    'the last redemption of a coupon, applied by two companies at once, 50 times: one wins at both sides, the other is refused before Chargebee',
    postgresOnly(engine),
    async () => {
      for (let round = 0; round < 50; round++) {
        const code = await coupon(t, { discount_value: 10, max_redemptions: 1 })
        fake.addCoupon({ id: code, discount_type: 'percentage', discount_percentage: 10 })
        const pair = [await chargebeeCompany(t, fake), await chargebeeCompany(t, fake)]
        const results = await Promise.all(
          pair.map((c) => call(t, { method: 'PUT', url: updateUrl(c), token: c.token, body: { coupon_code: code } })),
        )
        assert.deepEqual(
          results.map((r) => r.statusCode).sort(),
          [200, 400],
          `round ${round}: ${results.map((r) => r.body).join(' | ')}`,
        )
        const atChargebee = pair.filter((c) =>
          fake.subscriptions.get(c.subscriptionId)!.coupons.some((k: any) => k.coupon_id === code),
        )
        assert.equal(atChargebee.length, 1, `round ${round}: one subscription holds the coupon at Chargebee`)
        for (const c of pair) await assertSameOnBothSides(t, fake, c)
      }
    },
  )

  it("mid-term: the estimate is asked with the update's options and is the invoice and credit note the update makes", async () => {
    const c = await chargebeeCompany(t, fake)
    const now = Math.floor(t.clock.now().getTime() / 1000)
    const activated = fake.change(c.subscriptionId, (sub) =>
      Object.assign(sub, {
        status: 'active',
        trial_end: now - 10 * 86_400,
        current_term_start: now - 10 * 86_400,
        current_term_end: now + 20 * 86_400,
        next_billing_at: now + 20 * 86_400,
      }),
    )
    assert.equal((await deliver(t, fake.event('subscription_activated', { subscription: activated }))).statusCode, 200)
    const change = async (plan: string) => {
      const from = fake.requests.length
      const est = await call(t, {
        url: `${SUB}/${c.subscriptionId}/estimate`,
        token: c.token,
        query: { company_id: c.id, product_sku: c.productSku, subscription_plan: plan, plan_quantity: '5' },
      })
      assert.equal(est.statusCode, 200, est.body)
      const res = await call(t, { method: 'PUT', url: updateUrl(c), token: c.token, body: { subscription_plan: plan } })
      assert.equal(res.statusCode, 200, res.body)
      const [estimateCall, ...rest] = fake.requests
        .slice(from)
        .filter((r) => /update_subscription_for_items|update_for_items/.test(r.path))
      const updateCall = rest.find((r) => r.path.endsWith('/update_for_items'))!
      const { subscription: _, ...estimated } = estimateCall!.params
      assert.deepEqual(estimated, updateCall.params, 'the estimate and the update send the same parameters')
      assert.deepEqual(res.json().estimate, est.json().estimate, 'the estimate shown is the change made')
      return res.json().estimate.invoice_estimate
    }
    // Upgrade with 20 of 30 days left: pro × 5 charged for 2/3 of the term (24950 × 2/3 = 16633, VAT 3659),
    // basic × 5 credited (14950 × 2/3 = 9967, VAT 2193: a credit note of 12160, applied to the invoice).
    const up = await change(c.plans.pro!)
    assert.deepEqual([up.sub_total, up.total, up.credits_applied, up.amount_due], [16633, 20292, 12160, 8132])
    assert.deepEqual(
      [lastOf(fake.invoices).total, lastOf(fake.invoices).credits_applied, lastOf(fake.invoices).amount_due],
      [up.total, up.credits_applied, up.amount_due],
    )
    assert.deepEqual(
      [
        lastOf(fake.creditNotes).total,
        lastOf(fake.creditNotes).amount_allocated,
        lastOf(fake.creditNotes).amount_available,
      ],
      [12160, 12160, 0],
    )
    // Downgrade: the credit (20292) covers the new charge (12160); 8132 stays the customer's at Chargebee.
    const down = await change(c.plans.basic!)
    assert.deepEqual([down.total, down.credits_applied, down.amount_due], [12160, 12160, 0])
    assert.deepEqual([lastOf(fake.creditNotes).total, lastOf(fake.creditNotes).amount_available], [20292, 8132])
    // Promotional credits at Chargebee: a discount line named as credits, not taken for a coupon.
    fake.customers.get(c.id)!.promotional_credits = 1000
    const withCredits = await change(c.plans.pro!)
    assert.deepEqual(withCredits.discounts, [{ description: 'Promotional credits: Promotional Credits', amount: 1000 }])
    await assertSameOnBothSides(t, fake, c)
  })

  it("coupon durations as Chargebee keeps them: a one_time coupon is spent by the change's invoice, a limited_period one ends at its apply_till", async () => {
    const c = await chargebeeCompany(t, fake)
    const now = Math.floor(t.clock.now().getTime() / 1000)
    const activated = fake.change(c.subscriptionId, (sub) =>
      Object.assign(sub, {
        status: 'active',
        trial_end: now - 10 * 86_400,
        current_term_start: now - 10 * 86_400,
        current_term_end: now + 20 * 86_400,
        next_billing_at: now + 20 * 86_400,
      }),
    )
    assert.equal((await deliver(t, fake.event('subscription_activated', { subscription: activated }))).statusCode, 200)
    const once = await coupon(t, { discount_value: 10, duration_type: 'one_time' })
    fake.addCoupon({ id: once, discount_type: 'percentage', discount_percentage: 10, duration_type: 'one_time' })
    const res = await call(t, {
      method: 'PUT',
      url: updateUrl(c),
      token: c.token,
      body: { subscription_plan: c.plans.pro, coupon_code: once },
    })
    assert.equal(res.statusCode, 200, res.body)
    // 16633 charged, 10 % off (1663), and the coupon gone at Chargebee after discounting that invoice.
    assert.deepEqual(res.json().estimate.invoice_estimate.discounts, [{ description: once, amount: 1663 }])
    assert.deepEqual(
      lastOf(fake.invoices).discounts.map((d: any) => d.amount),
      [1663],
    )
    assert.deepEqual(fake.subscriptions.get(c.subscriptionId)!.coupons, [])
    assert.equal(res.json().subscription.coupon_code, null)
    await assertSameOnBothSides(t, fake, c)

    const limited = await coupon(t, { discount_value: 10, duration_type: 'limited_period', duration_month: 3 })
    fake.addCoupon({
      id: limited,
      discount_type: 'percentage',
      discount_percentage: 10,
      duration_type: 'limited_period',
      duration_month: 3,
    })
    const applied = await call(t, { method: 'PUT', url: updateUrl(c), token: c.token, body: { coupon_code: limited } })
    assert.equal(applied.statusCode, 200, applied.body)
    const held = fake.subscriptions.get(c.subscriptionId)!.coupons[0]
    assert.equal(held.coupon_id, limited)
    assert.deepEqual(
      applied.json().subscription.coupons.map((k: any) => [k.coupon_code, k.apply_till]),
      [[limited, held.apply_till]],
    )
    await assertSameOnBothSides(t, fake, c)
  })
})
