import { randomUUID } from 'node:crypto'

/** Just enough of an OpenAPI 3.1 document to walk its operations and generate their inputs. */
export type Schema = {
  $ref?: string
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
  enum?: unknown[]
  const?: unknown
  default?: unknown
  format?: string
  pattern?: string
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  additionalProperties?: boolean | Schema
  patternProperties?: Record<string, Schema>
}
export type Parameter = { in: string; name: string; required?: boolean; schema: Schema }
export type Operation = {
  operationId?: string
  security?: Array<Record<string, string[]>>
  'x-platform-only'?: boolean
  parameters?: Parameter[]
  requestBody?: { content: Record<string, { schema: Schema }> }
  responses?: Record<string, { content?: Record<string, { schema: Schema }> }>
}
export interface Route {
  method: string
  path: string
  op: Operation
}
export type Doc = {
  paths: Record<string, Record<string, Operation>>
  components?: { schemas?: Record<string, Schema> }
}

export function routesOf(doc: Doc): Route[] {
  const out: Route[] = []
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (['get', 'put', 'post', 'delete', 'patch'].includes(method))
        out.push({ method: method.toUpperCase(), path, op })
    }
  }
  return out
}

export function resolver(doc: Doc) {
  return function resolve(schema: Schema | undefined): Schema | undefined {
    if (!schema?.$ref) return schema
    const parts = schema.$ref
      .replace(/^#\//, '')
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    let node: unknown = doc
    for (const p of parts) node = (node as Record<string, unknown>)?.[p]
    return resolve(node as Schema)
  }
}

/** Ids by the resource a field or parameter names (`team_id`, `destination_team_ids`, `sender_id`). */
export type Ids = Map<string, string>
const ALIASES: Record<string, string> = {
  team_leader: 'contract',
  sender: 'contract',
  destination_team: 'team',
  destination_subsidiary: 'subsidiary',
}
export function resourceOf(name: string): string | undefined {
  const match = /^(.*?)_ids?$/.exec(name)
  if (!match) return undefined
  return ALIASES[match[1]!] ?? match[1]!
}

/** A valid value of the schema, with id fields taken from `ids` where it has one. */
export function sampler(doc: Doc) {
  const resolve = resolver(doc)
  return function sample(input: Schema | undefined, name: string, ids: Ids, depth = 0): unknown {
    const schema = resolve(input)
    if (!schema || depth > 8) return undefined
    const choices = schema.anyOf ?? schema.oneOf
    if (choices) return sample(choices.map(resolve).find((c) => c?.type !== 'null') ?? choices[0], name, ids, depth + 1)
    if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s) => sample(s, name, ids, depth + 1) as object))
    if (schema.const !== undefined) return schema.const
    if (schema.enum) return schema.enum[0]
    const type = Array.isArray(schema.type)
      ? schema.type.find((x) => x !== 'null')
      : (schema.type ?? (schema.properties ? 'object' : undefined))
    const id = ids.get(resourceOf(name) ?? '')
    switch (type) {
      case 'object': {
        const out: Record<string, unknown> = {}
        for (const [key, sub] of Object.entries(schema.properties ?? {})) {
          const wanted = (schema.required ?? []).includes(key) || ids.has(resourceOf(key) ?? '')
          if (!wanted) continue
          const value = sample(sub, key, ids, depth + 1)
          if (value !== undefined) out[key] = value
        }
        return out
      }
      case 'array':
        if (id) return [id]
        return Array.from({ length: schema.minItems ?? 0 }, () =>
          sample(schema.items, name.replace(/s$/, ''), ids, depth + 1),
        )
      case 'integer':
      case 'number':
        return (
          schema.default ??
          (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : (schema.minimum ?? 1))
        )
      case 'boolean':
        return schema.default ?? true
      case 'string': {
        if (id) return id
        if (schema.default !== undefined) return schema.default
        if (schema.format === 'uuid') return randomUUID()
        if (schema.format === 'date' || schema.pattern?.includes('\\d{4}-\\d{2}-\\d{2}')) return '2099-01-01'
        if (schema.format === 'date-time') return '2099-01-01T09:00:00.000Z'
        if (schema.format === 'email') return 'someone@example.com'
        if (schema.format === 'uri') return 'https://localhost/back'
        if (schema.pattern === '^[A-Z]{2}$') return 'IT'
        if (schema.pattern === '^[A-Z]{3}$') return 'EUR'
        if (schema.pattern?.startsWith('^(read|write):')) return 'read:company'
        if (name === 'redirect_url') return 'https://localhost/back'
        if (name === 'timezone') return 'Europe/Rome'
        const text = `${name || 'x'}-${randomUUID().slice(0, 8)}`.replace(/[^A-Za-z0-9_-]/g, '')
        return text.padEnd(schema.minLength ?? 1, 'x').slice(0, schema.maxLength ?? 1000)
      }
      default:
        return undefined
    }
  }
}

/** The path with its parameters filled: company_id from `company`, the others from `ids` (a random UUID when unknown). */
export function fillPath(path: string, company: string, ids: Ids): { url: string; children: number } {
  let children = 0
  const url = path.replace(/\{([^}]+)\}/g, (_w, name: string) => {
    if (name === 'company_id' || name.startsWith('company_id_or_')) return company
    const id = ids.get(resourceOf(name) ?? name)
    if (id) {
      children++
      return id
    }
    return randomUUID()
  })
  return { url, children }
}

export function isPublic(op: Operation) {
  return (op.security ?? []).some((s) => Object.keys(s).length === 0)
}
export function isAnonymous(op: Operation) {
  return (op.security ?? []).length === 0
}
