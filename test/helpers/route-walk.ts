import { randomUUID } from 'node:crypto'
import type { TestApp } from './app.ts'
import { contract, subsidiary, team, type CompanyFixture } from './factories.ts'

/**
 * A walk over the routes of the OpenAPI document: requests built from each route's own schemas,
 * with the ids in paths and bodies filled from a company's resources (a tenant), and the seeding
 * that gives a company one resource of every collection its POST routes create. Suites that must
 * cover every route, including routes added later, walk the document with it.
 */

export const key = (route: { method: string; path: string }) => `${route.method} ${route.path}`

/** A minimal PDF as a multipart form: what the upload routes (the only multipart ones) take. */
export function pdfForm() {
  const boundary = '----cross-company'
  const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(64, 0x20), Buffer.from('\n%%EOF\n')])
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="b.pdf"\r\nContent-Type: application/pdf\r\n\r\n`,
    ),
    pdf,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  return { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

export type Schema = {
  $ref?: string
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  anyOf?: Schema[]
  oneOf?: Schema[]
  enum?: unknown[]
  const?: unknown
  default?: unknown
  format?: string
  pattern?: string
  minLength?: number
  minItems?: number
  minimum?: number
  exclusiveMinimum?: number
  description?: string
}
export type Operation = {
  security?: Array<Record<string, string[]>>
  'x-platform-only'?: boolean
  parameters?: Array<{ in: string; name: string; required?: boolean; schema: Schema }>
  requestBody?: { content: Record<string, { schema: Schema }> }
  responses?: Record<string, unknown>
}
export interface Route {
  method: string
  path: string
  op: Operation
}

export const METHODS = ['get', 'put', 'post', 'delete', 'patch']

/** The ids of one company's resources, by resource name (`team`, `contract`, ...) and by collection path template. */
export interface Tenant {
  company: CompanyFixture
  byName: Map<string, string>
  byCollection: Map<string, string>
}

export const singular = (word: string) => word.replace(/ies$/, 'y').replace(/s$/, '')
// Id fields whose name does not say the resource they point to.
const ALIASES: Record<string, string> = {
  team_leader: 'contract',
  sender: 'contract',
  destination_team: 'team',
  destination_subsidiary: 'subsidiary',
  reference_invoice: 'invoice',
  addon: 'addon',
}

/** The resource a field or parameter named like `team_id`, `team_ids`, `destination_team_ids` points to. */
export function resourceOf(name: string): string | undefined {
  const match = /^(.*?)_ids?$/.exec(name)
  if (!match) return undefined
  return ALIASES[match[1]!] ?? match[1]!
}

export function isPublic(op: Operation) {
  return (op.security ?? []).some((s) => Object.keys(s).length === 0)
}

export function isPlatformOnly(op: Operation) {
  return (
    op['x-platform-only'] === true || ((op.security ?? []).length > 0 && !(op.security ?? []).some((s) => s.oauth2))
  )
}

/** What a seeding POST answered. */
export interface Creation {
  route: string
  status: number
  location: unknown
}

/** A tenant with no resources yet. */
export const tenantOf = (company: CompanyFixture): Tenant => ({ company, byName: new Map(), byCollection: new Map() })

/** The operations of an OpenAPI document, as routes. */
export function routesOf(doc: { paths: Record<string, Record<string, Operation>> }): Route[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m) => ({ method: m.toUpperCase(), path, op: item[m]! })),
  )
}

/** Request building and seeding over `doc` (the app's /openapi.json), for the app `t`. */
export function routeWalk(
  t: TestApp,
  doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } },
) {
  const routes = routesOf(doc)
  const schemas = doc.components.schemas
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
  function sample(
    given: Schema | undefined,
    name: string,
    ids: Tenant,
    used: { child: boolean; unknown?: string[] },
  ): unknown {
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
          // `price` is optional only beside tiers: a catalogue item without them needs one.
          if (!(schema.required ?? []).includes(key) && !idField && key !== 'price') continue
          const value = sample(sub, key, ids, used)
          if (value !== undefined) out[key] = value
        }
        return out
      }
      case 'array': {
        if (id) {
          used.child = true
          return [id]
        }
        return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items, singular(name), ids, used))
      }
      case 'integer':
      case 'number':
        return (
          schema.default ??
          (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : (schema.minimum ?? 1))
        )
      case 'boolean':
        return schema.default ?? true
      case 'string': {
        if (id) {
          used.child = true
          return id
        }
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
      default:
        return undefined
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
      known: known && used.unknown.length === 0,
      unknown: used.unknown,
      usesChild: usesChild || (children !== owner && used.child),
      multipart: !json && route.op.requestBody !== undefined,
    }
  }

  /** B's resources: the ones of the factories, then one of every collection its POST routes create. */
  async function seed(tenant: Tenant, created?: (creation: Creation) => void) {
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
      .filter(
        (r) =>
          r.method === 'POST' &&
          r.path.startsWith('/api/v1/companies/{company_id}/') &&
          !tenant.byCollection.has(r.path),
      )
      .sort((x, y) => x.path.split('/').length - y.path.split('/').length || x.path.localeCompare(y.path))
    for (const route of pending) {
      const { call, known, multipart } = request(route, tenant, tenant, t.platformToken)
      if (!known) continue
      const res = await t.call(multipart ? { ...call, ...pdfForm() } : call)
      const location = res.headers.location
      if (res.statusCode < 300) created?.({ route: `POST ${route.path}`, status: res.statusCode, location })
      if (res.statusCode < 300 && typeof location === 'string') {
        const created = location.split('/').pop()!
        tenant.byCollection.set(route.path, created)
        tenant.byName.set(singular(route.path.split('/').pop()!), created)
      }
    }
    // What the creations set in motion (deliveries of communications, the trial's end and its invoice, ...).
    await t.app.services.scheduler.runDue()
    // Resources that no POST makes (delivered messages, ...): the first one a list shows.
    const listed = (path: string) =>
      path.startsWith('/api/v1/companies/{company_id}/') || path.startsWith('/api/v1/subscription/{company_id}/')
    for (const route of routes.filter((r) => r.method === 'GET' && !isPublic(r.op) && listed(r.path))) {
      const last = route.path.split('/').pop()!
      if (last.startsWith('{') || tenant.byName.has(singular(last))) continue
      const { call, known } = request(route, tenant, tenant, t.platformToken)
      if (!known) continue
      const res = await t.call(call)
      // A document (a PDF) lists nothing.
      if (res.statusCode !== 200 || !String(res.headers['content-type']).startsWith('application/json')) continue
      const body = res.json()
      const items = Array.isArray(body) ? body : Array.isArray(body?.[last]) ? body[last] : []
      const first = items.find((item: unknown) => typeof (item as { id?: unknown })?.id === 'string')
      if (first) tenant.byName.set(singular(last), first.id)
    }
  }

  return { routes, fill, request, seed }
}
