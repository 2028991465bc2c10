import v8 from 'node:v8'
import type { Config } from './config.ts'

/**
 * V8 flags that trade some speed for memory, set from inside the process so that every way of
 * starting the server (`npm start`, the bench, the reliability suite, `node dist/server.js`) gets
 * them. Both are read by V8 while it runs, not only when it starts, which is why they can be set
 * here (the heap's size limits, `--max-semi-space-size` and the like, cannot: V8 fixes them before
 * any JavaScript runs). Measured in bench/findings.md ("PGlite's start, idle memory and peak memory"):
 *
 * - `--optimize-for-size`: V8 treats memory as scarce (its old generation grows by smaller steps and
 *   is given back sooner). Under the reliability suite's hostile input (bodies up to the spec's
 *   1 MiB, eight at a time) V8's heap had grown to 220 MB committed for 84 MB used; with this flag
 *   and the next the whole process peaks 305–330 MB instead of 439–464 MB.
 * - `--semi-space-growth-factor=1`: the young generation keeps its first size (2 MB in
 *   getHeapSpaceStatistics) instead of doubling up to 32 MB as allocation goes on; with the flag
 *   above, the idle server takes ~15 MB less.
 *
 * 'auto' turns them on for PGlite only: a server on PGlite is the small, single-instance setup the
 * memory targets are for; a server on PostgreSQL keeps V8's defaults (built for throughput).
 */
export const SMALL_HEAP_FLAGS = ['--optimize-for-size', '--semi-space-growth-factor=1'] as const

export function tuneV8ForMemory(config: Pick<Config, 'V8_SMALL_HEAP' | 'DATABASE_URL'>): boolean {
  const on = config.V8_SMALL_HEAP === 'on' || (config.V8_SMALL_HEAP === 'auto' && config.DATABASE_URL === undefined)
  if (on) for (const flag of SMALL_HEAP_FLAGS) v8.setFlagsFromString(flag)
  return on
}
