/**
 * One suite per engine of the run. Suite names end in ` on pglite` / ` on postgres`: the summary
 * reporter counts tests per engine by them, and fails a file that ran nothing on an engine.
 */
import { describe, before, after } from 'node:test'
import type { Config } from '../../src/config.ts'
import type { Engine } from '../../src/db/database.ts'
import { buildTestApp, engines, type TestApp } from './app.ts'

type Title = string | ((engine: Engine) => string)

const nameOf = (title: Title, engine: Engine) => typeof title === 'function' ? title(engine) : `${title} on ${engine}`

/**
 * `describe(title on <engine>)` for each engine of the run (TEST_ENGINES), for suites that build
 * what they need themselves (their own database, two instances, a fake provider beside the app).
 * `options` are describe's, per engine (a suite that cannot mean anything on PGlite skips there).
 */
export function forEachEngine(title: Title, body: (engine: Engine) => void, options?: (engine: Engine) => { skip?: string | boolean }): void {
  for (const engine of engines) describe(nameOf(title, engine), options?.(engine) ?? {}, () => body(engine))
}

/**
 * A suite per engine with a test app on a fresh database (buildTestApp, `config` over its
 * defaults), built before the suite's own hooks and closed after them. `t` is filled in by the
 * first hook: read it inside hooks and tests, not while the suite is being declared.
 */
export function onEachEngine(title: Title, body: (t: TestApp, engine: Engine) => void): void
export function onEachEngine(title: Title, config: Partial<Config>, body: (t: TestApp, engine: Engine) => void): void
export function onEachEngine(title: Title, ...rest: [(t: TestApp, engine: Engine) => void] | [Partial<Config>, (t: TestApp, engine: Engine) => void]): void {
  const [config, body] = rest.length === 1 ? [{}, rest[0]] : rest
  forEachEngine(title, (engine) => {
    const t = {} as TestApp
    let built = false
    // Hooks run in the order they are registered: the app is built before the body's hooks
    // and closed after them (what they close, such as a second instance, may use its database).
    before(async () => { Object.assign(t, await buildTestApp(engine, config)); built = true })
    body(t, engine)
    after(async () => { if (built) await t.close() })
  })
}
