import { before, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { locationId, uniq } from './helpers/app.ts'
import { onEachEngine } from './helpers/engine-suites.ts'
import {
  SUB,
  businessNow,
  call,
  cancel,
  coupon,
  json,
  moveTo,
  removeCancellation,
  setCard,
  update,
} from './subscriptions-helpers.ts'
import { createAnalyticsRepository } from '../src/modules/analytics/analytics.repository.ts'
import { createAnalyticsWriter, rebuildAnalytics, subscriptionMrr } from '../src/modules/analytics/index.ts'

/**
 * For any sequence of subscription changes (plan, quantity, coupon), cancellations, removals,
 * cards and clock moves on two companies: every daily point reconciles (previous mrr + the
 * movements = mrr), MRR and customers never go negative, the weekly and monthly points are the
 * daily ones on their days, and the plans' series add up to the whole. Each run bills in a
 * currency of its own, so runs do not see each other. At the end the rebuild equals the table.
 * Deterministic: ANALYTICS_PROPERTY_SEED and ANALYTICS_PROPERTY_RUNS to try others.
 */
const SEED = Number(process.env.ANALYTICS_PROPERTY_SEED ?? 360_036)
const RUNS = Number(process.env.ANALYTICS_PROPERTY_RUNS ?? 4)
const CURRENCIES = ['GBP', 'CHF', 'SEK', 'NOK', 'DKK', 'PLN', 'CZK', 'HUF', 'RON', 'CAD', 'AUD', 'NZD']
const PLANS = {
  m: { price: 30, period_unit: 'month' },
  pro: { price: 55.5, period_unit: 'month' },
  y: { price: 333, period_unit: 'year' },
}
type PlanKey = keyof typeof PLANS
const DAY = 86_400_000

const action = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('change' as const),
      plan: fc.constantFrom<PlanKey>('m', 'pro', 'y'),
      quantity: fc.integer({ min: 1, max: 3 }),
      coupon: fc.constantFrom<'forever' | 'limited' | 'once' | null>(null, null, 'forever', 'limited', 'once'),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel_at_term_end' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('remove_cancellation' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel_now' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('card' as const) }) },
)
const story = fc.record({
  cards: fc.tuple(fc.boolean(), fc.boolean()),
  steps: fc.array(
    fc.record({ company: fc.integer({ min: 0, max: 1 }), wait: fc.integer({ min: 0, max: 40 }), action }),
    { minLength: 3, maxLength: 8 },
  ),
})

onEachEngine('revenue analytics, any story,', { TEST_CLOCK_ENABLED: true, TRIAL_DAYS: 14 }, (t) => {
  const codes: Record<string, string> = {}
  before(async () => {
    await moveTo(t, '2032-01-01T09:00:00Z')
    codes.forever = await coupon(t, { discount_value: 25, duration_type: 'forever' })
    codes.limited = await coupon(t, { discount_value: 50, duration_type: 'limited_period', duration_month: 2 })
    codes.once = await coupon(t, { discount_value: 30, duration_type: 'one_time' })
  })

  let run = 0
  async function play(s: typeof story extends fc.Arbitrary<infer S> ? S : never) {
    const currency = CURRENCIES[run++ % CURRENCIES.length]!
    const plans: Record<string, { id: string; sku: string }> = {}
    for (const [key, fields] of Object.entries(PLANS)) {
      const sku = uniq(`ap-${key}`)
      const body = { plan: { sku, name: key, plan_family: 'core', features: [], currency_code: currency, ...fields } }
      const res = await call(t, { method: 'POST', url: `${SUB}/plans`, body })
      assert.equal(res.statusCode, 202, res.body)
      plans[key] = { id: locationId(res), sku }
    }
    const productSku = uniq('ap-product')
    const allowed = Object.values(plans).map((p) => p.sku)
    const product = { sku: productSku, name: 'W', visible: true, subscription_manager: 'local', allowed_plans: allowed }
    assert.equal((await call(t, { method: 'POST', url: `${SUB}/products`, body: { product } })).statusCode, 202)
    const start = await businessNow(t)
    const companies: { id: string; subscription: string }[] = []
    for (const withCard of s.cards) {
      const res = await call(t, {
        method: 'POST',
        url: '/api/v1/companies',
        body: {
          name: uniq('AP'),
          country: 'IT',
          timezone: 'Europe/Rome',
          product_sku: productSku,
          subscription_plan: plans.m!.sku,
          plan_quantity: 1,
        },
      })
      assert.equal(res.statusCode, 202, res.body)
      const id = locationId(res)
      companies.push({ id, subscription: (await json(t, 200, { url: `${SUB}/${id}/status` })).subscription_id })
      if (withCard) await setCard(t, id)
    }
    let now = start.getTime()
    for (const step of s.steps) {
      if (step.wait > 0) await moveTo(t, new Date((now += step.wait * DAY)).toISOString())
      const c = companies[step.company]!
      const a = step.action
      const res =
        a.kind === 'change'
          ? await update(t, c.id, c.subscription, {
              subscription_plan: plans[a.plan]!.sku,
              plan_quantity: a.quantity,
              coupon_code: a.coupon === null ? null : codes[a.coupon],
            })
          : a.kind === 'cancel_at_term_end'
            ? await cancel(t, c.id, undefined, '?end_of_term=true')
            : a.kind === 'remove_cancellation'
              ? await removeCancellation(t, c.id, c.subscription)
              : a.kind === 'cancel_now'
                ? await cancel(t, c.id, undefined, '?end_of_term=false')
                : await setCard(t, c.id).then(() => ({ statusCode: 200, body: '' }))
      assert.ok([200, 400, 409].includes(res.statusCode), `${a.kind}: ${res.statusCode} ${res.body}`)
    }
    await moveTo(t, new Date((now += 45 * DAY)).toISOString())
    // Cancelled now, so no job of this run is left to slow the next ones.
    for (const c of companies) await cancel(t, c.id, undefined, '?end_of_term=false')

    const from = new Date(start.getTime() - DAY).toISOString().slice(0, 10)
    const to = new Date(now).toISOString().slice(0, 10)
    const series = (query: Record<string, string>) =>
      json(t, 200, { url: '/api/v1/analytics/mrr', query: { from, to, currency_code: currency, ...query } })
    const daily = await series({})
    const byDate = new Map<string, any>(daily.points.map((p: any) => [p.date, p]))
    let previous = 0
    for (const p of daily.points) {
      const m = p.movements
      assert.ok(p.mrr >= 0 && p.customers >= 0 && p.customers <= 2, JSON.stringify(p))
      for (const v of Object.values(m)) assert.ok((v as number) >= 0, JSON.stringify(p))
      assert.equal(p.net_new_mrr, m.new + m.expansion + m.reactivation - m.contraction - m.churn, JSON.stringify(p))
      assert.equal(p.mrr - previous, p.net_new_mrr, JSON.stringify(p))
      assert.equal(p.arr, 12 * p.mrr)
      previous = p.mrr
    }
    assert.equal(daily.points.at(-1).mrr, 0)
    for (const interval of ['week', 'month']) {
      for (const p of (await series({ interval })).points) {
        const d = byDate.get(p.date)
        assert.deepEqual([p.mrr, p.customers], [d.mrr, d.customers], `${interval} ${p.date}`)
      }
    }
    const perPlan = await Promise.all(Object.values(plans).map((p) => series({ interval: 'month', plan_id: p.id })))
    for (const [i, p] of (await series({ interval: 'month' })).points.entries())
      assert.equal(
        perPlan.reduce((sum, s) => sum + s.points[i].mrr, 0),
        p.mrr,
        `plans add up on ${p.date}`,
      )
  }

  it('every point reconciles, MRR never goes negative, intervals and plans agree', async () => {
    await fc.assert(
      fc.asyncProperty(story, async (s) => {
        await play(s)
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    )
  })

  it('subscriptionMrr: never negative, 0 unless active or non_renewing, yearly ÷ 12 and weekly × 52 ÷ 12 half-up', () => {
    const line = (amount: number, period: 'week' | 'month' | 'year') => ({
      kind: 'plan' as const,
      id: 'p',
      amount,
      period,
    })
    assert.equal(subscriptionMrr({ status: 'active', lines: [line(1000, 'year')], coupon: null }), 83)
    assert.equal(subscriptionMrr({ status: 'non_renewing', lines: [line(1002, 'year')], coupon: null }), 84)
    assert.equal(subscriptionMrr({ status: 'active', lines: [line(100, 'week')], coupon: null }), 433)
    for (const status of ['in_trial', 'paused', 'cancelled', 'future'])
      assert.equal(subscriptionMrr({ status, lines: [line(1000, 'month')], coupon: null }), 0)
    const coupon = fc.record({
      discount_type: fc.constantFrom<'percentage' | 'fixed_amount'>('percentage', 'fixed_amount'),
      discount_value_minor: fc.integer({ min: 0, max: 20_000 }),
      apply_on: fc.constantFrom<'invoice_amount' | 'each_specified_item'>('invoice_amount', 'each_specified_item'),
      plan_ids: fc.constantFrom(['p'], []),
      addon_ids: fc.constantFrom(['a'], []),
      period: fc.constantFrom<'week' | 'month' | 'year'>('week', 'month', 'year'),
    })
    const lines = fc.array(
      fc.record({
        kind: fc.constantFrom<'plan' | 'addon'>('plan', 'addon'),
        id: fc.constantFrom('p', 'a'),
        amount: fc.integer({ min: 0, max: 10_000_000 }),
        period: fc.constantFrom<'week' | 'month' | 'year'>('week', 'month', 'year'),
      }),
      { maxLength: 4 },
    )
    fc.assert(
      fc.property(lines, fc.option(coupon), (ls, c) => {
        const mrr = subscriptionMrr({ status: 'active', lines: ls, coupon: c })
        const gross = subscriptionMrr({ status: 'active', lines: ls, coupon: null })
        return Number.isInteger(mrr) && mrr >= 0 && mrr <= gross
      }),
      { seed: SEED },
    )
  })

  it('the rebuild after all those stories equals the table', async () => {
    const repo = createAnalyticsRepository()
    const db = t.app.database.db
    const live = await repo.everything(db)
    await rebuildAnalytics({ db, repo, writer: createAnalyticsWriter({ repo }) })
    assert.deepEqual(await repo.everything(db), live)
  })
})
