import { execFileSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
let built = false

/**
 * What `npm start` runs: the bundle scripts/build.mjs makes in dist/, built once per process
 * (the bench and the reliability suite start the server many times). Returns its path.
 */
export function builtServer(): string {
  // BENCH_SERVER_BUNDLE: a bundle built earlier (a copy of dist/), to compare two builds in the same minutes.
  if (process.env.BENCH_SERVER_BUNDLE) return path.resolve(process.env.BENCH_SERVER_BUNDLE)
  if (!built) execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: 'pipe' })
  built = true
  return path.join(ROOT, 'dist/server.js')
}
