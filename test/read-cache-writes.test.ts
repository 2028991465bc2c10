import { it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { BuiltApp } from '../src/app.ts'
import type { CachedRead } from '../src/cache/read-areas.ts'
import { READ_WRITE_AREAS } from '../src/modules/oauth/scopes.ts'
import { secondInstance, type Call, type TestApp } from './helpers/app.ts'
import { company } from './helpers/factories.ts'
import { eventually } from './helpers/eventually.ts'
import { key, pdfForm, routeWalk, tenantOf, type Route, type Tenant } from './helpers/route-walk.ts'
import { behindEveryCache } from './helpers/unannounced.ts'
import { sql } from 'kysely'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Every write route of the OpenAPI document, walked as a client would call it: right after its
 * answer, every cached read of the company answers what the database holds, on the instance
 * that wrote and, on PostgreSQL, on another instance that hears of changes only through their
 * announcements (its reading of the commits' record is stopped). No route declares what it
 * writes, so a route added later is walked without touching this file; one that cannot succeed
 * with a request built from its schema says why below.
 */

/** Write routes that cannot succeed with a request built from their schemas, and why. */
const NOT_WALKED: Record<string, string> = {
  'POST /oauth/token':
    "takes a client's own secret; issues a token and writes no table a cached read shows (test/oauth.test.ts)",
  'POST /api/v1/subscription/webhooks/chargebee':
    'takes only a body signed by the billing provider (test/chargebee-webhooks.test.ts)',
  'PUT /api/v1/companies/{company_id}/communications/messages/{message_id}/action':
    'acts only on a message whose communication asks for an action, which a generated communication does not (test/communications-messages.test.ts)',
}

/** Write routes that need more than a request built from their schemas: what is done first, or changed in the request. */
const PREPARED: Record<string, (t: TestApp, tenant: Tenant, call: Call) => Promise<void> | void> = {
  'POST /api/v1/companies': (_t, tenant, call) => {
    Object.assign(call.body as object, {
      product_sku: tenant.company.productSku,
      subscription_plan: tenant.company.planSku,
    })
  },
  // A new contract is in no team: its team_ids are refused on creation.
  'POST /api/v1/companies/{company_id}/contracts': (_t, _tenant, call) => {
    delete (call.body as { team_ids?: unknown }).team_ids
  },
  'PUT /api/v1/subscription/{company_id}/payment_source': (_t, _tenant, call) => {
    call.body = CARD
  },
  'PUT /api/v1/subscription/{company_id}/remove_scheduled_cancellation/{subscription_id}': async (t, tenant) => {
    await t.json(200, { method: 'PUT', url: `/api/v1/subscription/${tenant.company.id}/cancel`, body: {} })
  },
  'PUT /api/v1/subscription/{company_id}/remove_scheduled_changes': async (t, tenant) => {
    const id = tenant.company.id
    const { subscription_id } = await t.json(200, { url: `/api/v1/subscription/${id}/status` })
    const url = `/api/v1/subscription/companies/${id}/update/${subscription_id}`
    await t.json(200, { method: 'PUT', url, body: { plan_quantity: 2, end_of_term: true } })
  },
  'PUT /api/v1/subscription/{company_id}/resume': async (t, tenant) => {
    const url = `/api/v1/subscription/${tenant.company.id}/pause`
    await t.json(200, { method: 'PUT', url, body: { pause_option: 'immediately' } })
  },
  // The seeded invoice is paid; these operations act on one still due.
  'POST /api/v1/subscription/{company_id}/invoices/{invoice_id}/record_payment': (t, tenant) => unpaid(t, tenant),
  'POST /api/v1/subscription/{company_id}/invoices/{invoice_id}/void': (t, tenant) => unpaid(t, tenant),
  'POST /api/v1/subscription/{company_id}/invoices/{invoice_id}/write_off': (t, tenant) => unpaid(t, tenant),
  // The seeded invoice is paid: it takes a refundable note (an adjustment is for an unpaid one).
  'POST /api/v1/subscription/{company_id}/credit_notes': (_t, _tenant, call) => {
    Object.assign(call.body as object, { type: 'refundable' })
  },
}

async function unpaid(t: TestApp, tenant: Tenant) {
  const invoice = tenant.byName.get('invoice')
  assert.ok(invoice, 'the tenant has an invoice')
  await sql`UPDATE invoices SET status = 'payment_due', amount_paid = 0, amount_due = total, paid_at = NULL,
    dunning_status = 'in_progress' WHERE company_id = ${tenant.company.id} AND id = ${invoice}`.execute(
    t.app.database.db,
  )
}

const CARD = { brand: 'visa', last4: '4242', expiry_month: 12, expiry_year: 2099 }

/** The cached reads of a company, as a client calls them (src/cache/read-areas.ts); the token endpoint's is read through a token. */
type Reads = Record<Exclude<CachedRead, 'token_client'>, string>

function readsOf(tenant: Tenant, year: number): Reads {
  const base = `/api/v1/companies/${tenant.company.id}`
  const subsidiary = tenant.byName.get('subsidiary')
  assert.ok(subsidiary, 'the tenant has a subsidiary')
  return {
    company: base,
    teams: `${base}/teams`,
    contracts: `${base}/contracts?limit=50`,
    holidays: `${base}/holidays`,
    subsidiary_holidays: `${base}/subsidiaries/${subsidiary}/holidays`,
    all_holidays: `${base}/all_holidays?year=${year}`,
  }
}

onEachEngine('every write route and the cached reads', { TRIAL_DAYS: 0 }, (t, engine) => {
  let second: BuiltApp | undefined
  let walk: ReturnType<typeof routeWalk>
  let writes: Route[]

  before(async () => {
    if (engine === 'postgres') {
      second = await secondInstance(t)
      // What it hears, it hears from announcements only: a change whose announcement is missing stays missing.
      second.services.readCache.stop()
    }
    walk = routeWalk(t, await t.json(200, { url: '/openapi.json', token: null }))
    writes = walk.routes.filter((r) => r.method !== 'GET')
  })
  after(async () => {
    await second?.close()
  })

  /** A company with one resource of every collection, and a card. */
  async function seeded(): Promise<Tenant> {
    const tenant = tenantOf(await company(t, {}, { features: [...READ_WRITE_AREAS, 'calendar'] }))
    await t.json(200, { method: 'PUT', url: `/api/v1/subscription/${tenant.company.id}/payment_source`, body: CARD })
    await walk.seed(tenant)
    // A credit note on the paid invoice, for the routes on one (the seeding makes only companies' resources).
    const url = `/api/v1/subscription/${tenant.company.id}/credit_notes`
    const body = {
      reference_invoice_id: tenant.byName.get('invoice'),
      type: 'refundable',
      total: 100,
      reason_code: 'other',
    }
    const note = await t.call({ method: 'POST', url, body })
    assert.equal(note.statusCode, 202, note.body)
    tenant.byName.set('credit_note', String(note.headers.location).split('/').pop()!)
    return tenant
  }

  /**
   * For a route on one of the platform's own resources (a product, a webhook endpoint), one made
   * for it: made per route, since some collections are bounded (16 webhook endpoints).
   */
  async function platformResource(route: Route, tenant: Tenant) {
    const collection = route.path.slice(0, route.path.indexOf('/{'))
    const create = writes.find((r) => r.method === 'POST' && r.path === collection)
    if (!create || !route.path.includes('{') || route.path.startsWith(`${collection}/{company_id`)) return
    const res = await t.call(walk.request(create, tenant, tenant, t.platformToken).call)
    const location = res.headers.location
    assert.ok(res.statusCode < 300 && typeof location === 'string', `${key(create)}: ${res.statusCode} ${res.body}`)
    tenant.byCollection.set(collection, location.split('/').pop()!)
  }

  async function readAll(inject: (url: string) => Promise<{ statusCode: number; body: string }>, tenant: Tenant) {
    const out: Record<string, string> = {}
    for (const [read, url] of Object.entries(readsOf(tenant, t.clock.now().getUTCFullYear()))) {
      const res = await inject(url)
      out[read] = `${res.statusCode} ${res.body}`
    }
    const token = await inject('token')
    out.token_client = `${token.statusCode} ${token.statusCode === 200 ? JSON.parse(token.body).scope : token.body}`
    return out
  }

  const onFirst = (tenant: Tenant) => (url: string) =>
    url === 'token'
      ? t.call({
          method: 'POST',
          url: '/oauth/token',
          token: null,
          body: { grant_type: 'client_credentials', ...tenant.company.client },
        })
      : t.call({ url })
  const onSecond = (tenant: Tenant) => (url: string) =>
    url === 'token'
      ? second!.inject({
          method: 'POST',
          url: '/oauth/token',
          payload: { grant_type: 'client_credentials', ...tenant.company.client },
        })
      : second!.inject({ url, headers: { authorization: `Bearer ${t.platformToken}` } })

  it('walks every write route or says why not', () => {
    const all = writes.map(key)
    assert.deepEqual(
      Object.keys(NOT_WALKED).filter((r) => !all.includes(r)),
      [],
      'not walked, yet not documented',
    )
  })

  it('answers every cached read with the new state right after each write', async () => {
    const failures: string[] = []
    let changing = 0
    for (const route of writes.filter((r) => !(key(r) in NOT_WALKED))) {
      const tenant = await seeded()
      await t.app.services.readCache.heardUpToNow()
      // Cached on both instances: read twice, the second from the cache.
      await readAll(onFirst(tenant), tenant)
      const before = await readAll(onFirst(tenant), tenant)
      if (second) await readAll(onSecond(tenant), tenant)

      await platformResource(route, tenant)
      const { call, multipart, known, unknown } = walk.request(route, tenant, tenant, t.platformToken)
      if (!known) failures.push(`${key(route)}: no id for ${unknown.join(', ') || 'its path'} (seed one)`)
      await PREPARED[key(route)]?.(t, tenant, call)
      // Keyed where the route takes a key: the request's work is then one transaction, committed as its answer is kept.
      const keyHeader: Record<string, string> =
        route.method === 'POST' || route.method === 'PUT' ? { 'idempotency-key': randomUUID() } : {}
      const form = multipart ? pdfForm() : undefined
      const res = await t.call({
        ...call,
        ...(form ? { body: form.body } : {}),
        headers: { ...form?.headers, ...keyHeader },
      })
      if (res.statusCode >= 300) {
        failures.push(`${key(route)}: ${res.statusCode} ${res.body}`)
        continue
      }
      const seen = await readAll(onFirst(tenant), tenant)
      t.app.services.readCache.forget()
      const truth = await readAll(onFirst(tenant), tenant)
      if (JSON.stringify(truth) !== JSON.stringify(before)) changing++
      for (const read of Object.keys(truth)) {
        if (seen[read] !== truth[read]) failures.push(`${key(route)}: ${read} is stale on the instance that wrote`)
      }
      if (second) {
        // The bound is the announcement's travel to the other instance's LISTEN connection; a second leaves room for a loaded machine.
        const heard = await eventually(
          () => readAll(onSecond(tenant), tenant),
          (bodies) => JSON.stringify(bodies) === JSON.stringify(truth),
          1_000,
        )
        for (const read of Object.keys(truth)) {
          if (heard[read] !== truth[read]) failures.push(`${key(route)}: ${read} is stale on another instance`)
        }
      }
    }
    assert.deepEqual(failures, [])
    assert.ok(changing >= 10, `only ${changing} writes changed a cached read: the walk shows too little`)
  })

  it("finds a write left unannounced: the walk's check can fail", async () => {
    const tenant = await seeded()
    await t.app.services.readCache.heardUpToNow()
    await readAll(onFirst(tenant), tenant)
    const before = await readAll(onFirst(tenant), tenant)
    await behindEveryCache(t.app.database, (trx) =>
      sql`UPDATE companies SET name = 'Unannounced' WHERE id = ${tenant.company.id}`.execute(trx),
    )
    assert.deepEqual(await readAll(onFirst(tenant), tenant), before, 'the cache still answers the old state')
    t.app.services.readCache.forget()
    assert.notDeepEqual(await readAll(onFirst(tenant), tenant), before)
  })
})
