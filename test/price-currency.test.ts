import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { PGlite } from '@electric-sql/pglite'
import { createPgConfig } from '@electric-sql/pglite/node-postgres'
import { Kysely, PostgresDialect, sql } from 'kysely'
import { buildApp } from '../src/app.ts'
import { loadConfig, type Config } from '../src/config.ts'
import { migrate, readMigrations } from '../src/db/migrate.ts'
import { locationId, uniq, type TestApp } from './helpers/app.ts'
import { withDatabase } from './helpers/databases.ts'
import { company } from './helpers/factories.ts'
import { ALLOWED, PageSession, pathOf } from './hosted-helpers.ts'
import {
  SUB,
  addon,
  at,
  billedCompany,
  call,
  coupon,
  detailsOf,
  estimate,
  json,
  setCard,
  update,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { onEachEngine, forEachEngine } from './helpers/engine-suites.ts'

/**
 * Currency lives on each price (decisions §9.1): plans, addons and fixed-amount coupons carry
 * `currency_code`, CURRENCY_CODE only being the default of a new one. A subscription bills in
 * its plan's currency; an addon, fixed-amount coupon or new plan in another is a 400. Chargebee
 * does the same: an item price has one currency, and a subscription's currency never changes.
 */
const CURRENCY_MIGRATION = '0042_price_currency'

const planBody = (fields: Record<string, unknown> = {}) => ({
  plan: {
    sku: uniq('plan'),
    name: 'Plan',
    price: 29.9,
    plan_family: 'core',
    period_unit: 'month',
    features: ['stamping'],
    ...fields,
  },
})

async function created(t: TestApp, url: string, body: unknown) {
  const res = await call(t, { method: 'POST', url, body })
  assert.equal(res.statusCode, 202, res.body)
  return locationId(res)
}

function refused(res: { statusCode: number; body: string; json(): any }, field: string, sentence?: RegExp) {
  assert.equal(res.statusCode, 400, res.body)
  assert.equal(res.json().code, 'validation_failed')
  assert.ok(res.json().errors.includes(field), `"${res.json().errors}" names ${field}`)
  if (sentence) assert.match(res.json().errors, sentence)
}

/** The service started again over the same database with other settings (a restart with another CURRENCY_CODE). */
async function restartedWith(t: TestApp, overrides: Partial<Config>) {
  const app = await buildApp({
    config: loadConfig({}, { LOG_LEVEL: 'silent', SCHEDULER_ENABLED: false, RATE_LIMIT_MAX: 0, ...overrides }),
    database: t.app.database,
    clock: t.clock,
    realClock: t.realClock,
    logger: false,
  })
  await app.ready()
  return app
}

onEachEngine('currency on each price', { TEST_CLOCK_ENABLED: true, REDIRECT_ALLOWED_HOSTS: ALLOWED }, (t) => {
  it('gives plans, addons and fixed-amount coupons CURRENCY_CODE by default, or the currency_code sent; a percentage has none', async () => {
    const plan = await created(t, `${SUB}/plans`, planBody())
    assert.equal((await json(t, 200, { url: `${SUB}/plans/${plan}`, token: null })).plan.currency_code, 'EUR')
    const yen = await created(t, `${SUB}/plans`, planBody({ price: 1000, currency_code: 'JPY' }))
    const shown = (await json(t, 200, { url: `${SUB}/plans/${yen}`, token: null })).plan
    assert.deepEqual([shown.price, shown.currency_code], [1000, 'JPY'])

    const euros = await addon(t)
    const dollars = await addon(t, { price: 4.99, currency_code: 'USD' })
    const addonOf = (id: string) => json(t, 200, { url: `${SUB}/addons/${id}`, token: null })
    assert.equal((await addonOf(euros)).currency_code, 'EUR')
    assert.deepEqual([(await addonOf(dollars)).price, (await addonOf(dollars)).currency_code], [4.99, 'USD'])

    const fixed = await coupon(t, { discount_type: 'fixed_amount', discount_value: 5 })
    const fixedYen = await coupon(t, { discount_type: 'fixed_amount', discount_value: 100, currency_code: 'JPY' })
    const percent = await coupon(t, { discount_value: 10 })
    const coupons = await json(t, 200, { url: `${SUB}/coupons` })
    const of = (code: string) => coupons.find((k: { code: string }) => k.code === code)
    assert.deepEqual(
      [fixed, fixedYen, percent].map((code) => [of(code).discount_value, of(code).currency_code]),
      [
        [5, 'EUR'],
        [100, 'JPY'],
        [10, null],
      ],
    )
  })

  it("counts a price in its own currency's decimals, whatever CURRENCY_CODE is", async () => {
    refused(
      await call(t, { method: 'POST', url: `${SUB}/plans`, body: planBody({ price: 1000.5, currency_code: 'JPY' }) }),
      'body/plan/price',
      /JPY has no decimals/,
    )
    refused(
      await call(t, {
        method: 'POST',
        url: `${SUB}/addons`,
        body: { name: 'Fils', price: 1.2345, period_unit: 'month', currency_code: 'KWD' },
      }),
      'body/price',
      /3 decimals \(KWD\)/,
    )
    const kwd = await created(t, `${SUB}/plans`, planBody({ price: 12.345, currency_code: 'KWD' }))
    assert.equal((await json(t, 200, { url: `${SUB}/plans/${kwd}`, token: null })).plan.price, 12.345)
  })

  it('refuses a currency_code that is not an ISO 4217 code, and one on a percentage coupon, with 400 naming the field', async () => {
    for (const code of ['XYZ', 'eur', 'EURO', 'E1R', 978, null]) {
      refused(
        await call(t, { method: 'POST', url: `${SUB}/plans`, body: planBody({ currency_code: code }) }),
        'body/plan/currency_code',
      )
      refused(
        await call(t, {
          method: 'POST',
          url: `${SUB}/addons`,
          body: { name: 'A', price: 1, period_unit: 'month', currency_code: code },
        }),
        'body/currency_code',
      )
      refused(
        await call(t, {
          method: 'POST',
          url: `${SUB}/coupons`,
          body: { code: uniq('C'), name: 'C', discount_type: 'fixed_amount', discount_value: 1, currency_code: code },
        }),
        'body/currency_code',
      )
    }
    refused(
      await call(t, { method: 'POST', url: `${SUB}/plans`, body: planBody({ currency_code: 'XYZ' }) }),
      'body/plan/currency_code',
      /XYZ is not an ISO 4217 currency code/,
    )
    refused(
      await call(t, {
        method: 'POST',
        url: `${SUB}/coupons`,
        body: { code: uniq('C'), name: 'C', discount_type: 'percentage', discount_value: 10, currency_code: 'EUR' },
      }),
      'body/currency_code',
      /fixed_amount/,
    )
  })

  it("keeps every stored price's currency when the service starts again with another CURRENCY_CODE; only new prices take the new default", async () => {
    const c = await billedCompany(t, { plans: { basic: { price: 29.9 } }, company: { plan_quantity: 1 } })
    const badge = await addon(t, { price: 5 })
    const fixed = await coupon(t, { discount_type: 'fixed_amount', discount_value: 2 })
    const app = await restartedWith(t, { CURRENCY_CODE: 'JPY' })
    try {
      const get = async (url: string, token: string | null = t.platformToken) => {
        const res = await app.inject({ url, headers: token ? { authorization: `Bearer ${token}` } : {} })
        assert.equal(res.statusCode, 200, res.body)
        return res.json()
      }
      const plan = (await get(`${SUB}/plans/by_sku/${c.planSku}`, null)).plan
      assert.deepEqual([plan.price, plan.currency_code], [29.9, 'EUR'])
      assert.deepEqual(
        [(await get(`${SUB}/addons/${badge}`, null)).price, (await get(`${SUB}/addons/${badge}`, null)).currency_code],
        [5, 'EUR'],
      )
      const stored = (await get(`${SUB}/coupons`)).find((k: { code: string }) => k.code === fixed)
      assert.deepEqual([stored.discount_value, stored.currency_code], [2, 'EUR'])
      // The subscription still bills in euros: 29.90 + 5.00 − 2.00 = 32.90, Italian VAT 22 % = 7.24.
      const query = new URLSearchParams({
        company_id: c.id,
        product_sku: c.productSku,
        subscription_plan: c.planSku,
        plan_quantity: '1',
        addons: badge,
        coupon_code: fixed,
      })
      const invoice = (await get(`${SUB}/${c.id}/estimate?${query}`)).estimate.invoice_estimate
      assert.deepEqual([invoice.sub_total, invoice.total, invoice.currency_code], [3490, 4014, 'EUR'])
      // A new price without currency_code takes the setting in force now.
      const made = await app.inject({
        method: 'POST',
        url: `${SUB}/plans`,
        headers: { authorization: `Bearer ${t.platformToken}` },
        payload: planBody({ price: 1000 }),
      })
      assert.equal(made.statusCode, 202, made.body)
      assert.equal((await get(made.headers.location as string, null)).plan.currency_code, 'JPY')
    } finally {
      await app.close()
    }
  })

  describe("a subscription in its plan's currency", () => {
    let c: BillingFixture
    let dollarAddon: string
    let dollarCoupon: string
    // Prices the query as a new subscription: without a token an estimate refuses coupon_code.
    let stranger: string
    before(async () => {
      stranger = (await company(t)).token
      c = await billedCompany(t, {
        plans: { basic: { price: 29.9 }, dollars: { price: 30, currency_code: 'USD' }, gold: { price: 49.9 } },
        company: { plan_quantity: 1 },
      })
      dollarAddon = await addon(t, { price: 5, currency_code: 'USD' })
      dollarCoupon = await coupon(t, { discount_type: 'fixed_amount', discount_value: 2, currency_code: 'USD' })
    })
    const query = (extra: Record<string, string | string[]> = {}) => ({
      company_id: c.id,
      product_sku: c.productSku,
      subscription_plan: c.planSku,
      plan_quantity: '1',
      ...extra,
    })

    it('refuses an addon in another currency with 400 naming addons: estimate (stored and new) and update', async () => {
      refused(await estimate(t, c.id, query({ addons: [dollarAddon] })), 'querystring/addons', /USD.*EUR|EUR.*USD/)
      refused(await estimate(t, c.id, query({ addons: [dollarAddon] }), null), 'querystring/addons')
      refused(
        await update(t, c.id, c.subscriptionId, { addons: [dollarAddon] }, c.token),
        'body/addons',
        /USD.*EUR|EUR.*USD/,
      )
      assert.deepEqual((await detailsOf(t, c)).addons ?? [], [])
    })

    it('refuses a fixed-amount coupon in another currency with 400 naming coupon_code; a percentage coupon fits any', async () => {
      refused(await estimate(t, c.id, query({ coupon_code: dollarCoupon })), 'querystring/coupon_code', /USD/)
      refused(await estimate(t, c.id, query({ coupon_code: dollarCoupon }), stranger), 'querystring/coupon_code')
      refused(
        await update(t, c.id, c.subscriptionId, { coupon_code: dollarCoupon }, c.token),
        'body/coupon_code',
        /USD/,
      )
      const percent = await coupon(t, { discount_value: 10 })
      const res = await estimate(t, c.id, query({ coupon_code: percent }))
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().estimate.invoice_estimate.currency_code, 'EUR')
    })

    it('refuses a change to a plan in another currency with 400 naming subscription_plan; a plan of the same currency is fine', async () => {
      refused(
        await estimate(t, c.id, query({ subscription_plan: c.plans.dollars! })),
        'querystring/subscription_plan',
        /USD.*EUR|EUR.*USD/,
      )
      refused(
        await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.dollars }, c.token),
        'body/subscription_plan',
        /USD.*EUR|EUR.*USD/,
      )
      assert.equal((await detailsOf(t, c)).plan.sku, c.planSku)
      const gold = await estimate(t, c.id, query({ subscription_plan: c.plans.gold! }))
      assert.equal(gold.statusCode, 200, gold.body)
      // A new subscription may start on the dollar plan with dollar prices: all one currency.
      const fresh = await estimate(
        t,
        c.id,
        query({ subscription_plan: c.plans.dollars!, addons: [dollarAddon], coupon_code: dollarCoupon }),
        stranger,
      )
      assert.equal(fresh.statusCode, 200, fresh.body)
      assert.deepEqual(
        [fresh.json().estimate.invoice_estimate.sub_total, fresh.json().estimate.invoice_estimate.currency_code],
        [3500, 'USD'],
      )
    })
  })

  it("bills in the plan's currency: a 1000-yen plan under CURRENCY_CODE EUR is invoiced 1000 JPY, its details and estimate say so", async () => {
    const c = await billedCompany(t, {
      start: '2027-03-02T00:00:00.000Z',
      plans: { yen: { price: 1000, currency_code: 'JPY' } },
      company: { plan_quantity: 1 },
    })
    const details = await detailsOf(t, c)
    assert.deepEqual([details.plan.price, details.plan.currency_code], [1000, 'JPY'])
    const invoice = (
      await estimate(t, c.id, {
        company_id: c.id,
        product_sku: c.productSku,
        subscription_plan: c.planSku,
        plan_quantity: '1',
      })
    ).json().estimate.invoice_estimate
    // 1000 yen, Italian VAT 22 % = 220.
    assert.deepEqual([invoice.sub_total, invoice.total, invoice.currency_code], [1000, 1220, 'JPY'])
    // The manager page writes the plan in its own currency, not in CURRENCY_CODE's.
    const page = await new PageSession(t, await pathOf(t, 'manager', c.id, c.token)).get()
    assert.equal(page.statusCode, 200)
    assert.ok(page.body.includes('JP¥1,000'), 'the manager page shows the plan at JP¥1,000')
    assert.ok(!page.body.includes('€'), 'and nothing in euros')
    await setCard(t, c.id)
    await at(t, '2027-04-01T00:00:00.000Z')
    const [activation] = await json(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
    assert.deepEqual([activation.sub_total, activation.total, activation.currency_code], [1000, 1220, 'JPY'])
  })
})

// Its own setup: a database migrated only up to before the migration under test.
forEachEngine(`migration ${CURRENCY_MIGRATION}`, (engine) => {
  it('gives existing prices the CURRENCY_CODE it is applied with, percentage coupons none; without one, a catalogue with prices is refused', async () => {
    for (const given of ['JPY', undefined]) {
      const { db, close } = await databaseBefore(engine, CURRENCY_MIGRATION)
      try {
        await sql`INSERT INTO plans (id, sku, name, price_cents, plan_family, period_unit, features) VALUES (gen_random_uuid(), 'old', 'Old', 1000, 'core', 'month', '{}')`.execute(
          db,
        )
        await sql`INSERT INTO addons (id, name, price_cents, period_unit) VALUES (gen_random_uuid(), 'Badge', 150, 'month')`.execute(
          db,
        )
        await sql`INSERT INTO coupons (id, code, name, discount_type, discount_value_minor) VALUES (gen_random_uuid(), 'FIXED', 'F', 'fixed_amount', 100), (gen_random_uuid(), 'PCT', 'P', 'percentage', 1000)`.execute(
          db,
        )
        if (given === undefined) {
          await assert.rejects(migrate(db), /need the CURRENCY_CODE they were written under/)
          continue
        }
        assert.ok((await migrate(db, { currencyCode: given })).includes(CURRENCY_MIGRATION))
        const currencies = async (table: string) =>
          (
            await sql<{
              currency_code: string | null
            }>`SELECT currency_code FROM ${sql.table(table)} ORDER BY 1 NULLS LAST`.execute(db)
          ).rows.map((r) => r.currency_code)
        assert.deepEqual(
          [await currencies('plans'), await currencies('addons'), await currencies('coupons')],
          [['JPY'], ['JPY'], ['JPY', null]],
        )
        // A later change of setting rewrites nothing: the migration is applied once.
        assert.deepEqual(await migrate(db, { currencyCode: 'USD' }), [])
        assert.deepEqual(await currencies('plans'), ['JPY'])
      } finally {
        await close()
      }
    }
  })

  it('applies to an empty catalogue without a currency (a new database)', async () => {
    const { db, close } = await databaseBefore(engine, CURRENCY_MIGRATION)
    try {
      assert.ok((await migrate(db)).includes(CURRENCY_MIGRATION))
    } finally {
      await close()
    }
  })
})

/** A database of the engine, migrated up to (not including) `before`, by the same SQL the service runs. */
async function databaseBefore(engine: string, before: string): Promise<{ db: Kysely<any>; close(): Promise<void> }> {
  let db: Kysely<any>
  let close: () => Promise<void>
  if (engine === 'pglite') {
    const pglite = new PGlite()
    await pglite.waitReady
    db = new Kysely<any>({ dialect: new PostgresDialect({ pool: new pg.Pool({ ...createPgConfig(pglite), max: 1 }) }) })
    close = async () => {
      await db.destroy()
      await pglite.close()
    }
  } else {
    const admin = process.env.TEST_DATABASE_URL!
    const name = `cai_currency_${process.pid}_${randomBytes(3).toString('hex')}`
    const client = new pg.Client({ connectionString: admin })
    await client.connect()
    await client.query(`CREATE DATABASE ${name}`)
    const pool = new pg.Pool({ connectionString: withDatabase(admin, name), max: 2 })
    pool.on('error', () => {})
    db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
    close = async () => {
      await db.destroy()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
    }
  }
  await sql`CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`.execute(
    db,
  )
  for (const m of readMigrations().filter((m) => m.version < before)) {
    await sql
      .raw(`BEGIN;\n${m.sql}\n;INSERT INTO schema_migrations (version) VALUES ('${m.version}');\nCOMMIT;`)
      .execute(db)
  }
  return { db, close }
}
