import v8 from 'node:v8'
import type { Config } from './config.ts'

/**
 * PGlite's WebAssembly would be mostly recompiled by TurboFan at start: a huge tiering budget keeps
 * only functions that stay hot for long recompiled, for a faster, smaller start (bench/README.md).
 * A test checks that the budget still takes effect.
 */
export const WASM_TIERING_FLAG = '--wasm-tiering-budget=2000000000'

/**
 * V8 flags trading some CPU for memory, set at run time so every way of starting gets them. 'auto'
 * turns them on for PGlite only, the small single-instance setup (bench/README.md).
 */
export const SMALL_HEAP_FLAGS = [
  '--heap-growing-percent=20',
  '--semi-space-growth-factor=1',
  WASM_TIERING_FLAG,
] as const

export function tuneV8ForMemory(config: Pick<Config, 'V8_SMALL_HEAP' | 'DATABASE_URL'>): boolean {
  const on = config.V8_SMALL_HEAP === 'on' || (config.V8_SMALL_HEAP === 'auto' && config.DATABASE_URL === undefined)
  if (on) for (const flag of SMALL_HEAP_FLAGS) v8.setFlagsFromString(flag)
  return on
}
