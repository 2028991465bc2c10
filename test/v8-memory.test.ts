import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

/**
 * src/v8-memory.ts sets V8 flags from inside the running process, which only works for flags V8
 * reads as it goes: a Node or V8 upgrade that freezes flags after start, or reads one of these only
 * at start, would quietly take ~100 MB back onto a PGlite server's peak (bench/findings.md). Each
 * case runs in a process of its own, as the server does, so this test's process keeps its flags.
 */
const ROOT = path.resolve(import.meta.dirname, '..')

/** The young generation's size (MB) after allocating ~100 MB of short-lived objects, with the settings given. */
function youngGenerationMb(settings: Record<string, string | undefined>): { on: boolean; mb: number } {
  const script = `
    import v8 from 'node:v8'
    import { tuneV8ForMemory } from './src/v8-memory.ts'
    const on = tuneV8ForMemory(${JSON.stringify(settings)})
    let kept = []
    for (let i = 0; i < 2e6; i++) { kept.push({ i, s: 'x' + i }); if (kept.length > 50000) kept = [] }
    const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size
    console.log(JSON.stringify({ on, mb: young / 1048576 }))
  `
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' })
  return JSON.parse(out.trim().split('\n').pop()!)
}

describe('V8 tuned for memory (src/v8-memory.ts)', () => {
  it('on PGlite (no DATABASE_URL) the young generation stays small: the flags take effect at run time', () => {
    const pglite = youngGenerationMb({ V8_SMALL_HEAP: 'auto' })
    assert.equal(pglite.on, true)
    // Node 20 and 22 report 1-4 MB, Node 24 (V8 13) 4-5.5 MB for the same flags; V8's defaults
    // grow it to 16 MB or more (the next test): 8 MB tells the two apart on every line.
    assert.ok(pglite.mb <= 8, `young generation ${pglite.mb} MB`)
  })

  it('on PostgreSQL, and when turned off, V8 keeps its defaults (the young generation grows)', () => {
    for (const settings of [{ V8_SMALL_HEAP: 'auto', DATABASE_URL: 'postgres://x@127.0.0.1/x' }, { V8_SMALL_HEAP: 'off' }]) {
      const figure = youngGenerationMb(settings)
      assert.equal(figure.on, false)
      assert.ok(figure.mb >= 16, `young generation ${figure.mb} MB with ${JSON.stringify(settings)}`)
    }
    assert.equal(youngGenerationMb({ V8_SMALL_HEAP: 'on', DATABASE_URL: 'postgres://x@127.0.0.1/x' }).on, true)
  })

  it('src/server.ts sets them before buildApp, which imports and boots PGlite', () => {
    const source = fs.readFileSync(path.join(ROOT, 'src/server.ts'), 'utf8')
    const tuned = source.indexOf('tuneV8ForMemory(config)')
    assert.ok(tuned > 0 && tuned < source.indexOf('await buildApp('))
  })
})
