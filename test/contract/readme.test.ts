import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'

/** The README opens with the two commands, and its map leads to every guide and decision record. */
const root = new URL('../../', import.meta.url)
const readme = fs.readFileSync(new URL('README.md', root), 'utf8')

describe('the README', () => {
  it('shows `npm install && npm start` and `npm install && npm test` before anything else', () => {
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)![1]!
    assert.match(firstBlock, /^npm install && npm start\b/m)
    assert.match(firstBlock, /^npm install && npm test\b/m)
  })

  it('maps every guide of docs/ and every decision record of docs/adr/, and points to CHANGELOG.md and .env.example', () => {
    const guides = fs
      .readdirSync(new URL('docs/', root))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`)
    const records = fs
      .readdirSync(new URL('docs/adr/', root))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/adr/${f}`)
    const map = readme.slice(readme.indexOf('## Map of the docs'))
    assert.ok(readme.includes('## Map of the docs'), 'the README has its map of the docs')
    for (const page of [...guides, ...records]) assert.ok(map.includes(`(${page})`), `the map links ${page}`)
    for (const file of ['CHANGELOG.md', '.env.example'])
      assert.ok(readme.includes(`(${file})`), `the README links ${file}`)
  })

  it('says what an Idempotency-Key does', () => {
    const section = readme.slice(readme.indexOf('## Idempotency keys'))
    assert.ok(readme.includes('## Idempotency keys'))
    for (const fact of ['POST', 'PUT', '24 hours', 'Idempotent-Replayed: true', '409'])
      assert.ok(section.includes(fact), `the section says ${fact}`)
  })
})
