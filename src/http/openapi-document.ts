import { exampleOf } from './openapi-examples.ts'
import { secretFieldsOf } from './secret-fields.ts'

/**
 * The last pass over the generated OpenAPI document: examples on bodies and 2xx answers, `Location`
 * on creations, `Idempotent-Replayed` and `Cache-Control: no-store` where they apply, and titled
 * schemas lifted into `components.schemas`; two different shapes with one title are an error.
 */

type Schema = Record<string, any>
type Doc = Record<string, any>

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head'] as const
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'] as const
const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const
const SCHEMA_ONES = [
  'items',
  'additionalProperties',
  'not',
  'contains',
  'if',
  'then',
  'else',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
] as const

export function finishDocument(doc: Doc): Doc {
  const components: Record<string, Schema> = ((doc.components ??= {}).schemas ??= {})
  const lifted = new Map<string, string>()
  const lift = (schema: Schema) => liftTitled(schema, components, lifted)

  for (const item of Object.values((doc.paths ?? {}) as Record<string, Doc>)) {
    for (const method of METHODS) {
      const op = item[method]
      if (!op) continue
      for (const media of Object.values((op.requestBody?.content ?? {}) as Record<string, Schema>)) addExample(media)
      const keyed = ((op.parameters ?? []) as Schema[]).some(
        (p) => p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key',
      )
      for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, Schema>)) {
        const success = /^2\d\d$/.test(status)
        for (const media of Object.values((response.content ?? {}) as Record<string, Schema>))
          if (success) addExample(media)
        if (status === '201' || (status === '202' && method === 'post')) addLocation(response)
        if (success && keyed) addReplayed(response)
        if (
          success &&
          Object.values((response.content ?? {}) as Record<string, Schema>).some(
            (media) => secretFieldsOf(media.schema).length > 0,
          )
        )
          addNoStore(response)
        if (success && response.description === 'Default Response') response.description = successDescription(response)
      }
      for (const media of Object.values((op.requestBody?.content ?? {}) as Record<string, Schema>))
        if (media.schema) media.schema = lift(media.schema)
      for (const response of Object.values((op.responses ?? {}) as Record<string, Schema>)) {
        for (const media of Object.values((response.content ?? {}) as Record<string, Schema>))
          if (media.schema) media.schema = lift(media.schema)
        for (const header of Object.values((response.headers ?? {}) as Record<string, Schema>))
          if (header.schema) header.schema = lift(header.schema)
      }
      for (const parameter of (op.parameters ?? []) as Schema[])
        if (parameter.schema) parameter.schema = lift(parameter.schema)
    }
  }
  doc.components.schemas = Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b)))
  return doc
}

function addExample(media: Schema) {
  if ('example' in media || 'examples' in media || !media.schema) return
  const value = exampleOf(media.schema)
  if (value !== undefined) media.example = value
}

function addLocation(response: Schema) {
  response.headers ??= {}
  response.headers.Location ??= {
    description: 'The URL of the created resource (a path on this server), to read it back with GET',
    required: true,
    schema: { type: 'string', format: 'uri-reference' },
  }
}

function addReplayed(response: Schema) {
  response.headers ??= {}
  response.headers['Idempotent-Replayed'] ??= {
    description:
      'Sent on every Idempotency-Key replay (of any status): this answer is the kept answer of the first request ' +
      'with the key, and nothing ran again',
    schema: { type: 'string', const: 'true' },
  }
}

function addNoStore(response: Schema) {
  response.headers ??= {}
  response.headers['Cache-Control'] ??= {
    description: 'The answer carries a secret: no cache may keep it',
    required: true,
    schema: { type: 'string', const: 'no-store' },
  }
}

function successDescription(response: Schema): string {
  const schema = Object.values((response.content ?? {}) as Record<string, Schema>)[0]?.schema as Schema | undefined
  if (schema?.title) return `The ${schema.title}`
  if (schema?.type === 'array' && schema.items?.title) return `A list of ${schema.items.title}`
  return 'Success'
}

// Depth first. The top level's `description` is not part of the shape: a route may say there what one answer means.
function liftTitled(schema: Schema, components: Record<string, Schema>, lifted: Map<string, string>): Schema {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema) || schema.$ref) return schema
  const out: Schema = { ...schema }
  for (const key of SCHEMA_MAPS) {
    if (out[key] && typeof out[key] === 'object') {
      out[key] = Object.fromEntries(
        Object.entries(out[key] as Record<string, Schema>).map(([k, v]) => [k, liftTitled(v, components, lifted)]),
      )
    }
  }
  for (const key of SCHEMA_LISTS)
    if (Array.isArray(out[key])) out[key] = out[key].map((s: Schema) => liftTitled(s, components, lifted))
  for (const key of SCHEMA_ONES)
    if (out[key] && typeof out[key] === 'object') out[key] = liftTitled(out[key], components, lifted)
  const title = out.title
  if (typeof title !== 'string') return out
  if (!/^[A-Za-z0-9._-]+$/.test(title))
    throw new Error(`OpenAPI: the schema title "${title}" cannot name a component (letters, digits, . _ - only)`)
  const { description, example, examples, ...shape } = out
  const key = canonical(shape)
  const known = lifted.get(title)
  if (known === undefined) {
    lifted.set(title, key)
    components[title] = {
      ...shape,
      ...(description !== undefined ? { description } : {}),
      ...(examples ? { examples } : example !== undefined ? { examples: [example] } : {}),
    }
  } else if (known !== key) {
    throw new Error(
      `OpenAPI: two different shapes are both titled "${title}"; give one of them another title.\n${known}\n${key}`,
    )
  } else if (examples && !components[title]!.examples) {
    components[title]!.examples = examples
  }
  // A description that differs between uses belongs to the answer: the component keeps none.
  if (description !== components[title]!.description) delete components[title]!.description
  return { $ref: `#/components/schemas/${title}` }
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  )
}
