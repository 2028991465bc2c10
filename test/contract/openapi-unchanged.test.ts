import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { OPENAPI_STRUCTURE, openapiStructure } from '../../scripts/openapi-structure.ts'

/**
 * The shape of /openapi.json (paths, methods, parameters, schemas, status codes, security) is the
 * committed snapshot: moving code around changes no contract. Prose may change; a deliberate change
 * of the contract regenerates the snapshot with `node --import tsx scripts/openapi-structure.ts`.
 */
describe('the structure of /openapi.json', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp('pglite')
  })
  after(async () => {
    await t?.close()
  })

  it('is the committed snapshot', async () => {
    const fresh = openapiStructure(await t.json(200, { url: '/openapi.json', token: null }))
    const committed = JSON.parse(fs.readFileSync(OPENAPI_STRUCTURE, 'utf8'))
    assert.deepStrictEqual(
      fresh,
      committed,
      'the structure of /openapi.json changed: paths, methods, parameters, schemas or status codes differ from test/contract/openapi-structure.json',
    )
  })

  it('keeps a property named like an annotation', () => {
    const doc = {
      info: { title: 'x' },
      components: {
        schemas: { A: { description: 'prose', properties: { description: { type: 'string', description: 'prose' } } } },
      },
    }
    assert.deepStrictEqual(openapiStructure(doc), {
      components: { schemas: { A: { properties: { description: { type: 'string' } } } } },
    })
  })
})
