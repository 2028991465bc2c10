import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { CLIENT_TYPES, clientTypes } from '../../scripts/generate-client.ts'

/** The committed typed client (clients/typescript/schema.d.ts) is the one the document makes today. */
describe('the typed client', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp('pglite')
  })
  after(async () => {
    await t?.close()
  })

  it('is generated from the current /openapi.json', async () => {
    const fresh = await clientTypes(await t.json(200, { url: '/openapi.json', token: null }))
    const committed = fs.readFileSync(CLIENT_TYPES, 'utf8')
    assert.ok(
      committed === fresh,
      'clients/typescript/schema.d.ts is out of date with /openapi.json: run `npm run generate:client` and commit the result',
    )
    // The names a client program uses are there.
    for (const name of ['Company', 'Team', 'Contract', 'Communication', 'Error'])
      assert.match(committed, new RegExp(`\\n        ${name}: \\{`), `schema.d.ts has ${name}`)
  })
})
