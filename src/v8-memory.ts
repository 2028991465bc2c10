import v8 from 'node:v8'
import type { Config } from './config.ts'

/**
 * PGlite's PostgreSQL is a large WebAssembly module. V8 first compiles each of its functions with
 * its baseline compiler (Liftoff) and recompiles with its optimizing one (TurboFan) every function
 * that has run `--wasm-tiering-budget` (1,800,000 by default, roughly bytes of code executed).
 * PGlite's own boot and the first queries reach that for hundreds of functions, so a server's
 * start was mostly TurboFan: in the bench 2.8 s to /ready and 216 MB idle, against 1.4–1.5 s
 * and 173–192 MB with the budget below, where only a function that stays hot for long is recompiled
 * (bench/findings.md, "PGlite's WebAssembly tiering"). What it costs: a query through PGlite
 * takes ~10–25 % more CPU until its functions are recompiled. The flag holds for every
 * WebAssembly module of the process, PGlite's and undici's HTTP parser (the webhook sender's)
 * alike; the parser's share of a delivery is small. The budget is read at run time on Node 20,
 * 22 and 24; `--liftoff-only`, which would forbid TurboFan altogether, is not (Node 24 ignores it
 * once started), and a test checks that the budget still takes effect.
 */
export const WASM_TIERING_FLAG = '--wasm-tiering-budget=2000000000'

/**
 * V8 flags that trade some speed for memory, set from inside the process so that every way of
 * starting the server (`npm start`, the bench, the reliability suite, `node dist/server.js`) gets
 * them. All three are read by V8 while it runs, not only when it starts, which is why they can be set
 * here (the heap's size limits, `--max-semi-space-size` and the like, cannot: V8 fixes them before
 * any JavaScript runs). Measured in bench/findings.md ("PGlite's start, idle memory and peak memory"):
 *
 * - `--heap-growing-percent=20`: after each full collection the old generation may grow to 1.2 ×
 *   what survived before the next one, instead of V8's own factor (up to 4 × when the collections
 *   are cheap). Under the reliability suite's hostile input (bodies up to the spec's 1 MiB, eight
 *   at a time) V8's heap had grown to 220 MB committed for 84 MB used; with this flag and the next
 *   the whole process peaks at ~300 MB instead of 439–464 MB.
 * - `--semi-space-growth-factor=1`: the young generation keeps its first size (2 MB in
 *   getHeapSpaceStatistics) instead of doubling up to 32 MB as allocation goes on.
 * - WASM_TIERING_FLAG (above): PGlite's code is recompiled by TurboFan only where it stays hot.
 *
 * The first two cost some CPU where requests make much garbage (more, smaller collections): about +5 % per
 * read through PGlite, +10–15 % per 40 KB body refused by validation, up to +40 % on the lightest
 * read served from the read cache in one bench run (bench/findings.md). `--optimize-for-size` took as much off the peak
 * (and ~10 MB more off the idle process) but cost +30 % per read, so it is not used.
 *
 * 'auto' turns them on for PGlite only: a server on PGlite is the small, single-instance setup the
 * memory targets are for; a server on PostgreSQL keeps V8's defaults (built for throughput).
 */
export const SMALL_HEAP_FLAGS = ['--heap-growing-percent=20', '--semi-space-growth-factor=1', WASM_TIERING_FLAG] as const

export function tuneV8ForMemory(config: Pick<Config, 'V8_SMALL_HEAP' | 'DATABASE_URL'>): boolean {
  const on = config.V8_SMALL_HEAP === 'on' || (config.V8_SMALL_HEAP === 'auto' && config.DATABASE_URL === undefined)
  if (on) for (const flag of SMALL_HEAP_FLAGS) v8.setFlagsFromString(flag)
  return on
}
