import assert from 'node:assert/strict'
import type { Call, TestApp } from './helpers/app.ts'
import { locationId, uniq } from './helpers/app.ts'
import type { CompanyFixture } from './helpers/factories.ts'

/**
 * Fixtures and reads shared by the subscription tests (spec 2, 3, 6, 8, 9, 14). These tests
 * move the business clock by months (moveTo, at) through the test clock's routes when the app
 * has them (TEST_CLOCK_ENABLED, docs/test-clock.md), as an integrator would; tokens follow real
 * time, so the platform's and the companies' tokens stay valid, and `call`/`json` default to
 * the platform token.
 */

const tokens = new WeakMap<TestApp, { platform: string; fixtures: Set<BillingFixture> }>()

function stateOf(t: TestApp) {
  let state = tokens.get(t)
  if (!state) tokens.set(t, (state = { platform: t.platformToken, fixtures: new Set() }))
  return state
}

export const platform = (t: TestApp) => stateOf(t).platform

export function call(t: TestApp, request: Call) {
  return t.call({ ...request, token: request.token === undefined ? platform(t) : request.token })
}

export function json<T = any>(t: TestApp, status: number, request: Call): Promise<T> {
  return t.json<T>(status, { ...request, token: request.token === undefined ? platform(t) : request.token })
}

export const TEST_CLOCK = '/api/v1/test_clock'

/** Whether the app serves the test clock's routes (they answer 404 without TEST_CLOCK_ENABLED). */
const withTestClock = new WeakMap<TestApp, boolean>()

/**
 * Places the business clock at `iso`, forward or back, running nothing: where a test's story
 * begins (billedCompany's `start`), not a time travel within it. The test clock neither goes
 * back nor jumps more than 10 years, so the test's base clock is set (the business time is base
 * + the test clock's offset). Jobs of earlier tests that fall due by then run at the next move.
 */
export async function startAt(t: TestApp, iso: string) {
  const to = Date.parse(iso)
  if (Number.isNaN(to)) throw new Error(`startAt: not a date-time: ${iso}`)
  const offset = (await businessNow(t)).getTime() - t.clock.now().getTime()
  t.clock.set(new Date(to - offset))
}

/**
 * Moves the business clock forward to `iso` through `POST /api/v1/test_clock/advance`, as an
 * integrator would: the answer comes once every job due by then has run, each at its own due
 * time. An app built without the test clock (the hosted pages' suites) only has its base clock
 * set there: `at` runs the due jobs. Tokens follow real time (src/core/clock.ts), so those minted
 * before stay valid.
 */
export async function moveTo(t: TestApp, iso: string) {
  const to = Date.parse(iso)
  if (Number.isNaN(to)) throw new Error(`moveTo: not a date-time: ${iso}`)
  if (!(await hasTestClock(t))) {
    t.clock.set(new Date(to))
    return
  }
  const advanced = await json<{ now: string; status: string }>(t, 200, {
    method: 'POST',
    url: `${TEST_CLOCK}/advance`,
    body: { to: new Date(to).toISOString() },
  })
  assert.deepEqual([advanced.now, advanced.status], [new Date(to).toISOString(), 'ready'])
}

export const SUB = '/api/v1/subscription'
export const DAY = 86_400
export const unix = (iso: string) => Date.parse(iso) / 1000

export const CARD = { brand: 'visa', last4: '4242', expiry_month: 12, expiry_year: 2099 }

export async function setCard(t: TestApp, companyId: string, card: Record<string, unknown> = CARD) {
  return json(t, 200, { method: 'PUT', url: `${SUB}/${companyId}/payment_source`, body: card })
}

export async function addon(t: TestApp, fields: Record<string, unknown> = {}) {
  const res = await call(t, {
    method: 'POST',
    url: `${SUB}/addons`,
    body: { name: uniq('Addon'), price: 5, period_unit: 'month', ...fields },
  })
  assert.equal(res.statusCode, 202, res.body)
  return locationId(res)
}

export async function coupon(t: TestApp, fields: Record<string, unknown> = {}) {
  const code = uniq('C').replace(/[^A-Za-z0-9_-]/g, '')
  const res = await call(t, {
    method: 'POST',
    url: `${SUB}/coupons`,
    body: { code, name: 'Promo', discount_type: 'percentage', discount_value: 10, ...fields },
  })
  assert.equal(res.statusCode, 202, res.body)
  return code
}

export interface BillingFixture extends CompanyFixture {
  subscriptionId: string
  productSkus: string[]
  plans: Record<string, string>
}

/**
 * A company on a product allowing several plans, created at the clock's time (its trial ends
 * TRIAL_DAYS later), with a company client holding all its scopes.
 */
export async function billedCompany(
  t: TestApp,
  options: { plans?: Record<string, Record<string, unknown>>; company?: Record<string, unknown>; start?: string } = {},
): Promise<BillingFixture> {
  if (options.start) await startAt(t, options.start)
  const specs = options.plans ?? { basic: { price: 29.9, features: ['stamping'] } }
  const plans: Record<string, string> = {}
  for (const [key, fields] of Object.entries(specs)) {
    const body = {
      plan: {
        sku: uniq(`plan-${key}`),
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
  }
  const pr = { sku: uniq('product') }
  const created = await call(t, {
    method: 'POST',
    url: `${SUB}/products`,
    body: {
      product: {
        sku: pr.sku,
        name: 'Workforce',
        visible: true,
        subscription_manager: 'local',
        allowed_plans: Object.values(plans),
      },
    },
  })
  assert.equal(created.statusCode, 202, created.body)
  const first = Object.values(plans)[0]!
  const res = await call(t, {
    method: 'POST',
    url: '/api/v1/companies',
    body: {
      name: uniq('Acme'),
      country: 'IT',
      timezone: 'Europe/Rome',
      product_sku: pr.sku,
      subscription_plan: first,
      plan_quantity: 5,
      ...options.company,
    },
  })
  assert.equal(res.statusCode, 202, res.body)
  const id = locationId(res)
  const authorized = await json<{ mode: string[]; api: string }[]>(t, 200, {
    url: `/api/v1/companies/${id}/authorized/scopes`,
  })
  const scopes = authorized.flatMap((sc) => sc.mode.map((m) => `${m}:${sc.api}`))
  const client = await json(t, 201, {
    method: 'POST',
    url: `/api/v1/companies/${id}/clients`,
    body: { name: 'billing test client', scopes },
  })
  const token = await t.tokenFor(client.client_id, client.client_secret)
  const status = await json(t, 200, { url: `${SUB}/${id}/status` })
  const fixture = {
    id,
    planSku: first,
    productSku: pr.sku,
    client,
    token,
    subscriptionId: status.subscription_id,
    productSkus: [pr.sku],
    plans,
  }
  stateOf(t).fixtures.add(fixture)
  return fixture
}

export const statusOf = (t: TestApp, c: { id: string; token: string }) =>
  json(t, 200, { url: `${SUB}/${c.id}/status`, token: c.token })
export const detailsOf = (t: TestApp, c: { id: string; token: string }) =>
  json(t, 200, { url: `${SUB}/${c.id}/details`, token: c.token })

/** The company's mirror fields (34) and its authorized scope areas (25), as a client reads them. */
export async function mirrorOf(t: TestApp, companyId: string) {
  const body = await json(t, 200, { url: `/api/v1/companies/${companyId}` })
  const scopes = await json<{ api: string }[]>(t, 200, { url: `/api/v1/companies/${companyId}/authorized/scopes` })
  return {
    subscription_id: body.subscription_id,
    subscription_status: body.subscription_status,
    subscription_plan: body.subscription_plan,
    subscription_expiration_date: body.subscription_expiration_date,
    trial_expiration_date: body.trial_expiration_date,
    subscribed_features: body.subscribed_features,
    plan_quantity: body.plan_quantity,
    areas: scopes.map((s) => s.api),
  }
}

/** The business time now, as the test clock shows it (the base clock where the app has none). */
export async function businessNow(t: TestApp): Promise<Date> {
  return (await hasTestClock(t))
    ? new Date((await json<{ now: string }>(t, 200, { url: TEST_CLOCK })).now)
    : t.clock.now()
}

async function hasTestClock(t: TestApp): Promise<boolean> {
  let enabled = withTestClock.get(t)
  if (enabled === undefined) withTestClock.set(t, (enabled = (await call(t, { url: TEST_CLOCK })).statusCode === 200))
  return enabled
}

/** Moves the clock and runs what is due: moveTo, and the scheduler's run where the app has no test clock. */
export async function at(t: TestApp, iso: string) {
  await moveTo(t, iso)
  if (!(await hasTestClock(t))) await t.app.services.scheduler.runDue()
}

export async function eventsOf(t: TestApp, companyId: string) {
  const rows = await t.app.services.subscriptions.events(companyId)
  return rows.map((e) => ({
    type: e.event_type,
    from: e.from_status,
    to: e.to_status,
    actor: e.actor,
    at: e.occurred_at.toISOString(),
    details: e.details,
  }))
}

export const cancel = (t: TestApp, ref: string, token: string | undefined, query = '', body?: unknown) =>
  call(t, { method: 'PUT', url: `${SUB}/${ref}/cancel${query}`, token, ...(body !== undefined ? { body } : {}) })
export const removeCancellation = (t: TestApp, companyId: string, subscriptionId: string, token?: string) =>
  call(t, { method: 'PUT', url: `${SUB}/${companyId}/remove_scheduled_cancellation/${subscriptionId}`, token })
export const update = (t: TestApp, companyId: string, subscriptionId: string, body: unknown, token?: string) =>
  call(t, {
    method: 'PUT',
    url: `${SUB}/companies/${companyId}/update/${subscriptionId}`,
    token,
    ...(body !== undefined ? { body } : {}),
  })
/** The estimate (9); by default with the platform token, which sees the stored subscription (null: anonymous, priced as a new subscription). */
export const estimate = (t: TestApp, ref: string, query: Record<string, string | string[]>, token?: string | null) =>
  call(t, { url: `${SUB}/${ref}/estimate`, query, token })
