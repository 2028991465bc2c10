import { execFileSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
let built = false

/** The bundle `npm start` runs (scripts/build.mjs), built once per process; returns its path. */
export function builtServer(): string {
  // A bundle built earlier, to compare two builds in the same minutes.
  if (process.env.BENCH_SERVER_BUNDLE) return path.resolve(process.env.BENCH_SERVER_BUNDLE)
  if (!built) execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: 'pipe' })
  built = true
  return path.join(ROOT, 'dist/server.js')
}
