import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { finishDocument } from '../../src/http/openapi-document.ts'
import { ERROR_CODES } from '../../src/core/errors.ts'

/**
 * The contract as a client generator and a reader of /docs see it (docs/api-contract.md):
 * named shapes, an example on every body and success, a description on every operation.
 * The document does not depend on the engine: one app on PGlite reads it.
 */

type Schema = Record<string, any>
type Operation = {
  operationId: string
  description?: string
  security?: Array<Record<string, string[]>>
  requestBody?: { content: Record<string, Schema> }
  responses: Record<string, Schema>
}
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const

function operations(doc: Schema) {
  return Object.entries(doc.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({
      where: `${method.toUpperCase()} ${path}`,
      method,
      op: item[method]!,
    })),
  )
}

/** Every schema node under `schema`, with its JSON path. */
function* nodes(schema: unknown, at: string): Generator<[Schema, string]> {
  if (!schema || typeof schema !== 'object') return
  if (Array.isArray(schema)) {
    for (const [i, s] of schema.entries()) yield* nodes(s, `${at}/${i}`)
    return
  }
  yield [schema as Schema, at]
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'examples' || key === 'example' || key === 'enum' || key === 'const' || key === 'default') continue
    if (key === 'properties' || key === 'patternProperties' || key === '$defs') {
      for (const [name, s] of Object.entries(value as Record<string, unknown>)) yield* nodes(s, `${at}/${key}/${name}`)
    } else if (typeof value === 'object') yield* nodes(value, `${at}/${key}`)
  }
}

describe('OpenAPI shapes, examples and descriptions', () => {
  let t: TestApp
  let doc: Schema
  before(async () => {
    t = await buildTestApp('pglite')
    doc = await t.json(200, { url: '/openapi.json', token: null })
  })
  after(async () => {
    await t?.close()
  })

  it('names the shapes of the specification under components.schemas', () => {
    const names = Object.keys(doc.components.schemas)
    for (const name of [
      'Company',
      'Subsidiary',
      'Contract',
      'Team',
      'TeamMember',
      'Holiday',
      'Communication',
      'CommunicationMessage',
      'Plan',
      'Product',
      'Addon',
      'Coupon',
      'SubscriptionDetails',
      'Estimate',
      'Error',
      'TeamInput',
      'CompanyInput',
    ]) {
      assert.ok(names.includes(name), `components.schemas has ${name}`)
    }
  })

  it('inlines no titled shape: every one is a $ref to its component', () => {
    const inlined: string[] = []
    for (const { where, op } of operations(doc)) {
      for (const [node, at] of nodes(op, where))
        if (typeof node.title === 'string') inlined.push(`${at} (${node.title})`)
    }
    for (const [name, schema] of Object.entries(doc.components.schemas as Record<string, Schema>)) {
      for (const [node, at] of nodes(schema, name))
        if (node !== schema && typeof node.title === 'string') inlined.push(`${at} (${node.title})`)
    }
    assert.deepEqual(inlined, [])
  })

  it('refuses two different shapes under one title', () => {
    const shape = (type: string) => ({ type: 'object', title: 'Twin', properties: { a: { type } } })
    const twoUses = (a: Schema, b: Schema) => ({
      paths: {
        '/x': {
          get: { responses: { 200: { content: { 'application/json': { schema: a } } } } },
          post: { requestBody: { content: { 'application/json': { schema: b } } }, responses: {} },
        },
      },
    })
    assert.throws(
      () => finishDocument(twoUses(shape('string'), shape('integer'))),
      /two different shapes are both titled "Twin"/,
    )
    // The same shape twice, even with another description, is one component.
    const same = finishDocument(twoUses(shape('string'), { ...shape('string'), description: 'the body' }))
    assert.deepEqual(Object.keys(same.components.schemas), ['Twin'])
  })

  it('describes every operation: what it does and who may call it', () => {
    const missing = operations(doc)
      .filter(({ op }) => !/\S[\s\S]*\*\*Who may call:\*\* \S/.test(op.description ?? ''))
      .map(({ where }) => where)
    assert.deepEqual(missing, [])
  })

  it('gives every request body and every 2xx answer with a body an example that its schema accepts', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, formats: { binary: true } })
    addFormats.default(ajv)
    ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc')
    const problems: string[] = []
    const check = (where: string, media: Schema) => {
      const example =
        'example' in media
          ? media.example
          : Object.values((media.examples ?? {}) as Record<string, { value: unknown }>)[0]?.value
      if (example === undefined) return problems.push(`${where}: no example`)
      const schema = JSON.parse(JSON.stringify(media.schema).replaceAll('"#/components/', '"doc#/components/'))
      if (!ajv.validate(schema, example)) problems.push(`${where}: ${ajv.errorsText(ajv.errors)}`)
    }
    for (const { where, op } of operations(doc)) {
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) check(`${where} body ${type}`, media)
      for (const [status, response] of Object.entries(op.responses)) {
        if (!/^2/.test(status)) continue
        for (const [type, media] of Object.entries((response.content ?? {}) as Record<string, Schema>))
          check(`${where} ${status} ${type}`, media)
      }
    }
    assert.deepEqual(problems, [])
  })

  it('documents Location on every answer that creates something', () => {
    for (const { where, method, op } of operations(doc)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (status === '201' || (status === '202' && method === 'post'))
          assert.ok(response.headers?.Location?.required, `${where} ${status} documents Location`)
      }
    }
  })

  it('lists every error code the handler can produce as the enum of Error.code', () => {
    assert.deepEqual(doc.components.schemas.Error.properties.code.enum, [...ERROR_CODES])
  })

  it('marks the routes that look at no token `security: []`, and has a server', () => {
    const open = Object.fromEntries(
      operations(doc)
        .filter(({ op }) => Array.isArray(op.security) && op.security.length === 0)
        .map(({ op }) => [op.operationId, true]),
    )
    for (const id of ['health', 'ready', 'metrics', 'issueToken', 'getJwks'])
      assert.ok(open[id], `${id} has security: []`)
    assert.ok(doc.servers.length > 0 && doc.servers.every((s: { url: string }) => s.url.length > 0))
  })
})
