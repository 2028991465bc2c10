import type { FastifyInstance, FastifySchemaCompiler } from 'fastify'
import { Ajv, type ErrorObject } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { LazyCompilers } from './schema-compilers.ts'
import { PATTERN_SENTENCES } from './schemas.ts'

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv

type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null }

/**
 * Bodies are validated as sent: no type coercion, unknown fields refused (never stripped), so
 * `{"name": 123}` is a 400 and not the string "123". Query strings and path parameters arrive
 * as text and are coerced to their documented types.
 *
 * Every string of a body, query or path, whatever its schema (free-form objects included, keys
 * too), is refused with a 400 naming the field when it holds a NUL character: PostgreSQL stores
 * none in text or jsonb and would otherwise refuse the statement without saying which field.
 */
export function installValidation(app: FastifyInstance, compilers: Pick<LazyCompilers, 'lazily'>) {
  // verbose: an anyOf error carries its schema, so an error names every allowed value (describe()).
  const common: { allErrors: boolean; useDefaults: boolean; removeAdditional: boolean; strict: boolean; verbose: boolean; keywords: string[] } = { allErrors: false, useDefaults: true, removeAdditional: false, strict: false, verbose: true, keywords: ['example'] }
  const bodyAjv = withFormats(new Ajv({ ...common, coerceTypes: false }))
  const textAjv = withFormats(new Ajv({ ...common, coerceTypes: 'array' }))
  const compiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
    compilers.lazily(() => withoutNul((httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object))) as ReturnType<FastifySchemaCompiler<unknown>>
  app.setValidatorCompiler(compiler)
  // Bodies are JSON (decisions §1): Fastify's built-in text/plain parser would hand a string to
  // the schema ("body must be object", a 400); without it a text body is the 415 it should be.
  app.removeContentTypeParser('text/plain')
  app.setSchemaErrorFormatter((errors, dataVar) => new Error(describe(errors as ErrorObject[], dataVar)))
}

/**
 * ajv-formats' uuid also takes a `urn:uuid:` prefix, which PostgreSQL's uuid type refuses (a
 * 400 that named no field): a uuid here is the 36 characters alone, in either case.
 */
function withFormats(ajv: Ajv): Ajv {
  return addFormats(ajv).addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i)
}

/** The schema's validation, then the NUL check on what passed it (so its depth is the schema's). */
function withoutNul(validate: Validate): Validate {
  const checked: Validate = (data) => {
    if (!validate(data)) {
      checked.errors = validate.errors
      return false
    }
    const nul = nulAt(data)
    checked.errors = nul === undefined ? null : [{ keyword: 'nul', instancePath: nul.path, schemaPath: '', params: {}, message: nul.inKey ? 'must not contain the NUL character in a key' : 'must not contain the NUL character' }]
    return nul === undefined
  }
  return checked
}

/** The JSON pointer of the first string (or key) holding a NUL, in document order; iterative, so no depth can overflow the stack. */
function nulAt(data: unknown): { path: string; inKey: boolean } | undefined {
  const stack: Array<[unknown, string]> = [[data, '']]
  while (stack.length > 0) {
    const [value, path] = stack.pop()!
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return { path, inKey: false }
      continue
    }
    if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) continue
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], `${path}/${i}`])
      continue
    }
    const keys = Object.keys(value)
    if (keys.some((key) => key.includes('\u0000'))) return { path, inKey: true }
    for (let i = keys.length - 1; i >= 0; i--) stack.push([(value as Record<string, unknown>)[keys[i]!], `${path}/${pointer(keys[i]!)}`])
  }
  return undefined
}

const pointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1')

/** One sentence naming the field: "body/name must be string", "body/color is not a known field". */
export function describe(errors: ErrorObject[] | undefined | null, dataVar: string): string {
  const error = errors?.[0]
  if (!error) return `${dataVar} is invalid`
  const where = `${dataVar}${error.instancePath}`
  const params = error.params as Record<string, unknown>
  const choices = allowedValues(errors!, error)
  if (choices) return `${where} must be one of ${choices.map((v) => JSON.stringify(v)).join(', ')}`
  switch (error.keyword) {
    case 'additionalProperties': return `${where}/${String(params.additionalProperty)} is not a known field`
    case 'required': return `${where}/${String(params.missingProperty)} is required`
    case 'enum': return `${where} must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
    case 'const': return `${where} must be ${JSON.stringify(params.allowedValue)}`
    case 'pattern': return `${where} ${PATTERN_SENTENCES[String(params.pattern)] ?? error.message ?? 'is invalid'}`
    default: return `${where} ${error.message ?? 'is invalid'}`
  }
}

/**
 * A union of literals (TypeBox compiles it to anyOf of const, possibly nullable) fails with one
 * error per branch, the first naming only one value: the union's anyOf error, the outermost at
 * the same field, gives them all. Undefined unless every branch is a literal.
 */
function allowedValues(errors: ErrorObject[], first: ErrorObject): unknown[] | undefined {
  const unions = errors.filter((e) => e.keyword === 'anyOf' && e.instancePath === first.instancePath && first.schemaPath.startsWith(`${e.schemaPath}/`))
  if (unions.length === 0) return undefined
  const outermost = unions.reduce((a, b) => (a.schemaPath.length <= b.schemaPath.length ? a : b))
  return literals(outermost.schema)
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
