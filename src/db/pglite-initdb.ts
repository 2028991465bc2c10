import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { WASM_TIERING_FLAG } from '../v8-memory.ts'

// The short-lived process: PGlite runs initdb on the new directory, then closes.
const INITDB = `
const [url, dir] = process.argv.slice(1)
const { PGlite } = await import(url)
const db = await PGlite.create({ dataDir: dir })
await db.close()
`

// initdb runs PGlite's code once and exits, so TurboFan's recompilations are wasted: the tiering
// budget is always given (src/v8-memory.ts).
export function initdbArgs(directory: string): string[] {
  return [
    WASM_TIERING_FLAG,
    '--input-type=module',
    '-e',
    INITDB,
    import.meta.resolve('@electric-sql/pglite'),
    directory,
  ]
}

/**
 * Creates a PGlite data directory in a process of its own: initdb's WebAssembly memory is never
 * given back, and leaves here with the process.
 */
export async function initPgliteDataDir(pgdata: string): Promise<void> {
  if (fs.existsSync(path.join(pgdata, 'PG_VERSION'))) return
  const parent = path.dirname(pgdata)
  // A pgdata that is a file is refused here, naming EEXIST.
  fs.mkdirSync(pgdata, { recursive: true })
  // initdb writes PG_VERSION early, so it runs in a directory of its own, renamed to pgdata only once
  // complete; a leftover of a killed start is removed.
  const prefix = `${path.basename(pgdata)}.init-`
  for (const entry of fs.readdirSync(parent))
    if (entry.startsWith(prefix)) fs.rmSync(path.join(parent, entry), { recursive: true, force: true })
  const building = path.join(parent, `${prefix}${process.pid}`)
  fs.mkdirSync(building)
  const child = spawn(process.execPath, initdbArgs(building), {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-2000)
  })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (c) => resolve(c))
  })
  if (code !== 0) {
    fs.rmSync(building, { recursive: true, force: true })
    throw new Error(
      `DATA_DIR ${parent}: the embedded database could not be created (initdb exited with ${code}): ${stderr.trim()}`,
    )
  }
  // An empty pgdata is replaced; a non-empty one without PG_VERSION is not ours to delete.
  if (fs.existsSync(pgdata) && fs.readdirSync(pgdata).length === 0) fs.rmdirSync(pgdata)
  fs.renameSync(building, pgdata)
}
