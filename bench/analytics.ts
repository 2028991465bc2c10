/**
 * Revenue analytics on PostgreSQL (bench/README.md, "Revenue analytics"): a year of subscription
 * changes written through the analytics writer the service uses (the subscriptions themselves
 * by SQL), then a 365-point daily series timed against GET /api/v1/companies?limit=100, and a
 * sparse population (10,000 companies, 1,000 changing) against a dense one (1,000, all changing)
 * with the same changes: the series' cost should follow the changes, not the companies.
 */
import { sql } from 'kysely'
import { createDatabase } from '../src/db/database.ts'
import { createAnalyticsRepository } from '../src/modules/analytics/analytics.repository.ts'
import { type AnalyticsWriter, createAnalyticsWriter, subscriptionMrr } from '../src/modules/analytics/index.ts'
import { type LatencyFigure, measureLatency } from './measure.ts'
import { ADMIN, token } from './seed.ts'

export interface AnalyticsFigures {
  seedSeconds: number
  writesPerSecond: number
  series: LatencyFigure
  companies: LatencyFigure
  sparse: LatencyFigure
  dense: LatencyFigure
}

const YEAR = Date.UTC(2026, 0, 1)
const DAY = 86_400_000
const BATCH = 200
const LANES = 8

type Db = Awaited<ReturnType<typeof createDatabase>>['db']

// A fixed sequence, so every run seeds the same world.
function random(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let x = Math.imul(s ^ (s >>> 15), 1 | s)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** `companies` active subscriptions in `currency`; `changes` changes over the year among the first `changing`. */
async function population(
  db: Db,
  writer: AnalyticsWriter,
  spec: { currency: string; companies: number; changing: number; changes: number; seed: number },
) {
  const next = random(spec.seed)
  const prefix = `bench-${spec.currency.toLowerCase()}-${spec.seed}`
  const plans = [
    { sku: `${prefix}-m`, price: 3000, unit: 'month' },
    { sku: `${prefix}-pro`, price: 5500, unit: 'month' },
    { sku: `${prefix}-y`, price: 33000, unit: 'year' },
  ]
  for (const p of plans)
    await sql`INSERT INTO plans (id, sku, name, price_cents, plan_family, period_unit, currency_code)
      VALUES (gen_random_uuid(), ${p.sku}, ${p.sku}, ${p.price}, 'core', ${p.unit}, ${spec.currency})`.execute(db)
  const { rows } = await sql<{ id: string }>`
    INSERT INTO companies (id, name, country, timezone)
    SELECT gen_random_uuid(), ${prefix} || ' ' || g, 'IT', 'Europe/Rome' FROM generate_series(1, ${spec.companies}) g
    RETURNING id`.execute(db)
  const ids = rows.map((r) => r.id)
  await sql`
    INSERT INTO subscriptions (company_id, id, customer_id, provider, product_sku, plan_sku, plan_quantity, status,
      current_term_start, current_term_end)
    SELECT c, gen_random_uuid(), c::text, 'local', 'bench', ${plans[0]!.sku}, 1 + (i % 5), 'active',
      ${new Date(YEAR - DAY)}, ${new Date(YEAR + 30 * DAY)}
    FROM unnest(${ids}::uuid[]) WITH ORDINALITY AS t(c, i)`.execute(db)
  // The state before the year, one row per company and key as the writer would leave it (priced by
  // the same subscriptionMrr); the year's changes then go through the writer itself.
  const plan = (await sql<{ id: string }>`SELECT id FROM plans WHERE sku = ${plans[0]!.sku}`.execute(db)).rows[0]!.id
  const before = new Date(YEAR - DAY).toISOString().slice(0, 10)
  const initial = ids.flatMap((id, i) => {
    const mrr = subscriptionMrr({
      status: 'active',
      lines: [{ kind: 'plan', id: plans[0]!.sku, amount: plans[0]!.price * (1 + ((i + 1) % 5)), period: 'month' }],
      coupon: null,
    })
    const row = { company_id: id, currency_code: spec.currency, day: before, mrr, prev_mrr: 0, trials: 0 }
    return [
      { ...row, plan_id: '*', prev_trials: 0, had_mrr_before: false },
      { ...row, plan_id: plan, prev_trials: 0, had_mrr_before: false },
    ]
  })
  for (let i = 0; i < initial.length; i += 5000)
    await db
      .insertInto('analytics_mrr_days')
      .values(initial.slice(i, i + 5000))
      .execute()
  const changes = Array.from({ length: spec.changes }, () => ({
    at: YEAR + Math.floor(next() * 365 * DAY),
    company: ids[Math.floor(next() * spec.changing)]!,
    plan: plans[Math.floor(next() * plans.length)]!.sku,
    quantity: 1 + Math.floor(next() * 5),
    status: next() < 0.1 ? 'cancelled' : 'active',
  })).sort((a, b) => a.at - b.at)
  // Companies in LANES partitions written side by side, each in day order within its lane.
  const laneOf = new Map(ids.map((id, i) => [id, i % LANES]))
  const lanes = Array.from({ length: LANES }, (_, lane) => changes.filter((c) => laneOf.get(c.company) === lane))
  const started = performance.now()
  await Promise.all(
    lanes.map(async (lane) => {
      for (let i = 0; i < lane.length; i += BATCH)
        await db.transaction().execute(async (trx) => {
          for (const c of lane.slice(i, i + BATCH)) {
            await trx
              .updateTable('subscriptions')
              .set({ plan_sku: c.plan, plan_quantity: c.quantity, status: c.status as 'active' })
              .where('company_id', '=', c.company)
              .execute()
            await writer.record(trx, c.company, new Date(c.at))
          }
        })
    }),
  )
  return { writesPerSecond: changes.length / ((performance.now() - started) / 1000) }
}

export async function measureAnalytics(
  serverUrl: string,
  databaseUrl: string,
  log: (line: string) => void,
): Promise<AnalyticsFigures> {
  const database = await createDatabase({ databaseUrl, poolSize: LANES, statementTimeoutMs: 600_000 })
  try {
    const repo = createAnalyticsRepository()
    const writer = createAnalyticsWriter({ repo })
    const started = performance.now()
    await sql`INSERT INTO products (id, sku, name, visible, subscription_manager, allowed_plans)
      VALUES (gen_random_uuid(), 'bench', 'Bench', true, 'local', '{}') ON CONFLICT DO NOTHING`.execute(database.db)
    const main = await population(database.db, writer, {
      currency: 'EUR',
      companies: 10_000,
      changing: 10_000,
      changes: 20_000,
      seed: 1,
    })
    const spec = { changes: 2_000, seed: 2 }
    await population(database.db, writer, { ...spec, currency: 'GBP', companies: 10_000, changing: 1_000 })
    await population(database.db, writer, { ...spec, currency: 'USD', companies: 1_000, changing: 1_000 })
    await sql`ANALYZE`.execute(database.db)
    const seedSeconds = (performance.now() - started) / 1000
    log(`  analytics: seeded in ${seedSeconds.toFixed(0)} s, ${main.writesPerSecond.toFixed(0)} changes/s written`)

    const auth = { authorization: `Bearer ${await token(serverUrl, ADMIN.client_id, ADMIN.client_secret)}` }
    const mrr = (currency: string) =>
      `${serverUrl}/api/v1/analytics/mrr?from=2026-01-01&to=2026-12-31&interval=day&currency_code=${currency}`
    const series = await measureLatency(mrr('EUR'), auth, 40, 10)
    const companies = await measureLatency(`${serverUrl}/api/v1/companies?limit=100`, auth, 40, 10)
    const sparse = await measureLatency(mrr('GBP'), auth, 40, 10)
    const dense = await measureLatency(mrr('USD'), auth, 40, 10)
    log(
      `  analytics: 365-point series p50 ${series.p50.toFixed(2)} ms, companies?limit=100 ${companies.p50.toFixed(2)} ms` +
        ` (${(series.p50 / companies.p50).toFixed(1)} ×); 10,000 companies of which 1,000 change` +
        ` ${sparse.p50.toFixed(2)} ms, 1,000 all changing ${dense.p50.toFixed(2)} ms (${(sparse.p50 / dense.p50).toFixed(2)} ×)`,
    )
    return { seedSeconds, writesPerSecond: main.writesPerSecond, series, companies, sparse, dense }
  } finally {
    await database.close()
  }
}
