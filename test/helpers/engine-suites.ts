/**
 * One suite per engine of the run. Suite names end in ` on pglite` / ` on postgres`: the summary
 * reporter counts tests per engine by them, and fails a file that ran nothing on an engine.
 */
import { describe, before, after } from 'node:test'
import type { Config } from '../../src/config.ts'
import type { Engine } from '../../src/db/database.ts'
import { buildTestApp, engines, type TestApp } from './app.ts'

type Title = string | ((engine: Engine) => string)

const nameOf = (title: Title, engine: Engine) => (typeof title === 'function' ? title(engine) : `${title} on ${engine}`)

/**
 * `describe(title on <engine>)` for each engine of the run (TEST_ENGINES), for suites that build
 * what they need themselves (their own database, two instances, a fake provider beside the app).
 * `options` are describe's, per engine (a suite that cannot mean anything on PGlite skips there).
 */
export function forEachEngine(
  title: Title,
  body: (engine: Engine) => void,
  options?: (engine: Engine) => { skip?: string | boolean },
): void {
  const describeHere = describeIn(callerFile())
  for (const engine of engines) describeHere(nameOf(title, engine), options?.(engine) ?? {}, () => body(engine))
}

type Describe = (name: string, options: { skip?: string | boolean }, fn: () => void) => void
const shims = new Map<string, Describe>()

/**
 * node:test gives a suite the file of the code that calls describe. Called from here, every
 * suite would belong to this helper, and the summary reporter, which counts tests per file and
 * engine, would find no engine in the test files. So describe is called through a one-line
 * function whose source is named after the test file (V8's sourceURL), once per file.
 */
function describeIn(file: string): Describe {
  let shim = shims.get(file)
  if (!shim) {
    shim = new Function('describe', `return (name, options, fn) => describe(name, options, fn)\n//# sourceURL=${file}`)(
      describe,
    ) as Describe
    shims.set(file, shim)
  }
  return shim
}

/** The file of the first stack frame outside this helper: the test file declaring the suites. */
function callerFile(): string {
  const here = new URL(import.meta.url).pathname
  for (const line of new Error().stack!.split('\n').slice(1)) {
    const file = /\(?((?:file:\/\/)?\/[^()]*?):\d+:\d+\)?$/.exec(line)?.[1]
    if (file && !file.endsWith(here)) return file
  }
  throw new Error('forEachEngine: no caller outside test/helpers/engine-suites.ts')
}

/**
 * A suite per engine with a test app on a fresh database (buildTestApp, `config` over its
 * defaults), built before the suite's own hooks and closed after them. `t` is filled in by the
 * first hook: read it inside hooks and tests, not while the suite is being declared.
 */
export function onEachEngine(title: Title, body: (t: TestApp, engine: Engine) => void): void
export function onEachEngine(title: Title, config: Partial<Config>, body: (t: TestApp, engine: Engine) => void): void
export function onEachEngine(
  title: Title,
  ...rest: [(t: TestApp, engine: Engine) => void] | [Partial<Config>, (t: TestApp, engine: Engine) => void]
): void {
  const [config, body] = rest.length === 1 ? [{}, rest[0]] : rest
  forEachEngine(title, (engine) => {
    const t = {} as TestApp
    let built = false
    // Hooks run in the order they are registered: the app is built before the body's hooks
    // and closed after them (what they close, such as a second instance, may use its database).
    before(async () => {
      Object.assign(t, await buildTestApp(engine, config))
      built = true
    })
    body(t, engine)
    after(async () => {
      if (built) await t.close()
    })
  })
}
