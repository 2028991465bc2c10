import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { initdbArgs } from '../src/db/pglite-initdb.ts'
import { WASM_TIERING_FLAG } from '../src/v8-memory.ts'

/**
 * src/v8-memory.ts sets V8 flags from inside the running process, which only works for flags V8
 * reads as it goes: a Node or V8 upgrade that freezes flags after start, or reads one of these only
 * at start, would quietly put the memory they save back onto a PGlite server's peak, or TurboFan's
 * time and memory back onto its start (docs/adr/0018-one-driver-and-a-bundled-start.md). Each
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
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
  })
  return JSON.parse(out.trim().split('\n').pop()!)
}

/**
 * Whether a small WebAssembly function, called five million times after the settings are applied,
 * was recompiled by TurboFan (V8's own test intrinsic, hence --allow-natives-syntax in that process
 * only). With V8's default budget it is; with WASM_TIERING_FLAG it stays on Liftoff.
 */
function tieredUp(settings: Record<string, string | undefined>, waitMs: number): { on: boolean; turbofan: boolean } {
  const script = `
    import { tuneV8ForMemory } from './src/v8-memory.ts'
    const on = tuneV8ForMemory(${JSON.stringify(settings)})
    // (func (export "f") (param i32) (result i32) local.get 0 i32.const 1 i32.add)
    const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 6, 1, 96, 1, 127, 1, 127, 3, 2, 1, 0, 7, 5, 1, 1, 102, 0, 0, 10, 9, 1, 7, 0, 32, 0, 65, 1, 106, 11])
    const { instance } = await WebAssembly.instantiate(bytes)
    const f = instance.exports.f
    for (let i = 0; i < 5e6; i++) f(i)
    // TurboFan compiles in the background: wait for it, up to ${waitMs} ms.
    const isTurboFan = new Function('f', 'return %IsTurboFanFunction(f)')
    let turbofan = isTurboFan(f)
    for (let waited = 0; !turbofan && waited < ${waitMs}; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      turbofan = isTurboFan(f)
    }
    console.log(JSON.stringify({ on, turbofan }))
  `
  const out = execFileSync(
    process.execPath,
    ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: ROOT, encoding: 'utf8' },
  )
  return JSON.parse(out.trim().split('\n').pop()!)
}

describe('V8 tuned for memory (src/v8-memory.ts)', () => {
  it('on PGlite (no DATABASE_URL) the young generation stays small: the flags take effect at run time', () => {
    const pglite = youngGenerationMb({ V8_SMALL_HEAP: 'auto' })
    assert.equal(pglite.on, true)
    // Node 20 and 22 report 1-4 MB, Node 24 (V8 13) 4-5.5 MB for the same flags, and once 10.5 MB
    // in CI (2026-11-28, the same process alone gave 4 MB sixteen times after); V8's defaults grow
    // it to 16 MB or more (the next test): 12 MB tells the two apart on every line.
    assert.ok(pglite.mb <= 12, `young generation ${pglite.mb} MB`)
  })

  it('on PostgreSQL, and when turned off, V8 keeps its defaults (the young generation grows)', () => {
    for (const settings of [
      { V8_SMALL_HEAP: 'auto', DATABASE_URL: 'postgres://x@127.0.0.1/x' },
      { V8_SMALL_HEAP: 'off' },
    ]) {
      const figure = youngGenerationMb(settings)
      assert.equal(figure.on, false)
      assert.ok(figure.mb >= 16, `young generation ${figure.mb} MB with ${JSON.stringify(settings)}`)
    }
    assert.equal(youngGenerationMb({ V8_SMALL_HEAP: 'on', DATABASE_URL: 'postgres://x@127.0.0.1/x' }).on, true)
  })

  it('on PGlite a hot WebAssembly function stays on Liftoff; with V8 defaults TurboFan recompiles it', () => {
    // A recompilation asked for ends within milliseconds, even on a busy machine: 1 s shows none
    // was asked for; the one expected gets 10 s.
    assert.deepEqual(tieredUp({ V8_SMALL_HEAP: 'auto' }, 1000), { on: true, turbofan: false })
    assert.deepEqual(tieredUp({ V8_SMALL_HEAP: 'off' }, 10_000), { on: false, turbofan: true })
  })

  it('the initdb process of a new data directory runs with the tiering budget too', () => {
    const args = initdbArgs('/data/pgdata.init-1')
    // A flag for node itself, before the code: after `-e` it would be an argument of the script.
    assert.equal(args[0], WASM_TIERING_FLAG)
    assert.ok(args.indexOf(WASM_TIERING_FLAG) < args.indexOf('-e'))
    assert.equal(args.at(-1), '/data/pgdata.init-1')
  })

  it('src/server.ts sets them before buildApp, which imports and boots PGlite', () => {
    const source = fs.readFileSync(path.join(ROOT, 'src/server.ts'), 'utf8')
    const tuned = source.indexOf('tuneV8ForMemory(config)')
    assert.ok(tuned > 0 && tuned < source.indexOf('await buildApp('))
  })
})
