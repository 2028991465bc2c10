import type { FastifyInstance, FastifySchemaCompiler } from 'fastify'
import { Ajv, type ErrorObject } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { LazyCompilers } from './schema-compilers.ts'

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv

/**
 * Bodies are validated as sent: no type coercion, unknown fields refused (never stripped), so
 * `{"name": 123}` is a 400 and not the string "123". Query strings and path parameters arrive
 * as text and are coerced to their documented types.
 */
export function installValidation(app: FastifyInstance, compilers: Pick<LazyCompilers, 'lazily'>) {
  const common: { allErrors: boolean; useDefaults: boolean; removeAdditional: boolean; strict: boolean; keywords: string[] } = { allErrors: false, useDefaults: true, removeAdditional: false, strict: false, keywords: ['example'] }
  const bodyAjv = addFormats(new Ajv({ ...common, coerceTypes: false }))
  const textAjv = addFormats(new Ajv({ ...common, coerceTypes: 'array' }))
  const compiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
    compilers.lazily(() => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object)) as ReturnType<FastifySchemaCompiler<unknown>>
  app.setValidatorCompiler(compiler)
  // Bodies are JSON (decisions §1): Fastify's built-in text/plain parser would hand a string to
  // the schema ("body must be object", a 400); without it a text body is the 415 it should be.
  app.removeContentTypeParser('text/plain')
  app.setSchemaErrorFormatter((errors, dataVar) => new Error(describe(errors[0] as ErrorObject | undefined, dataVar)))
}

/** One sentence naming the field: "body/name must be string", "body/color is not a known field". */
export function describe(error: ErrorObject | undefined, dataVar: string): string {
  if (!error) return `${dataVar} is invalid`
  const where = `${dataVar}${error.instancePath}`
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'additionalProperties': return `${where}/${String(params.additionalProperty)} is not a known field`
    case 'required': return `${where}/${String(params.missingProperty)} is required`
    case 'enum': return `${where} must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
    case 'const': return `${where} must be ${JSON.stringify(params.allowedValue)}`
    default: return `${where} ${error.message ?? 'is invalid'}`
  }
}
