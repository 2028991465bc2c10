import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { WASM_TIERING_FLAG } from '../v8-memory.ts'

/**
 * The code of the short-lived process: PGlite on the new directory runs initdb (in a second
 * WebAssembly instance of its own), then closes. Arguments: PGlite's module URL, the directory.
 */
const INITDB = `
const [url, dir] = process.argv.slice(1)
const { PGlite } = await import(url)
const db = await PGlite.create({ dataDir: dir })
await db.close()
`

/**
 * The initdb process's arguments for `node`. initdb runs PGlite's code once and exits: TurboFan's
 * recompilations (src/v8-memory.ts) were a third of its time (7.7–8.7 s against 5.4–6.4 s on one
 * core), and its process gains nothing from them later. So the tiering budget is always given,
 * whatever V8_SMALL_HEAP says: this process keeps nothing.
 */
export function initdbArgs(directory: string): string[] {
  return [WASM_TIERING_FLAG, '--input-type=module', '-e', INITDB, import.meta.resolve('@electric-sql/pglite'), directory]
}

/**
 * Creates a new PGlite data directory (initdb) in a process of its own, when `pgdata` holds no
 * database yet. PGlite runs initdb in the process that opens the directory, in WebAssembly
 * instances whose memory is never given back: a server whose first start created its directory
 * idled at ~700 MB instead of ~250 MB until its next restart (bench/findings.md, "Issue 19").
 * The memory leaves with the process here; the server then opens a directory like any other.
 */
export async function initPgliteDataDir(pgdata: string): Promise<void> {
  if (fs.existsSync(path.join(pgdata, 'PG_VERSION'))) return
  const parent = path.dirname(pgdata)
  // Made (or found) first: a pgdata that is a file is refused here, naming EEXIST.
  fs.mkdirSync(pgdata, { recursive: true })
  // initdb writes PG_VERSION early: a process killed during it would leave a half-made pgdata
  // that the next start opens as a database. So it runs in a directory of its own, renamed to
  // pgdata only once complete; a leftover of a killed start is removed here.
  const prefix = `${path.basename(pgdata)}.init-`
  for (const entry of fs.readdirSync(parent)) if (entry.startsWith(prefix)) fs.rmSync(path.join(parent, entry), { recursive: true, force: true })
  const building = path.join(parent, `${prefix}${process.pid}`)
  fs.mkdirSync(building)
  const child = spawn(process.execPath, initdbArgs(building), {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-2000) })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (c) => resolve(c))
  })
  if (code !== 0) {
    fs.rmSync(building, { recursive: true, force: true })
    throw new Error(`DATA_DIR ${parent}: the embedded database could not be created (initdb exited with ${code}): ${stderr.trim()}`)
  }
  // An empty pgdata (made by hand, or by an earlier version) is replaced; a non-empty one with no
  // PG_VERSION is not ours to delete: the rename fails and says so.
  if (fs.existsSync(pgdata) && fs.readdirSync(pgdata).length === 0) fs.rmdirSync(pgdata)
  fs.renameSync(building, pgdata)
}
