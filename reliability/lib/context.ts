import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Cluster } from './cluster.ts'
import type { EngineName, Store } from './server.ts'

export interface Context {
  engine: EngineName
  cluster: Cluster
  /** A fresh, empty store of the engine: a database of the private cluster, or a PGlite directory. */
  store(): Store
  /** Scales a count or duration (RELIABILITY_SCALE: 1 for the documented ones, smaller while developing), never below `min`. */
  scaled(full: number, min?: number): number
}

export interface Result {
  pass: boolean
  /** Figures for the report: what was measured. */
  figures: Record<string, string | number>
  /** What failed, or what the reader should know. */
  notes: string[]
}

export interface Scenario {
  id: number
  title: string
  engines: EngineName[]
  run(ctx: Context): Promise<Result>
}

let stores = 0
export function makeContext(engine: EngineName, scale: number, cluster: Cluster, scratch: string): Context {
  return {
    engine,
    cluster,
    store() {
      stores++
      if (engine === 'postgres') return { engine, url: cluster.createDatabase(`rel_${process.pid}_${stores}`) }
      const dataDir = path.join(scratch, `pglite-${stores}`)
      fs.mkdirSync(dataDir, { recursive: true })
      return { engine, dataDir }
    },
    scaled: (full, min = 1) => Math.max(min, Math.round(full * scale)),
  }
}

export function scratchDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'reliability-'))
}

/** Collects checks: each failed one becomes a note and fails the scenario. */
export function checks() {
  const notes: string[] = []
  let pass = true
  return {
    notes,
    check(ok: boolean, what: string) {
      if (!ok) {
        pass = false
        notes.push(`FAILED: ${what}`)
      }
      return ok
    },
    get pass() {
      return pass
    },
  }
}

/** Answer statuses and their counts, in status order: `200×3 409×1`. */
export function fmt(m: Map<number, number>) {
  return [...m]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}×${n}`)
    .join(' ')
}

/** The middle value (the upper one of an even count); undefined for none. */
export function median(values: number[]): number | undefined {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}
