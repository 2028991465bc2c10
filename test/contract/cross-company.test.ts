import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { buildTestApp, engines, type TestApp } from '../helpers/app.ts'
import { company, contract, subsidiary, team, type CompanyFixture } from '../helpers/factories.ts'
import { READ_WRITE_AREAS } from '../../src/modules/oauth/scopes.ts'

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
  'POST /oauth/token': 'takes a client\'s own credentials; test/oauth.test.ts tries other clients\' secrets',
  'GET /.well-known/jwks.json': 'the public signing keys',
  'POST /api/v1/subscription/webhooks/chargebee': 'the billing provider\'s, authenticated by its signature, not a company token',
  'POST /api/v1/companies': 'creates a company: platform only (test/companies.test.ts: 403 to a company token)',
  'GET /api/v1/companies': 'lists every company: platform only (test/companies-patch.test.ts: 403 to a company token)',
  'GET /api/v1/subscription/{subscription_id}/estimate': 'public by the spec (no token, so no company to cross); test/subscriptions-access.test.ts covers what it shows',
  // The catalogue is the platform's, shared by every company: read by anyone, written by the platform.
  'GET /api/v1/subscription/plans': 'catalogue', 'POST /api/v1/subscription/plans': 'catalogue',
  'GET /api/v1/subscription/plans/{id}': 'catalogue', 'GET /api/v1/subscription/plans/by_sku/{sku}': 'catalogue',
  'GET /api/v1/subscription/products': 'catalogue', 'POST /api/v1/subscription/products': 'catalogue',
  'GET /api/v1/subscription/products/{id}': 'catalogue', 'PUT /api/v1/subscription/products/{id}': 'catalogue',
  'GET /api/v1/subscription/addons': 'catalogue', 'POST /api/v1/subscription/addons': 'catalogue',
  'GET /api/v1/subscription/addons/{id}': 'catalogue',
  // Coupons too, but only the platform reads them (test/catalogue.test.ts: 403 to a company token).
  'GET /api/v1/subscription/coupons': 'catalogue', 'POST /api/v1/subscription/coupons': 'catalogue',
  'GET /api/v1/subscription/coupons/{id}': 'catalogue, platform only',
  // The platform's event log and webhook endpoints: platform tokens only (test/events.test.ts and
  // test/webhook-endpoints.test.ts: 403 to a company token); a company's are under its path.
  'GET /api/v1/events': 'platform only', 'GET /api/v1/events/{event_id}': 'platform only',
  'GET /api/v1/webhook_endpoints': 'platform only', 'POST /api/v1/webhook_endpoints': 'platform only',
  'GET /api/v1/webhook_endpoints/{id}': 'platform only', 'DELETE /api/v1/webhook_endpoints/{id}': 'platform only',
  'GET /api/v1/webhook_endpoints/{id}/deliveries': 'platform only', 'POST /api/v1/webhook_endpoints/{id}/test': 'platform only',
  'PATCH /api/v1/webhook_endpoints/{id}': 'platform only', 'POST /api/v1/webhook_endpoints/{id}/rotate_secret': 'platform only',
}

/** A path that names a company or one of its resources outside a company path (a subscription). */
const COMPANY_PATH = /\{company_id[^}]*\}|\{subscription_customer_id\}|\{subscription_id\}/
/** A path parameter other than the company: an id of one of its resources. */
const CHILD_IN_PATH = /\{(?!company_id|subscription_customer_id)[^}]+\}/

const key = (route: { method: string; path: string }) => `${route.method} ${route.path}`

/** A minimal PDF as a multipart form: what the upload routes (the only multipart ones) take. */
function pdfForm() {
  const boundary = '----cross-company'
  const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(64, 0x20), Buffer.from('\n%%EOF\n')])
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="b.pdf"\r\nContent-Type: application/pdf\r\n\r\n`),
    pdf, Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  return { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

type Schema = {
  $ref?: string
  type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[]
  enum?: unknown[]; const?: unknown; default?: unknown; format?: string; pattern?: string; minLength?: number; minItems?: number
  minimum?: number; exclusiveMinimum?: number; description?: string
}
type Operation = {
  security?: Array<Record<string, string[]>>; 'x-platform-only'?: boolean; parameters?: Array<{ in: string; name: string; required?: boolean; schema: Schema }>
  requestBody?: { content: Record<string, { schema: Schema }> }; responses?: Record<string, unknown>
}
interface Route { method: string; path: string; op: Operation }

const METHODS = ['get', 'put', 'post', 'delete', 'patch']

/** The ids of one company's resources, by resource name (`team`, `contract`, ...) and by collection path template. */
interface Tenant {
  company: CompanyFixture
  byName: Map<string, string>
  byCollection: Map<string, string>
}

const singular = (word: string) => word.replace(/ies$/, 'y').replace(/s$/, '')
// Id fields whose name does not say the resource they point to.
const ALIASES: Record<string, string> = { team_leader: 'contract', sender: 'contract', destination_team: 'team', destination_subsidiary: 'subsidiary', addon: 'addon' }

/** The resource a field or parameter named like `team_id`, `team_ids`, `destination_team_ids` points to. */
function resourceOf(name: string): string | undefined {
  const match = /^(.*?)_ids?$/.exec(name)
  if (!match) return undefined
  return ALIASES[match[1]!] ?? match[1]!
}

function isPublic(op: Operation) {
  return (op.security ?? []).some((s) => Object.keys(s).length === 0)
}

function isPlatformOnly(op: Operation) {
  return op['x-platform-only'] === true || ((op.security ?? []).length > 0 && !(op.security ?? []).some((s) => s.oauth2))
}

for (const engine of engines) {
  describe(`cross-company isolation on ${engine}`, () => {
    let t: TestApp
    let routes: Route[]
    let schemas: Record<string, Schema> = {}
    let a: Tenant
    let b: Tenant
    /** What the seeding POSTs answered: every creation says where its resource is. */
    const creations: Array<{ route: string; status: number; location: unknown }> = []
    const today = () => t.clock.now().toISOString().slice(0, 10)

    /** The path with its parameters filled from the tenant's ids; `known` says whether every one was. */
    function fill(path: string, owner: Tenant, children: Tenant): { url: string; known: boolean; usesChild: boolean } {
      let known = true
      let usesChild = false
      const url = path.replace(/\{([^}]+)\}/g, (_whole, name: string, offset: number) => {
        if (name === 'company_id' || name.startsWith('company_id_or_')) return owner.company.id
        const collection = path.slice(0, offset - 1)
        const id = children.byCollection.get(collection) ?? children.byName.get(resourceOf(name) ?? name)
        if (id !== undefined) {
          if (children !== owner) usesChild = true
          return id
        }
        known = false
        return randomUUID()
      })
      return { url, known, usesChild }
    }

    /** A value that satisfies the schema, with id fields pointing at `ids`; `used` says when one was, and which were unknown. */
    function sample(given: Schema | undefined, name: string, ids: Tenant, used: { child: boolean; unknown?: string[] }): unknown {
      // Named shapes are $refs to components.schemas.
      const schema = given?.$ref ? schemas[given.$ref.split('/').pop()!] : given
      if (!schema) return undefined
      const choices = schema.anyOf ?? schema.oneOf
      if (choices) return sample(choices.find((c) => c.type !== 'null') ?? choices[0], name, ids, used)
      if (schema.const !== undefined) return schema.const
      if (schema.enum) return schema.enum[0]
      const type = Array.isArray(schema.type) ? schema.type.find((x) => x !== 'null') : schema.type
      const resource = resourceOf(name)
      const id = resource ? ids.byName.get(resource) : undefined
      if (resource && !id && (type === 'string' || type === 'array')) used.unknown?.push(name)
      switch (type) {
        case 'object': {
          const out: Record<string, unknown> = {}
          for (const [key, sub] of Object.entries(schema.properties ?? {})) {
            const idField = resourceOf(key) !== undefined && ids.byName.has(resourceOf(key)!)
            if (!(schema.required ?? []).includes(key) && !idField) continue
            const value = sample(sub, key, ids, used)
            if (value !== undefined) out[key] = value
          }
          return out
        }
        case 'array': {
          if (id) { used.child = true; return [id] }
          return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items, singular(name), ids, used))
        }
        case 'integer': case 'number':
          return schema.default ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : schema.minimum ?? 1)
        case 'boolean': return schema.default ?? true
        case 'string': {
          if (id) { used.child = true; return id }
          if (schema.default !== undefined) return schema.default
          if (schema.format === 'uuid') return randomUUID()
          if (schema.format === 'date' || schema.pattern?.includes('\\d{4}-\\d{2}-\\d{2}')) return today()
          if (schema.format === 'date-time') return t.clock.now().toISOString()
          if (schema.format === 'email') return 'someone@example.com'
          if (schema.format === 'uri') return 'https://localhost/back'
          if (schema.pattern === '^[A-Z]{2}$') return 'IT'
          if (schema.pattern?.startsWith('^(read|write):')) return 'read:company'
          const text = `${name || 'x'}-${randomUUID().slice(0, 8)}`.replace(/[^A-Za-z0-9_-]/g, '')
          return text.padEnd(schema.minLength ?? 1, 'x')
        }
        default: return undefined
      }
    }

    function request(route: Route, owner: Tenant, children: Tenant, token: string) {
      const { url, known, usesChild } = fill(route.path, owner, children)
      const used = { child: false, unknown: [] as string[] }
      const json = route.op.requestBody?.content['application/json']
      const body = json ? sample(json.schema, '', children, used) : undefined
      const query: Record<string, string> = {}
      for (const p of route.op.parameters ?? []) {
        if (p.in === 'query' && p.required) query[p.name] = String(sample(p.schema, p.name, children, used))
      }
      return {
        call: { method: route.method as 'GET', url, token, body, query },
        known: known && used.unknown.length === 0, unknown: used.unknown, usesChild: usesChild || (children !== owner && used.child),
        multipart: !json && route.op.requestBody !== undefined,
      }
    }

    /** B's resources: the ones of the factories, then one of every collection its POST routes create. */
    async function seed(tenant: Tenant) {
      const { id } = tenant.company
      tenant.byName.set('client', tenant.company.client.client_id)
      tenant.byCollection.set(`/api/v1/companies/{company_id}/clients`, tenant.company.client.client_id)
      const sub = await subsidiary(t, id)
      tenant.byName.set('subsidiary', sub)
      tenant.byCollection.set('/api/v1/companies/{company_id}/subsidiaries', sub)
      const k = await contract(t, id, { subsidiary_id: sub })
      tenant.byName.set('contract', k)
      tenant.byCollection.set('/api/v1/companies/{company_id}/contracts', k)
      if (routes.some((r) => r.method === 'POST' && r.path === '/api/v1/companies/{company_id}/teams')) {
        const tm = await team(t, id, { team_leader_ids: [k] })
        tenant.byName.set('team', tm)
        tenant.byCollection.set('/api/v1/companies/{company_id}/teams', tm)
      }
      const got = await t.json(200, { url: `/api/v1/companies/${id}` })
      if (got.subscription_id) tenant.byName.set('subscription', got.subscription_id)
      if (got.subscription_customer_id) tenant.byName.set('subscription_customer', got.subscription_customer_id)

      const pending = routes
        .filter((r) => r.method === 'POST' && r.path.startsWith('/api/v1/companies/{company_id}/') && !tenant.byCollection.has(r.path))
        .sort((x, y) => x.path.split('/').length - y.path.split('/').length || x.path.localeCompare(y.path))
      for (const route of pending) {
        const { call, known, multipart } = request(route, tenant, tenant, t.platformToken)
        if (!known) continue
        const res = await t.call(multipart ? { ...call, ...pdfForm() } : call)
        const location = res.headers.location
        if (res.statusCode < 300) creations.push({ route: `POST ${route.path}`, status: res.statusCode, location })
        if (res.statusCode < 300 && typeof location === 'string') {
          const created = location.split('/').pop()!
          tenant.byCollection.set(route.path, created)
          tenant.byName.set(singular(route.path.split('/').pop()!), created)
        }
      }
      // What the creations set in motion (deliveries of communications, the trial's end and its invoice, ...).
      await t.app.services.scheduler.runDue()
      // Resources that no POST makes (delivered messages, ...): the first one a list shows.
      const listed = (path: string) => path.startsWith('/api/v1/companies/{company_id}/') || path.startsWith('/api/v1/subscription/{company_id}/')
      for (const route of routes.filter((r) => r.method === 'GET' && !isPublic(r.op) && listed(r.path))) {
        const last = route.path.split('/').pop()!
        if (last.startsWith('{') || tenant.byName.has(singular(last))) continue
        const { call, known } = request(route, tenant, tenant, t.platformToken)
        if (!known) continue
        const res = await t.call(call)
        if (res.statusCode !== 200) continue
        const body = res.json()
        const items = Array.isArray(body) ? body : Array.isArray(body?.[last]) ? body[last] : []
        const first = items.find((item: unknown) => typeof (item as { id?: unknown })?.id === 'string')
        if (first) tenant.byName.set(singular(last), first.id)
      }
    }

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
      t = await buildTestApp(engine, { TRIAL_DAYS: 0 })
      const doc = await t.json(200, { url: '/openapi.json', token: null })
      schemas = doc.components.schemas
      routes = Object.entries<Record<string, Operation>>(doc.paths).flatMap(([path, item]) =>
        METHODS.filter((m) => item[m]).map((m) => ({ method: m.toUpperCase(), path, op: item[m]! })))
      // Every area in the plan: the tokens hold every scope, so a refusal can only be about the company.
      const features = [...READ_WRITE_AREAS, 'calendar']
      a = { company: await company(t, {}, { features }), byName: new Map(), byCollection: new Map() }
      b = { company: await company(t, {}, { features }), byName: new Map(), byCollection: new Map() }
      // Cards, so that the trials' end (now: TRIAL_DAYS is 0 here) bills a first invoice at the seeds' runDue.
      for (const tenant of [a, b]) {
        await t.json(200, { method: 'PUT', url: `/api/v1/subscription/${tenant.company.id}/payment_source`, body: { brand: 'visa', last4: '4242', expiry_month: 12, expiry_year: 2099 } })
      }
      await seed(a)
      await seed(b)
    })
    after(async () => { await t?.close() })

    it('answers every creation with a Location that leads to the new resource', async () => {
      // Every POST of a company path made something for both companies (the factories made the first ones).
      // An action that answers 200 and makes nothing (rotate_secret) is no creation.
      const action = (r: Route) => Object.keys(r.op.responses ?? {}).every((status) => !/^20[12]$/.test(status))
      const posts = routes.filter((r) => r.method === 'POST' && r.path.startsWith('/api/v1/companies/{company_id}/') && !action(r))
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

    it('answers 404 to a company token on another company\'s path, for every route, and changes nothing', async () => {
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
      assert.deepEqual(all.filter((r) => !checked.includes(r) && !(r in NOT_COMPANY_SCOPED)), [], 'operations neither walked nor excluded')
      assert.deepEqual(checked.filter((r) => r in NOT_COMPANY_SCOPED), [], 'walked, yet excluded as taking no company')
      assert.deepEqual(Object.keys(NOT_COMPANY_SCOPED).filter((r) => !all.includes(r)), [], 'excluded, yet not documented')
      assert.deepEqual(await snapshot(b), before)
      // B still works with its own token: it was neither disabled nor revoked.
      await t.json(200, { url: `/api/v1/companies/${b.company.id}`, token: b.company.token })
    })

    it('never lets a company reach another company\'s resources through its own path', async () => {
      const before = await snapshot(b)
      const failures: string[] = []
      const walked: string[] = []
      for (const route of routes.filter((r) => !isPublic(r.op) && !isPlatformOnly(r.op) && r.path.includes('{company_id'))) {
        const { call, usesChild, multipart, unknown } = request(route, a, b, a.company.token)
        // A route with one of B's resources in its path, or an id field of a resource B has none
        // of, must not drop out of the walk: it would be tried with nothing of B's.
        if (unknown.length) failures.push(`${key(route)}: no id of B for ${unknown.join(', ')} (seed one)`)
        if (CHILD_IN_PATH.test(route.path) && !fill(route.path, a, b).usesChild) failures.push(`${key(route)}: no id of B for its path (seed one)`)
        if (multipart && usesChild) failures.push(`${key(route)}: a multipart body with ids is not generated here`)
        if (!usesChild || multipart) continue
        walked.push(key(route))
        const res = await t.call(call)
        const inPath = fill(route.path, a, b).usesChild
        // A foreign id in the path is a missing resource; in a body, a missing or invalid reference.
        const allowed = inPath && route.method !== 'POST' && route.method !== 'PUT' ? [404] : [400, 404]
        // A query this generator could not fill validly is refused before any lookup: no leak either.
        const queryRefused = res.statusCode === 400 && /^querystring/.test(res.json().errors)
        if (!allowed.includes(res.statusCode) && !queryRefused) failures.push(`${route.method} ${route.path} (${call.url} ${JSON.stringify(call.body)}): ${res.statusCode} ${res.body}`)
      }
      assert.deepEqual(failures, [])
      assert.ok(walked.includes('GET /api/v1/companies/{company_id}/contracts/{contract_id}') && walked.includes('POST /api/v1/companies/{company_id}/teams'), walked.join('\n'))
      assert.deepEqual(await snapshot(b), before)
    })
  })
}
