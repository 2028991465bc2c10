import assert from 'node:assert/strict'
import { after, before } from 'node:test'
import { sql } from 'kysely'
import type { Config } from '../src/config.ts'
import type { Engine } from '../src/db/database.ts'
import { buildTestApp, locationId, uniq, type TestApp } from './helpers/app.ts'
import { startFakeChargebee, type FakeChargebee } from './helpers/fake-chargebee.ts'
import { SUB, json, call } from './subscriptions-helpers.ts'

/** The app with the Chargebee provider pointed at a fake Chargebee on 127.0.0.1, and the webhook credentials. */
export const API_KEY = 'test_cb_key_0123456789'
export const HOOK = { user: 'cb-hooks', password: 'hook-secret-0123456789' }
export const WEBHOOK_URL = `${SUB}/webhooks/chargebee`

/** Attempts of one Chargebee call with the default CHARGEBEE_RETRIES (3): the first and 3 retries. */
export const ATTEMPTS = 4

export async function chargebeeApp(
  engine: 'pglite' | 'postgres',
  overrides: Partial<Config> = {},
  options: Parameters<typeof buildTestApp>[2] = {},
): Promise<{ t: TestApp; fake: FakeChargebee }> {
  let t: TestApp | undefined
  const fake = await startFakeChargebee({ apiKey: API_KEY, now: () => t?.clock.now() ?? new Date() })
  // Retries without waiting: every test that fails a call fails all its attempts (times: ATTEMPTS) or says how many.
  try {
    t = await buildTestApp(
      engine,
      {
        ...fake.config,
        CHARGEBEE_WEBHOOK_USER: HOOK.user,
        CHARGEBEE_WEBHOOK_PASSWORD: HOOK.password,
        CHARGEBEE_RETRY_DELAY_MS: 0,
        ...overrides,
      },
      options,
    )
  } catch (err) {
    // The suite's after hook never sees a fake that was not returned: its open server would keep the test process alive.
    await fake.close()
    throw err
  }
  return { t, fake }
}

/**
 * Inside a forEachEngine suite: the app on a fake Chargebee (chargebeeApp), built by a before hook registered
 * here and closed, the app then the fake, by an after hook. `t` and `fake` are filled in by the hook: read
 * them inside hooks and tests, not while the suite is being declared.
 */
export function withChargebee(
  engine: Engine,
  overrides: Partial<Config> = {},
  options: Parameters<typeof buildTestApp>[2] = {},
): { t: TestApp; fake: FakeChargebee } {
  const t = {} as TestApp
  const fake = {} as FakeChargebee
  let made: Awaited<ReturnType<typeof chargebeeApp>> | undefined
  before(async () => {
    made = await chargebeeApp(engine, overrides, options)
    Object.assign(t, made.t)
    Object.assign(fake, made.fake)
  })
  after(async () => {
    await made?.t.close()
    await made?.fake.close()
  })
  return { t, fake }
}

export interface CbCompany {
  id: string
  token: string
  subscriptionId: string
  productSku: string
  plans: Record<string, string>
  client: { client_id: string }
}

/** Plans (sku = Chargebee item price id, also made at the fake unless `atFake` is false) and a product managed by Chargebee. */
export async function chargebeeProduct(
  t: TestApp,
  fake: FakeChargebee,
  options: { plans?: Record<string, Record<string, unknown>>; atFake?: boolean } = {},
) {
  const specs = options.plans ?? {
    basic: { price: 29.9, features: ['stamping'] },
    pro: { price: 49.9, features: ['stamping', 'expense'] },
  }
  const plans: Record<string, string> = {}
  for (const [key, fields] of Object.entries(specs)) {
    const body = {
      plan: {
        sku: uniq(`cb-${key}`),
        name: `Plan ${key}`,
        price: 29.9,
        plan_family: 'core',
        period_unit: 'month',
        features: ['stamping'],
        ...fields,
      },
    }
    assert.equal((await call(t, { method: 'POST', url: `${SUB}/plans`, body })).statusCode, 202)
    plans[key] = body.plan.sku
    if (options.atFake !== false)
      fake.addItemPrice({
        id: body.plan.sku,
        price: Math.round(Number(body.plan.price) * 100),
        period_unit: body.plan.period_unit as 'month',
        item_type: 'plan',
      })
  }
  const productSku = uniq('cb-product')
  const created = await call(t, {
    method: 'POST',
    url: `${SUB}/products`,
    body: {
      product: {
        sku: productSku,
        name: 'Workforce',
        visible: true,
        subscription_manager: 'chargebee',
        allowed_plans: Object.values(plans),
      },
    },
  })
  assert.equal(created.statusCode, 202, created.body)
  return { productSku, plans }
}

/** POST /api/v1/companies on the product's first plan. */
export function createCompany(
  t: TestApp,
  product: { productSku: string; plans: Record<string, string> },
  headers: Record<string, string> = {},
) {
  return call(t, {
    method: 'POST',
    url: '/api/v1/companies',
    headers,
    body: {
      name: uniq('Acme'),
      country: 'IT',
      timezone: 'Europe/Rome',
      billing_email: 'billing@acme.example',
      product_sku: product.productSku,
      subscription_plan: Object.values(product.plans)[0],
      plan_quantity: 5,
    },
  })
}

/** A company on a new Chargebee product, with a company client holding all its scopes. */
export async function chargebeeCompany(
  t: TestApp,
  fake: FakeChargebee,
  options: { plans?: Record<string, Record<string, unknown>> } = {},
): Promise<CbCompany> {
  const product = await chargebeeProduct(t, fake, options)
  const res = await createCompany(t, product)
  assert.equal(res.statusCode, 202, res.body)
  const id = locationId(res)
  const authorized = await json<{ mode: string[]; api: string }[]>(t, 200, {
    url: `/api/v1/companies/${id}/authorized/scopes`,
  })
  const client = await json(t, 201, {
    method: 'POST',
    url: `/api/v1/companies/${id}/clients`,
    body: { name: 'chargebee test client', scopes: authorized.flatMap((s) => s.mode.map((m) => `${m}:${s.api}`)) },
  })
  const token = await t.tokenFor(client.client_id, client.client_secret)
  const status = await json(t, 200, { url: `${SUB}/${id}/status` })
  return { id, token, subscriptionId: status.subscription_id, ...product, client }
}

/** Posts an event to the webhook with the configured Basic credentials (or the given Authorization header). */
export function deliver(
  t: TestApp,
  event: unknown,
  authorization = `Basic ${Buffer.from(`${HOOK.user}:${HOOK.password}`).toString('base64')}`,
) {
  return t.call({
    method: 'POST',
    url: WEBHOOK_URL,
    token: null,
    headers: authorization ? { authorization } : {},
    body: event,
  })
}

/** Makes the next commit of a transaction inserting a subscription event fail once (a deferred constraint trigger: a real failed COMMIT). */
export async function failNextCommit(t: TestApp) {
  const db = t.app.database.db
  await sql`CREATE SEQUENCE IF NOT EXISTS test_commit_fault`.execute(db)
  await sql`ALTER SEQUENCE test_commit_fault RESTART`.execute(db)
  await sql
    .raw(`CREATE OR REPLACE FUNCTION test_fail_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF nextval('test_commit_fault') = 1 THEN RAISE EXCEPTION 'injected commit failure'; END IF;
      RETURN NULL;
    END $$`)
    .execute(db)
  await sql`DROP TRIGGER IF EXISTS test_fail_commit ON subscription_events`.execute(db)
  await sql`CREATE CONSTRAINT TRIGGER test_fail_commit AFTER INSERT ON subscription_events DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_fail_commit()`.execute(
    db,
  )
  return async () => {
    await sql`DROP TRIGGER IF EXISTS test_fail_commit ON subscription_events`.execute(db)
  }
}
