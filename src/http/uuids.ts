import type { FastifyInstance } from 'fastify'

type Lower = (value: unknown) => unknown

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * UUIDs are case-insensitive: every `format: uuid` value is lower-cased as the request arrives, the
 * path and query in the first onRequest hook (before auth compares the company and the cache picks
 * it), the body in the first preValidation hook. A string that is not a uuid is left as it is.
 */
export function installUuidCase(app: FastifyInstance) {
  const plans = new WeakMap<object, Lower | null>()
  function planOf(schema: unknown): Lower | null {
    if (!schema || typeof schema !== 'object') return null
    let plan = plans.get(schema)
    if (plan === undefined) {
      plan = compile(schema as Schema, 0)
      plans.set(schema, plan)
    }
    return plan
  }

  app.addHook('onRequest', (request, _reply, done) => {
    const schema = request.routeOptions.schema
    if (schema) {
      planOf(schema.params)?.(request.params)
      planOf(schema.querystring)?.(request.query)
    }
    done()
  })

  app.addHook('preValidation', (request, _reply, done) => {
    const plan = planOf(request.routeOptions.schema?.body)
    if (plan && request.body !== undefined && request.body !== null) request.body = plan(request.body)
    done()
  })
}

interface Schema {
  format?: string
  properties?: Record<string, Schema>
  items?: Schema | Schema[]
  maxItems?: number
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
}

const MAX_DEPTH = 32

/** null when the schema holds no uuid at all. */
function compile(schema: Schema, depth: number): Lower | null {
  if (depth > MAX_DEPTH) return null
  if (schema.format === 'uuid')
    return (value) => (typeof value === 'string' && UUID.test(value) ? value.toLowerCase() : value)
  const branches = [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]
    .map((branch) => compile(branch, depth + 1))
    .filter((plan): plan is Lower => plan !== null)
  const items = schema.items && !Array.isArray(schema.items) ? compile(schema.items, depth + 1) : null
  const properties = Object.entries(schema.properties ?? {})
    .map(([name, property]) => [name, compile(property, depth + 1)] as const)
    .filter((entry): entry is readonly [string, Lower] => entry[1] !== null)
  if (branches.length === 0 && items === null && properties.length === 0) return null
  const maxItems = schema.maxItems ?? Infinity
  return (value) => {
    if (items) {
      // A query parameter sent once arrives as a string.
      if (typeof value === 'string') return items(value)
      // Past maxItems validation refuses the array anyway.
      if (Array.isArray(value) && value.length <= maxItems)
        for (let i = 0; i < value.length; i++) value[i] = items(value[i])
    }
    if (properties.length > 0 && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const object = value as Record<string, unknown>
      for (const [name, plan] of properties) if (Object.hasOwn(object, name)) object[name] = plan(object[name])
    }
    for (const branch of branches) value = branch(value)
    return value
  }
}
