import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { envExample, loadConfig, SETTINGS } from '../src/config.ts'
import { ENV_EXAMPLE } from '../scripts/generate-env-example.ts'

/**
 * The committed .env.example is the one the settings' schema makes today (as the typed client is
 * the one the document makes): every setting, its default and a one-line description.
 */
describe('.env.example', () => {
  const committed = fs.existsSync(ENV_EXAMPLE) ? fs.readFileSync(ENV_EXAMPLE, 'utf8') : ''

  it('is generated from the current settings schema', () => {
    assert.ok(
      committed === envExample(),
      '.env.example is out of date with src/config.ts: run `npm run generate:env-example` and commit the result',
    )
  })

  it('names every setting once, with its default and a one-line description above it', () => {
    const names = Object.keys(SETTINGS)
    assert.ok(names.length >= 50, `${names.length} settings`)
    const defaults = loadConfig({}) as unknown as Record<string, unknown>
    const lines = committed.split('\n')
    for (const name of names) {
      const at = lines.findIndex((l) => l.startsWith(`# ${name}=`))
      assert.ok(at > 0, `${name} is in .env.example`)
      assert.equal(lines.filter((l) => l.startsWith(`# ${name}=`)).length, 1, `${name} once`)
      const value = lines[at]!.slice(`# ${name}=`.length)
      assert.equal(value, defaults[name] === undefined ? '' : String(defaults[name]), `${name} shows its default`)
      const description = lines[at - 1]!
      assert.match(description, /^# [A-Z`][^\n]{15,}$/, `${name} has a one-line description`)
      assert.ok(!description.startsWith(`# ${name}=`))
    }
    // Nothing else is set: a copy of the file changes no setting until a line is uncommented.
    assert.deepEqual(
      lines.filter((l) => l.trim() !== '' && !l.startsWith('#')),
      [],
    )
  })

  it('as an environment, is the defaults', () => {
    // Each line uncommented: the service starts with what it would without any.
    const env = Object.fromEntries(
      committed
        .split('\n')
        .filter((l) => /^# [A-Z0-9_]+=/.test(l))
        .map((l) => {
          const [name, ...rest] = l.slice(2).split('=')
          return [name!, rest.join('=')]
        }),
    )
    assert.deepEqual(loadConfig(env), loadConfig({}))
  })
})
