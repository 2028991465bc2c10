import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import type { FakeChargebee } from './helpers/fake-chargebee.ts'
import { withChargebee, chargebeeCompany, deliver } from './chargebee.fixtures.ts'
import { SUB, call, statusOf, update } from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

/**
 * Scheduled changes, pause and resume on a Chargebee subscription: each is one write through the
 * SDK, with an idempotency key, and what Chargebee answers is what the details show.
 */
forEachEngine('chargebee scheduled changes and pause', (engine) => {
  const { t, fake } = withChargebee(engine)

  async function activeCompany(t: TestApp, fake: FakeChargebee) {
    const c = await chargebeeCompany(t, fake, { plans: { basic: { price: 30 }, pro: { price: 50 } } })
    fake.change(c.subscriptionId, (s) =>
      Object.assign(s, {
        status: 'active',
        current_term_start: s.trial_end,
        current_term_end: s.trial_end + 30 * 86_400,
      }),
    )
    const event = fake.event('subscription_activated', { subscriptionId: c.subscriptionId })
    assert.equal((await deliver(t, event)).json().outcome, 'applied')
    return c
  }
  const lastCall = () => {
    const { idempotencyKey, apiKey: _, ...rest } = fake.requests.at(-1)!
    assert.match(idempotencyKey ?? '', /^[0-9a-f-]{36}$/)
    return rest
  }

  it("schedules a change for the term's end with change_option end_of_term, and removes it", async () => {
    const c = await activeCompany(t, fake)
    const res = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.pro, end_of_term: true }, c.token)
    assert.equal(res.statusCode, 200, res.body)
    const sent = lastCall()
    assert.deepEqual(
      [sent.path, sent.params.change_option, sent.params.invoice_immediately],
      [`/subscriptions/${c.subscriptionId}/update_for_items`, 'end_of_term', undefined],
    )
    const s = res.json().subscription
    assert.deepEqual(
      [s.plan_id, s.has_scheduled_changes, s.scheduled_change.subscription_plan],
      [c.plans.basic, true, c.plans.pro],
    )
    // The renewal's invoice under the new choice: pro, 5 × 50.00 = 250.00 before tax.
    assert.equal(res.json().estimate.invoice_estimate.sub_total, 25000)

    const removed = await call(t, { method: 'PUT', url: `${SUB}/${c.id}/remove_scheduled_changes`, token: c.token })
    assert.equal(removed.statusCode, 200, removed.body)
    assert.equal(lastCall().path, `/subscriptions/${c.subscriptionId}/remove_scheduled_changes`)
    assert.equal(removed.json().subscription.has_scheduled_changes, false)
  })

  it('pauses and resumes through pause and resume', async () => {
    const c = await activeCompany(t, fake)
    const paused = await call(t, {
      method: 'PUT',
      url: `${SUB}/${c.id}/pause`,
      token: c.token,
      body: { pause_option: 'immediately' },
    })
    assert.equal(paused.statusCode, 200, paused.body)
    assert.deepEqual(lastCall(), {
      method: 'POST',
      path: `/subscriptions/${c.subscriptionId}/pause`,
      params: { pause_option: 'immediately' },
    })
    assert.equal(paused.json().subscription.status, 'paused')
    assert.deepEqual((await statusOf(t, c)).features, [], 'paused: the plan features are withdrawn')

    const resumed = await call(t, { method: 'PUT', url: `${SUB}/${c.id}/resume`, token: c.token })
    assert.equal(resumed.statusCode, 200, resumed.body)
    assert.deepEqual(lastCall(), {
      method: 'POST',
      path: `/subscriptions/${c.subscriptionId}/resume`,
      params: { resume_option: 'immediately', charges_handling: 'invoice_immediately' },
    })
    assert.equal(resumed.json().subscription.status, 'active')
  })
})
