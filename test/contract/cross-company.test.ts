import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { company } from '../helpers/factories.ts'
import {
  isPlatformOnly,
  isPublic,
  key,
  pdfForm,
  routeWalk,
  tenantOf,
  type Creation,
  type Route,
  type Tenant,
} from '../helpers/route-walk.ts'
import { READ_WRITE_AREAS } from '../../src/modules/oauth/scopes.ts'
import { onEachEngine } from '../helpers/engine-suites.ts'

/**
 * Tenant isolation, walked over the OpenAPI document so that every route added later is
 * covered without touching this file:
 * 1. company A's token on every route of company B's path (B's own child ids in the path and
 *    body) answers 404, as for a company that does not exist (403 for platform-only routes);
 * 2. A's token on A's path with B's child ids (in the path or the body) never succeeds;
 * 3. B's data, read through every GET route it has, is the same before and after.
 * Bodies are generated from each route's request schema, with id fields filled with known ids.
 * No route drops out silently: every operation of /openapi.json is walked by 1 or named in
 * NOT_COMPANY_SCOPED with the reason; every route with an id of B in its path is walked by 2;
 * a route whose ids of B could not be filled fails, instead of being tried with a random id.
 */

/**
 * The operations that take no company: what a company token could reach on them is no other
 * company's data. A route here that gains a company parameter, or one missing here that loses
 * it, fails the walk.
 */
const NOT_COMPANY_SCOPED: Record<string, string> = {
  'GET /health': 'liveness, no data',
  'GET /ready': 'readiness, no data',
  'GET /metrics': 'process metrics, no company data (no label names a company)',
  'POST /oauth/token': "takes a client's own credentials; test/oauth.test.ts tries other clients' secrets",
  'GET /.well-known/jwks.json': 'the public signing keys',
  'POST /api/v1/subscription/webhooks/chargebee':
    "the billing provider's, authenticated by its signature, not a company token",
  'POST /api/v1/companies': 'creates a company: platform only (test/companies.test.ts: 403 to a company token)',
  'GET /api/v1/companies': 'lists every company: platform only (test/companies-patch.test.ts: 403 to a company token)',
  'GET /api/v1/subscription/{subscription_id}/estimate':
    'public by the spec (no token, so no company to cross); test/subscriptions-access.test.ts covers what it shows',
  // The catalogue is the platform's, shared by every company: read by anyone, written by the platform.
  'GET /api/v1/subscription/plans': 'catalogue',
  'POST /api/v1/subscription/plans': 'catalogue',
  'GET /api/v1/subscription/plans/{id}': 'catalogue',
  'GET /api/v1/subscription/plans/by_sku/{sku}': 'catalogue',
  'GET /api/v1/subscription/products': 'catalogue',
  'POST /api/v1/subscription/products': 'catalogue',
  'GET /api/v1/subscription/products/{id}': 'catalogue',
  'PUT /api/v1/subscription/products/{id}': 'catalogue',
  'GET /api/v1/subscription/addons': 'catalogue',
  'POST /api/v1/subscription/addons': 'catalogue',
  'GET /api/v1/subscription/addons/{id}': 'catalogue',
  // Coupons too, but only the platform reads them (test/catalogue.test.ts: 403 to a company token).
  'GET /api/v1/subscription/coupons': 'catalogue',
  'POST /api/v1/subscription/coupons': 'catalogue',
  'GET /api/v1/subscription/coupons/{id}': 'catalogue, platform only',
  // The platform's event log and webhook endpoints: platform tokens only (test/events.test.ts and
  // test/webhook-endpoints.test.ts: 403 to a company token); a company's are under its path.
  'GET /api/v1/analytics/mrr': 'platform only (test/analytics.test.ts: 403 to a company token)',
  'GET /api/v1/analytics/summary': 'platform only (test/analytics.test.ts: 403 to a company token)',
  'GET /api/v1/events': 'platform only',
  'GET /api/v1/events/{event_id}': 'platform only',
  'GET /api/v1/webhook_endpoints': 'platform only',
  'POST /api/v1/webhook_endpoints': 'platform only',
  'GET /api/v1/webhook_endpoints/{id}': 'platform only',
  'DELETE /api/v1/webhook_endpoints/{id}': 'platform only',
  'GET /api/v1/webhook_endpoints/{id}/deliveries': 'platform only',
  'POST /api/v1/webhook_endpoints/{id}/test': 'platform only',
  'PATCH /api/v1/webhook_endpoints/{id}': 'platform only',
  'POST /api/v1/webhook_endpoints/{id}/rotate_secret': 'platform only',
  'GET /api/v1/fatturapa/export':
    "every company's documents of a month: platform only (test/fatturapa-export.test.ts: 403 to a company token)",
}

/** A path that names a company or one of its resources outside a company path (a subscription). */
const COMPANY_PATH = /\{company_id[^}]*\}|\{subscription_customer_id\}|\{subscription_id\}/
/** A path parameter other than the company: an id of one of its resources. */
const CHILD_IN_PATH = /\{(?!company_id|subscription_customer_id)[^}]+\}/

onEachEngine('cross-company isolation', { TRIAL_DAYS: 0 }, (t) => {
  let routes: Route[]
  let walk: ReturnType<typeof routeWalk>
  let a: Tenant
  let b: Tenant
  /** What the seeding POSTs answered: every creation says where its resource is. */
  const creations: Creation[] = []
  const request: ReturnType<typeof routeWalk>['request'] = (...args) => walk.request(...args)
  const fill: ReturnType<typeof routeWalk>['fill'] = (...args) => walk.fill(...args)

  /** Every GET of the tenant's own path that it can fill with its ids: what it reads. */
  async function snapshot(tenant: Tenant) {
    const out: Record<string, unknown> = {}
    for (const route of routes.filter((r) => r.method === 'GET' && !isPublic(r.op))) {
      const { call, known } = request(route, tenant, tenant, t.platformToken)
      if (!known || !route.path.includes('{')) continue
      if (!/\{company_id|\{subscription/.test(route.path)) continue
      const res = await t.call(call)
      out[`${route.path} ${res.statusCode}`] = res.statusCode === 200 ? res.body : res.statusCode
    }
    return out
  }

  before(async () => {
    // No trial: the subscriptions are active at once and have an invoice to cross (the ledger's routes).
    const doc = await t.json(200, { url: '/openapi.json', token: null })
    walk = routeWalk(t, doc)
    routes = walk.routes
    // Every area in the plan: the tokens hold every scope, so a refusal can only be about the company.
    const features = [...READ_WRITE_AREAS, 'calendar']
    a = tenantOf(await company(t, {}, { features }))
    b = tenantOf(await company(t, {}, { features }))
    // Cards, so that the trials' end (now: TRIAL_DAYS is 0 here) bills a first invoice at the seeds' runDue.
    for (const tenant of [a, b]) {
      await t.json(200, {
        method: 'PUT',
        url: `/api/v1/subscription/${tenant.company.id}/payment_source`,
        body: { brand: 'visa', last4: '4242', expiry_month: 12, expiry_year: 2099 },
      })
    }
    await walk.seed(a, (creation) => creations.push(creation))
    await walk.seed(b, (creation) => creations.push(creation))
    // Fewer users at once credits the unused term: each company has a credit note to cross (its PDF).
    for (const tenant of [a, b]) {
      const { id } = tenant.company
      const url = `/api/v1/subscription/companies/${id}/update/${tenant.byName.get('subscription')}`
      const changed = await t.call({ method: 'PUT', url, body: { plan_quantity: 1 } })
      assert.equal(changed.statusCode, 200, changed.body)
      const [note] = await t.json(200, { url: `/api/v1/subscription/${id}/credit_notes` })
      tenant.byName.set('credit_note', note.id)
    }
  })

  it('answers every creation with a Location that leads to the new resource', async () => {
    // Every POST of a company path made something for both companies (the factories made the first ones).
    // An action that answers 200 and makes nothing (rotate_secret) is no creation.
    const action = (r: Route) => Object.keys(r.op.responses ?? {}).every((status) => !/^20[12]$/.test(status))
    const posts = routes.filter(
      (r) => r.method === 'POST' && r.path.startsWith('/api/v1/companies/{company_id}/') && !action(r),
    )
    const made = (r: Route, tenant: Tenant) => tenant.byCollection.has(r.path)
    assert.deepEqual(posts.filter((r) => !made(r, a) || !made(r, b)).map(key), [], 'POST routes that created nothing')
    const actions = new Set(routes.filter(action).map(key))
    for (const { route, status, location } of creations) {
      if (actions.has(route)) continue
      assert.equal(typeof location, 'string', `${route} (${status}) sets Location`)
      const res = await t.call({ url: location as string })
      assert.equal(res.statusCode, 200, `${route}: ${location} answers ${res.statusCode}`)
    }
  })

  it("answers 404 to a company token on another company's path, for every route, and changes nothing", async () => {
    const before = await snapshot(b)
    const checked: string[] = []
    const failures: string[] = []
    const tenantRoutes = routes.filter((r) => !isPublic(r.op) && COMPANY_PATH.test(r.path))
    for (const route of tenantRoutes) {
      const { call, multipart, known } = request(route, b, b, a.company.token)
      // With a random id in place of one of B's, a 404 would prove nothing.
      if (!known) failures.push(`${key(route)}: no id of B for its path or body (seed one)`)
      const res = await t.call(multipart ? { ...call, ...pdfForm() } : call)
      const expected = isPlatformOnly(route.op) ? 403 : 404
      if (res.statusCode !== expected) failures.push(`${route.method} ${route.path}: ${res.statusCode} ${res.body}`)
      checked.push(`${route.method} ${route.path}`)
    }
    assert.deepEqual(failures, [])
    // Every documented operation was walked, or says why it takes no company.
    const all = routes.map(key)
    assert.deepEqual(
      all.filter((r) => !checked.includes(r) && !(r in NOT_COMPANY_SCOPED)),
      [],
      'operations neither walked nor excluded',
    )
    assert.deepEqual(
      checked.filter((r) => r in NOT_COMPANY_SCOPED),
      [],
      'walked, yet excluded as taking no company',
    )
    assert.deepEqual(
      Object.keys(NOT_COMPANY_SCOPED).filter((r) => !all.includes(r)),
      [],
      'excluded, yet not documented',
    )
    assert.deepEqual(await snapshot(b), before)
    // B still works with its own token: it was neither disabled nor revoked.
    await t.json(200, { url: `/api/v1/companies/${b.company.id}`, token: b.company.token })
  })

  it("never lets a company reach another company's resources through its own path", async () => {
    const before = await snapshot(b)
    const failures: string[] = []
    const walked: string[] = []
    for (const route of routes.filter(
      (r) => !isPublic(r.op) && !isPlatformOnly(r.op) && r.path.includes('{company_id'),
    )) {
      const { call, usesChild, multipart, unknown } = request(route, a, b, a.company.token)
      // A route with one of B's resources in its path, or an id field of a resource B has none
      // of, must not drop out of the walk: it would be tried with nothing of B's.
      if (unknown.length) failures.push(`${key(route)}: no id of B for ${unknown.join(', ')} (seed one)`)
      if (CHILD_IN_PATH.test(route.path) && !fill(route.path, a, b).usesChild)
        failures.push(`${key(route)}: no id of B for its path (seed one)`)
      if (multipart && usesChild) failures.push(`${key(route)}: a multipart body with ids is not generated here`)
      if (!usesChild || multipart) continue
      walked.push(key(route))
      const res = await t.call(call)
      const inPath = fill(route.path, a, b).usesChild
      // A foreign id in the path is a missing resource; in a body, a missing or invalid reference.
      const allowed = inPath && route.method !== 'POST' && route.method !== 'PUT' ? [404] : [400, 404]
      // A query this generator could not fill validly is refused before any lookup: no leak either.
      const queryRefused = res.statusCode === 400 && /^querystring/.test(res.json().errors)
      if (!allowed.includes(res.statusCode) && !queryRefused)
        failures.push(
          `${route.method} ${route.path} (${call.url} ${JSON.stringify(call.body)}): ${res.statusCode} ${res.body}`,
        )
    }
    assert.deepEqual(failures, [])
    assert.ok(
      walked.includes('GET /api/v1/companies/{company_id}/contracts/{contract_id}') &&
        walked.includes('POST /api/v1/companies/{company_id}/teams'),
      walked.join('\n'),
    )
    assert.deepEqual(await snapshot(b), before)
  })
})
