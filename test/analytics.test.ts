import { before, it } from 'node:test'
import assert from 'node:assert/strict'
import { locationId, uniq } from './helpers/app.ts'
import { companyClient } from './helpers/factories.ts'
import { forEachEngine, onEachEngine } from './helpers/engine-suites.ts'
import { chargebeeCompany, deliver, withChargebee } from './chargebee.fixtures.ts'
import { SUB, call, cancel, coupon, json, moveTo, setCard, startAt, update } from './subscriptions-helpers.ts'
import { createAnalyticsRepository } from '../src/modules/analytics/analytics.repository.ts'
import { createAnalyticsWriter, rebuildAnalytics } from '../src/modules/analytics/index.ts'

/**
 * Revenue analytics through HTTP and the test clock (docs/analytics.md), on a world built by hand.
 * Trials last 14 days; every company starts 2031-01-01 10:00 UTC (a Wednesday), so trials end
 * 2031-01-15 10:00. Plans (EUR): M 30.00 a month, PRO 50.00 a month, Y 360.00 a year; U 10.00 a
 * month in USD.
 *   A  M × 2, card      → active Jan 15: 6000; Feb 10 upgrade to PRO × 2: 10000; Mar 10 back to M × 2: 6000
 *   B  Y × 1, card      → active Jan 15: 36000 ÷ 12 = 3000 throughout
 *   C  PRO × 1, card, 20 % forever coupon → Jan 15: 4000; Feb 10 downgrade to M under the coupon: 2400
 *   D  M × 1, card      → Jan 15: 3000; Jan 20 cancels at term end (non_renewing keeps 3000); Feb 15 churns
 *   E  M × 1, no card   → its trial ends cancelled: never MRR
 *   F  U × 1, card      → Jan 15: 1000 USD (left out of EUR)
 *   G  P × 1, card      → Jan 15: 2000 GBP; Feb 5 paused: 0 (churn); Mar 5 resumed: 2000 (reactivation)
 * Reactivation: a local cancelled subscription cannot change, so here it is seen through plan_id
 * (A leaves M on Feb 10 and comes back on Mar 10); a company's, from Chargebee, in the last suite.
 * Pause: G, alone in GBP so that the EUR figures stay as they are.
 */
const ALL = { new: 0, expansion: 0, contraction: 0, churn: 0, reactivation: 0 }
const MRR = '/api/v1/analytics/mrr'
const SUMMARY = '/api/v1/analytics/summary'

onEachEngine('revenue analytics', { TEST_CLOCK_ENABLED: true, TRIAL_DAYS: 14, CURRENCY_CODE: 'EUR' }, (t) => {
  const plans: Record<string, { id: string; sku: string }> = {}
  const ids: Record<string, { id: string; subscription: string }> = {}
  let companyToken = ''

  async function newPlan(key: string, fields: Record<string, unknown>) {
    const sku = uniq(`an-${key}`)
    const body = { plan: { sku, name: key, plan_family: 'core', period_unit: 'month', features: [], ...fields } }
    const res = await call(t, { method: 'POST', url: `${SUB}/plans`, body })
    assert.equal(res.statusCode, 202, res.body)
    plans[key] = { id: locationId(res), sku }
  }

  async function newCompany(key: string, product: string, plan: string, quantity: number) {
    const res = await call(t, {
      method: 'POST',
      url: '/api/v1/companies',
      body: {
        name: uniq(key),
        country: 'IT',
        timezone: 'Europe/Rome',
        product_sku: product,
        subscription_plan: plans[plan]!.sku,
        plan_quantity: quantity,
      },
    })
    assert.equal(res.statusCode, 202, res.body)
    const id = locationId(res)
    const status = await json(t, 200, { url: `${SUB}/${id}/status` })
    ids[key] = { id, subscription: status.subscription_id }
  }

  const change = async (key: string, body: Record<string, unknown>) => {
    const res = await update(t, ids[key]!.id, ids[key]!.subscription, body)
    assert.equal(res.statusCode, 200, res.body)
  }

  before(async () => {
    await startAt(t, '2031-01-01T10:00:00Z')
    await newPlan('M', { price: 30 })
    await newPlan('PRO', { price: 50 })
    await newPlan('Y', { price: 360, period_unit: 'year' })
    await newPlan('U', { price: 10, currency_code: 'USD' })
    await newPlan('P', { price: 20, currency_code: 'GBP' })
    const product = async (skus: string[]) => {
      const sku = uniq('an-product')
      const body = {
        product: { sku, name: 'Workforce', visible: true, subscription_manager: 'local', allowed_plans: skus },
      }
      assert.equal((await call(t, { method: 'POST', url: `${SUB}/products`, body })).statusCode, 202)
      return sku
    }
    const eur = await product([plans.M!.sku, plans.PRO!.sku, plans.Y!.sku])
    const usd = await product([plans.U!.sku])
    const gbp = await product([plans.P!.sku])
    await newCompany('A', eur, 'M', 2)
    await newCompany('B', eur, 'Y', 1)
    await newCompany('C', eur, 'PRO', 1)
    await newCompany('D', eur, 'M', 1)
    await newCompany('E', eur, 'M', 1)
    await newCompany('F', usd, 'U', 1)
    await newCompany('G', gbp, 'P', 1)
    for (const key of ['A', 'B', 'C', 'D', 'F', 'G']) await setCard(t, ids[key]!.id)
    const twenty = await coupon(t, { discount_type: 'percentage', discount_value: 20, duration_type: 'forever' })
    await change('C', { coupon_code: twenty })
    const client = await companyClient(t, ids.A!.id)
    companyToken = await t.tokenFor(client.client_id, client.client_secret)

    await moveTo(t, '2031-01-20T10:00:00Z')
    assert.equal((await cancel(t, ids.D!.id, undefined, '?end_of_term=true')).statusCode, 200)
    await moveTo(t, '2031-02-05T10:00:00Z')
    const paused = await call(t, {
      method: 'PUT',
      url: `${SUB}/${ids.G!.id}/pause`,
      body: { pause_option: 'immediately' },
    })
    assert.equal(paused.statusCode, 200, paused.body)
    await moveTo(t, '2031-02-10T10:00:00Z')
    await change('A', { subscription_plan: plans.PRO!.sku, plan_quantity: 2 })
    await change('C', { subscription_plan: plans.M!.sku, plan_quantity: 1 })
    await moveTo(t, '2031-03-05T10:00:00Z')
    const resumed = await call(t, {
      method: 'PUT',
      url: `${SUB}/${ids.G!.id}/resume`,
      body: { resume_option: 'immediately' },
    })
    assert.equal(resumed.statusCode, 200, resumed.body)
    await moveTo(t, '2031-03-10T10:00:00Z')
    await change('A', { subscription_plan: plans.M!.sku, plan_quantity: 2 })
    await moveTo(t, '2031-04-01T00:00:00Z')
  })

  const series = (query: Record<string, string>) => json(t, 200, { url: MRR, query })
  const at = (body: any, date: string) => body.points.find((p: any) => p.date === date)

  it('a daily series: the trial conversions are new, the upgrade expansion, the downgrade under a coupon contraction, the end of term churn', async () => {
    const body = await series({ from: '2031-01-14', to: '2031-03-10' })
    assert.equal(body.currency_code, 'EUR')
    assert.equal(body.points.length, 56)
    assert.deepEqual(at(body, '2031-01-14'), {
      date: '2031-01-14',
      mrr: 0,
      arr: 0,
      customers: 0,
      arpa: 0,
      movements: ALL,
      net_new_mrr: 0,
    })
    // A 6000 + B 3000 + C 4000 + D 3000; E's trial ends cancelled; F counts in USD.
    assert.deepEqual(at(body, '2031-01-15'), {
      date: '2031-01-15',
      mrr: 16000,
      arr: 192000,
      customers: 4,
      arpa: 4000,
      movements: { ...ALL, new: 16000 },
      net_new_mrr: 16000,
    })
    // D's cancellation at term end leaves it non_renewing: no movement.
    assert.deepEqual(at(body, '2031-01-20').movements, ALL)
    // A 6000 → 10000; C 4000 → 3000 × 0.8 = 2400.
    const feb10 = at(body, '2031-02-10')
    assert.deepEqual(
      [feb10.mrr, feb10.movements, feb10.net_new_mrr],
      [18400, { ...ALL, expansion: 4000, contraction: 1600 }, 2400],
    )
    // D's term ends: churn; A and C renew at the same MRR.
    const feb15 = at(body, '2031-02-15')
    assert.deepEqual([feb15.mrr, feb15.customers, feb15.movements], [15400, 3, { ...ALL, churn: 3000 }])
    assert.deepEqual(at(body, '2031-03-10').movements, { ...ALL, contraction: 4000 })
    assert.equal(at(body, '2031-03-10').mrr, 11400)
  })

  it('a monthly series nets each company between month ends; the last point is `to`', async () => {
    const body = await series({ from: '2031-01-01', to: '2031-03-20', interval: 'month' })
    assert.deepEqual(
      body.points.map((p: any) => [p.date, p.mrr, p.customers, p.movements, p.net_new_mrr]),
      [
        ['2031-01-31', 16000, 4, { ...ALL, new: 16000 }, 16000],
        // A +4000, C −1600, D −3000.
        ['2031-02-28', 15400, 3, { ...ALL, expansion: 4000, contraction: 1600, churn: 3000 }, -600],
        ['2031-03-20', 11400, 3, { ...ALL, contraction: 4000 }, -4000],
      ],
    )
  })

  it('a weekly series: each Sunday, then `to`; every point reconciles', async () => {
    const body = await series({ from: '2031-01-01', to: '2031-03-31', interval: 'week' })
    assert.equal(body.points[0].date, '2031-01-05')
    assert.equal(body.points.at(-1).date, '2031-03-31')
    assert.equal(body.points.length, 14)
    let previous = 0
    for (const p of body.points) {
      const m = p.movements
      assert.equal(p.net_new_mrr, m.new + m.expansion + m.reactivation - m.contraction - m.churn)
      assert.equal(p.mrr - previous, p.net_new_mrr)
      previous = p.mrr
    }
  })

  it('plan_id counts only MRR on that plan: moving off it is churn, back onto it reactivation', async () => {
    const byMonth = async (plan: string) =>
      (await series({ from: '2031-01-01', to: '2031-03-31', interval: 'month', plan_id: plans[plan]!.id })).points.map(
        (p: any) => [p.mrr, p.movements],
      )
    // On M: A 6000 + D 3000; Feb: A leaves (6000) and D churns (3000), C arrives (2400); Mar: A comes back.
    assert.deepEqual(await byMonth('M'), [
      [9000, { ...ALL, new: 9000 }],
      [2400, { ...ALL, new: 2400, churn: 9000 }],
      [8400, { ...ALL, reactivation: 6000 }],
    ])
    assert.deepEqual(await byMonth('PRO'), [
      [4000, { ...ALL, new: 4000 }],
      [10000, { ...ALL, new: 10000, churn: 4000 }],
      [0, { ...ALL, churn: 10000 }],
    ])
    assert.deepEqual(await byMonth('Y'), [
      [3000, { ...ALL, new: 3000 }],
      [3000, ALL],
      [3000, ALL],
    ])
  })

  it('a paused subscription counts no MRR: its pause is churn, its resumption reactivation', async () => {
    const gbp = await series({ from: '2031-01-01', to: '2031-03-31', interval: 'month', currency_code: 'GBP' })
    assert.deepEqual(
      gbp.points.map((p: any) => [p.date, p.mrr, p.customers, p.movements]),
      [
        ['2031-01-31', 2000, 1, { ...ALL, new: 2000 }],
        ['2031-02-28', 0, 0, { ...ALL, churn: 2000 }],
        ['2031-03-31', 2000, 1, { ...ALL, reactivation: 2000 }],
      ],
    )
  })

  it('currency_code counts that currency only', async () => {
    const usd = await series({ from: '2031-01-31', to: '2031-01-31', currency_code: 'USD' })
    assert.deepEqual(usd.points[0], {
      date: '2031-01-31',
      mrr: 1000,
      arr: 12000,
      customers: 1,
      arpa: 1000,
      movements: ALL,
      net_new_mrr: 0,
    })
    assert.equal(usd.currency_code, 'USD')
    const jpy = await series({ from: '2031-01-31', to: '2031-01-31', currency_code: 'JPY' })
    assert.equal(jpy.points[0].mrr, 0)
  })

  it('the summary: churn, revenue churn and net revenue retention against 30 days before', async () => {
    // Feb 8: A 6000, B 3000, C 4000, D 3000. Mar 10: A 6000 (up and back down nets to nothing), B 3000,
    // C 2400 (contraction 1600), D 0 (churn 3000).
    assert.deepEqual(await json(t, 200, { url: SUMMARY, query: { date: '2031-03-10' } }), {
      date: '2031-03-10',
      currency_code: 'EUR',
      mrr: 11400,
      arr: 136800,
      customers: 3,
      arpa: 3800,
      trials: 0,
      customer_churn_rate: 0.25,
      revenue_churn_rate: 0.2875,
      net_revenue_retention: 0.7125,
    })
    // In the trials: no MRR 30 days before, so no rates.
    assert.deepEqual(await json(t, 200, { url: SUMMARY, query: { date: '2031-01-10' } }), {
      date: '2031-01-10',
      currency_code: 'EUR',
      mrr: 0,
      arr: 0,
      customers: 0,
      arpa: 0,
      trials: 5,
      customer_churn_rate: null,
      revenue_churn_rate: null,
      net_revenue_retention: null,
    })
  })

  it('npm run analytics:rebuild writes from the history the table the changes wrote', async () => {
    const repo = createAnalyticsRepository()
    const db = t.app.database.db
    const live = await repo.everything(db)
    assert.ok(live.length >= 20)
    await rebuildAnalytics({ db, repo, writer: createAnalyticsWriter({ repo }) })
    assert.deepEqual(await repo.everything(db), live)
  })

  it('400: at most 1,000 points, from not after to, dates and plans that exist', async () => {
    assert.equal((await series({ from: '2031-01-01', to: '2033-09-26' })).points.length, 1000)
    const refused = async (query: Record<string, string>, url = MRR) => {
      const res = await call(t, { url, query })
      assert.equal(res.statusCode, 400, res.body)
      return res.json().errors as string
    }
    assert.match(await refused({ from: '2031-01-01', to: '2033-09-27' }), /1000 points/)
    assert.match(await refused({ from: '2031-02-01', to: '2031-01-31' }), /from/)
    assert.match(await refused({ from: '2031-02-30', to: '2031-03-01' }), /from/)
    assert.match(await refused({ from: '2031-01-01', to: '2031-01-02', interval: 'year' }), /interval/)
    assert.match(await refused({ from: '2031-01-01', to: '2031-01-02', plan_id: 'nope' }), /plan_id/)
    assert.match(await refused({ date: '31-01-2031' }, SUMMARY), /date/)
    assert.match(await refused({ date: '2031-01-01', currency_code: 'eur' }, SUMMARY), /currency_code/)
  })

  it('403 for a company token, 401 without one', async () => {
    for (const url of [`${MRR}?from=2031-01-01&to=2031-01-02`, `${SUMMARY}?date=2031-01-01`]) {
      assert.equal((await call(t, { url, token: companyToken })).statusCode, 403)
      assert.equal((await call(t, { url, token: null })).statusCode, 401)
    }
  })
})

/**
 * A Chargebee subscription counts from what the mirror holds, as its webhooks change it: the plan
 * (29.90 × 5 = 14950 a month) from its activation, churn at its cancellation, reactivation when
 * Chargebee reactivates it.
 */
forEachEngine('revenue analytics of a Chargebee subscription', (engine) => {
  const { t, fake } = withChargebee(engine)

  it('activation is new, cancellation churn, reactivation reactivation, on the days Chargebee reports', async () => {
    const c = await chargebeeCompany(t, fake)
    const s0 = fake.subscriptions.get(c.subscriptionId)!
    const day = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10)
    const report = async (type: string, status: string, at: number) => {
      fake.change(c.subscriptionId, (s) =>
        Object.assign(s, { status, current_term_start: at, current_term_end: at + 31 * 86_400 }),
      )
      const res = await deliver(t, fake.event(type, { subscriptionId: c.subscriptionId }, at))
      assert.deepEqual([res.statusCode, res.json().outcome], [200, 'applied'], res.body)
    }
    const start = s0.trial_end
    await report('subscription_activated', 'active', start)
    await report('subscription_cancelled', 'cancelled', start + 40 * 86_400)
    await report('subscription_reactivated', 'active', start + 60 * 86_400)
    const body = await json(t, 200, {
      url: MRR,
      query: { from: day(start - 86_400), to: day(start + 61 * 86_400) },
    })
    const moved = body.points.filter((p: any) => p.net_new_mrr !== 0).map((p: any) => [p.date, p.mrr, p.movements])
    assert.deepEqual(moved, [
      [day(start), 14950, { ...ALL, new: 14950 }],
      [day(start + 40 * 86_400), 0, { ...ALL, churn: 14950 }],
      [day(start + 60 * 86_400), 14950, { ...ALL, reactivation: 14950 }],
    ])
  })
})
