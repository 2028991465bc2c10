import type { FastifyInstance, FastifyRequest, FastifySchemaCompiler, RouteOptions } from 'fastify'
import { Ajv, type ErrorObject } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { LazyCompilers } from './schema-compilers.ts'
import { PATTERN_SENTENCES } from './schemas.ts'

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv

type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null }

/**
 * Bodies are validated as sent: no coercion, unknown fields refused, so `{"name": 123}` is a 400.
 * Query strings and path parameters are coerced. A string holding NUL anywhere is a 400 naming its
 * field: PostgreSQL stores none and would refuse the statement without naming the field.
 */
export function installValidation(app: FastifyInstance, compilers: Pick<LazyCompilers, 'lazily'>) {
  // verbose: anyOf errors carry their schema, so a message names every allowed value. allErrors is
  // bounded by the request limits and DETAILS_MAX.
  const common: {
    allErrors: boolean
    useDefaults: boolean
    removeAdditional: boolean
    strict: boolean
    verbose: boolean
    keywords: string[]
  } = {
    allErrors: true,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
    verbose: true,
    keywords: ['example'],
  }
  const bodyAjv = withFormats(new Ajv({ ...common, coerceTypes: false }))
  const textAjv = withFormats(new Ajv({ ...common, coerceTypes: 'array' }))
  const validators = new RouteValidators()
  const compiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart, method, url }) => {
    const validate = compilers.lazily(() =>
      withoutNul((httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object)),
    )
    validators.add(method, url ?? '', httpPart ?? '', validate as Validate)
    return validate as ReturnType<FastifySchemaCompiler<unknown>>
  }
  app.setValidatorCompiler(compiler)
  // Bodies are JSON: without the text/plain parser a text body is a 415, not "body must be object".
  app.removeContentTypeParser('text/plain')
  app.setSchemaErrorFormatter((errors, dataVar) => {
    const details = problems(errors as ErrorObject[], dataVar)
    return Object.assign(new Error(details[0]?.message ?? `${dataVar} is invalid`), { details })
  })
  app.addHook('onRoute', strictQuery)
  return { problemsAfter: validators.problemsAfter.bind(validators) }
}

export type Validation = ReturnType<typeof installValidation>

const PARTS = [
  { part: 'params', data: (r: FastifyRequest) => r.params },
  { part: 'body', data: (r: FastifyRequest) => r.body },
  { part: 'querystring', data: (r: FastifyRequest) => r.query },
  { part: 'headers', data: (r: FastifyRequest) => r.headers },
] as const

/**
 * Fastify stops at the first failing part, so the parts it did not reach are validated here too
 * and their problems join `details`: a client learns of every problem at once.
 */
class RouteValidators {
  private readonly byRoute = new Map<string, Map<string, Validate | null>>()

  add(methods: string | string[], url: string, part: string, validate: Validate) {
    for (const method of [methods].flat()) this.addOne(method, url, part, validate)
  }

  private addOne(method: string, url: string, part: string, validate: Validate) {
    const key = `${method} ${url}`
    const parts = this.byRoute.get(key) ?? new Map<string, Validate | null>()
    this.byRoute.set(key, parts)
    // A body with a schema per content type is left to Fastify, which picks by media type.
    parts.set(part, parts.has(part) ? null : validate)
  }

  problemsAfter(request: FastifyRequest, failed: string | undefined): Detail[] {
    const parts = this.byRoute.get(`${request.method} ${request.routeOptions.url}`)
    const from = PARTS.findIndex((p) => p.part === failed)
    if (!parts || from < 0) return []
    const found: Detail[] = []
    for (const { part, data } of PARTS.slice(from + 1)) {
      const validate = parts.get(part)
      if (!validate || validate(data(request))) continue
      found.push(...problems(validate.errors, part))
    }
    return found.slice(0, DETAILS_MAX)
  }
}

/**
 * An unknown query parameter is a 400 naming it, so a typo is not silently ignored. API routes
 * only: browsers and probes add parameters of their own to the others.
 */
function strictQuery(route: RouteOptions) {
  if (!route.url.startsWith('/api/')) return
  const schema = (route.schema ??= {}) as { querystring?: Record<string | symbol, unknown> }
  schema.querystring = schema.querystring
    ? { ...schema.querystring, additionalProperties: schema.querystring.additionalProperties ?? false }
    : { type: 'object', properties: {}, additionalProperties: false }
}

// ajv-formats' uuid takes a `urn:uuid:` prefix that PostgreSQL refuses: here a uuid is the 36 characters alone.
function withFormats(ajv: Ajv): Ajv {
  return addFormats(ajv).addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i)
}

function withoutNul(validate: Validate): Validate {
  const checked: Validate = (data) => {
    if (!validate(data)) {
      checked.errors = validate.errors
      return false
    }
    const nuls = nulsAt(data)
    checked.errors =
      nuls.length === 0
        ? null
        : nuls.map((nul) => ({
            keyword: 'nul',
            instancePath: nul.path,
            schemaPath: '',
            params: {},
            message: nul.inKey ? 'must not contain the NUL character in a key' : 'must not contain the NUL character',
          }))
    return nuls.length === 0
  }
  return checked
}

/** JSON pointers of strings (or keys) holding NUL, at most DETAILS_MAX; iterative against stack overflow. */
function nulsAt(data: unknown): Array<{ path: string; inKey: boolean }> {
  const found: Array<{ path: string; inKey: boolean }> = []
  const stack: Array<[unknown, string]> = [[data, '']]
  while (stack.length > 0 && found.length < DETAILS_MAX) {
    const [value, path] = stack.pop()!
    if (typeof value === 'string') {
      if (value.includes('\u0000')) found.push({ path, inKey: false })
      continue
    }
    if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) continue
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}/${i}`])
      continue
    }
    const keys = Object.keys(value)
    if (keys.some((key) => key.includes('\u0000'))) found.push({ path, inKey: true })
    for (let i = keys.length - 1; i >= 0; i--)
      stack.push([(value as Record<string, unknown>)[keys[i]!], `${path}/${pointer(keys[i]!)}`])
  }
  return found
}

const pointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1')

export interface Detail {
  field: string
  message: string
}

/** A body of thousands of wrong members would otherwise answer with as many details. */
export const DETAILS_MAX = 100

/** One sentence naming the field: "body/name must be string". */
export function describe(errors: ErrorObject[] | undefined | null, dataVar: string): string {
  return problems(errors, dataVar)[0]?.message ?? `${dataVar} is invalid`
}

/**
 * Every problem of a failed validation (at most DETAILS_MAX), in Ajv's order. A union's failed
 * branches are one problem: "must be one of" for literals, else its first branch's problems.
 */
export function problems(errors: ErrorObject[] | undefined | null, dataVar: string): Detail[] {
  const details: Detail[] = []
  const seen = new Set<string>()
  const add = (detail: Detail) => {
    if (details.length >= DETAILS_MAX || seen.has(detail.message)) return
    seen.add(detail.message)
    details.push(detail)
  }
  collect(errors ?? [], dataVar, add, () => details.length >= DETAILS_MAX)
  return details
}

function collect(errors: ErrorObject[], dataVar: string, add: (detail: Detail) => void, full: () => boolean) {
  const unions = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf')
  const done = new Set<ErrorObject>()
  for (const error of errors) {
    if (full()) return
    if (done.has(error)) continue
    const union = outermostUnion(unions, error)
    if (!union) {
      done.add(error)
      add(single(error, dataVar))
      continue
    }
    const group = errors.filter((e) => e === union || within(union, e))
    for (const e of group) done.add(e)
    const choices = literals(union.schema)
    if (choices) {
      add({
        field: `${dataVar}${union.instancePath}`,
        message: `${dataVar}${union.instancePath} must be one of ${choices.map((v) => JSON.stringify(v)).join(', ')}`,
      })
      continue
    }
    const first = group.find((e) => e !== union)
    if (!first) {
      add(single(union, dataVar))
      continue
    }
    const branch = `${union.schemaPath}/${first.schemaPath.slice(union.schemaPath.length + 1).split('/')[0]}/`
    collect(
      group.filter((e) => e !== union && e.schemaPath.startsWith(branch)),
      dataVar,
      add,
      full,
    )
  }
}

function outermostUnion(unions: ErrorObject[], error: ErrorObject): ErrorObject | undefined {
  const around = unions.filter((u) => u === error || within(u, error))
  if (around.length === 0) return undefined
  return around.reduce((a, b) => (a.schemaPath.length <= b.schemaPath.length ? a : b))
}

function within(union: ErrorObject, error: ErrorObject): boolean {
  return (
    error !== union &&
    error.schemaPath.startsWith(`${union.schemaPath}/`) &&
    (error.instancePath === union.instancePath || error.instancePath.startsWith(`${union.instancePath}/`))
  )
}

function single(error: ErrorObject, dataVar: string): Detail {
  const where = `${dataVar}${error.instancePath}`
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'additionalProperties':
      return {
        field: `${where}/${String(params.additionalProperty)}`,
        message: `${where}/${String(params.additionalProperty)} is not a known field`,
      }
    case 'required':
      return {
        field: `${where}/${String(params.missingProperty)}`,
        message: `${where}/${String(params.missingProperty)} is required`,
      }
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')
      return { field: where, message: `${where} must be one of ${allowed}` }
    }
    case 'const':
      return { field: where, message: `${where} must be ${JSON.stringify(params.allowedValue)}` }
    case 'pattern':
      return {
        field: where,
        message: `${where} ${PATTERN_SENTENCES[String(params.pattern)] ?? error.message ?? 'is invalid'}`,
      }
    default:
      return { field: where, message: `${where} ${error.message ?? 'is invalid'}` }
  }
}

function literals(branches: unknown): unknown[] | undefined {
  if (!Array.isArray(branches)) return undefined
  const values: unknown[] = []
  for (const branch of branches as Array<Record<string, unknown>>) {
    if ('const' in branch) values.push(branch.const)
    else if (Array.isArray(branch.enum)) values.push(...branch.enum)
    else if (branch.anyOf) {
      const inner = literals(branch.anyOf)
      if (!inner) return undefined
      values.push(...inner)
    } else if (branch.type === 'null') values.push(null)
    else return undefined
  }
  return values
}
