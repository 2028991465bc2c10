import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

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
 * Creates a new PGlite data directory (initdb) in a process of its own, when `pgdata` holds no
 * database yet. PGlite runs initdb in the process that opens the directory, in WebAssembly
 * instances whose memory is never given back: a server whose first start created its directory
 * idled at ~700 MB instead of ~250 MB until its next restart (bench/findings.md, "Issue 19").
 * The memory leaves with the process here; the server then opens a directory like any other.
 */
export async function initPgliteDataDir(pgdata: string): Promise<void> {
  if (fs.existsSync(path.join(pgdata, 'PG_VERSION'))) return
  fs.mkdirSync(pgdata, { recursive: true })
  const child = spawn(process.execPath, ['--input-type=module', '-e', INITDB, import.meta.resolve('@electric-sql/pglite'), pgdata], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-2000) })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (c) => resolve(c))
  })
  if (code !== 0) throw new Error(`DATA_DIR ${path.dirname(pgdata)}: the embedded database could not be created (initdb exited with ${code}): ${stderr.trim()}`)
}
