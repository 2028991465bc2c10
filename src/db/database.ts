import fs from 'node:fs'
import path from 'node:path'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { PGlite } from '@electric-sql/pglite'
import { PGliteDialect } from './pglite-dialect.ts'
import type { DB } from './tables.ts'

export type Engine = 'postgres' | 'pglite'

export interface Database {
  db: Kysely<DB>
  engine: Engine
  /** Subscribes to a NOTIFY channel (PostgreSQL only: PGlite is one process, nothing to hear). */
  listen(channel: string, onMessage: (payload: string) => void): Promise<void>
  close(): Promise<void>
}

const DATE_OID = 1082
const INT8_OID = 20

// Days stay 'YYYY-MM-DD' strings (a Date would shift them by the process time zone), and
// counts (bigint) become numbers: no table holds more than 2^53 rows.
pg.types.setTypeParser(DATE_OID, (v) => v)
pg.types.setTypeParser(INT8_OID, (v) => Number(v))
const pgliteParsers = { [DATE_OID]: (v: string) => v, [INT8_OID]: (v: string) => Number(v) }

export interface DatabaseOptions {
  databaseUrl?: string
  dataDir?: string
  poolSize?: number
  /** An in-memory PGlite started from a dumped data directory (tests). */
  pgliteDump?: Blob
}

export async function createDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl) return createPostgres(options.databaseUrl, options.poolSize ?? 10)
  return createPglite(options)
}

function createPostgres(connectionString: string, max: number): Database {
  const pool = new pg.Pool({ connectionString, max, idleTimeoutMillis: 30_000, connectionTimeoutMillis: 5_000 })
  // An idle client that loses its server emits 'error'; without a listener the process dies.
  pool.on('error', () => {})
  const listeners: pg.Client[] = []
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) })
  // Closing twice (the app on shutdown, then its owner) is harmless.
  let closed = false
  return {
    db,
    engine: 'postgres',
    async listen(channel, onMessage) {
      const client = new pg.Client({ connectionString })
      client.on('error', () => {})
      client.on('notification', (n) => { if (n.channel === channel) onMessage(n.payload ?? '') })
      await client.connect()
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
      listeners.push(client)
    },
    async close() {
      if (closed) return
      closed = true
      await Promise.all(listeners.map((c) => c.end().catch(() => {})))
      await db.destroy()
    },
  }
}

async function createPglite(options: DatabaseOptions): Promise<Database> {
  let release = () => {}
  let pglite: PGlite
  if (options.pgliteDump) {
    pglite = new PGlite({ loadDataDir: options.pgliteDump, parsers: pgliteParsers })
  } else {
    const dataDir = path.resolve(options.dataDir ?? './data')
    fs.mkdirSync(dataDir, { recursive: true })
    release = takeLock(path.join(dataDir, '.lock'))
    pglite = new PGlite({ dataDir: path.join(dataDir, 'pgdata'), parsers: pgliteParsers })
  }
  try {
    await pglite.waitReady
  } catch (err) {
    release()
    throw err
  }
  const db = new Kysely<DB>({ dialect: new PGliteDialect(pglite) })
  let closed = false
  return {
    db,
    engine: 'pglite',
    async listen() {},
    async close() {
      if (closed) return
      closed = true
      await db.destroy()
      await pglite.close()
      release()
    },
  }
}

/**
 * PGlite has no guard against two processes opening one data directory, which corrupts it.
 * The lock file holds the owner's pid; a lock whose process is gone (kill -9) is taken over.
 */
function takeLock(file: string): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' })
      return () => { try { fs.unlinkSync(file) } catch { /* already gone */ } }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const owner = Number(fs.readFileSync(file, 'utf8'))
      if (owner && owner !== process.pid && isAlive(owner)) {
        throw new Error(`The data directory ${path.dirname(file)} is in use by process ${owner}; stop it, or set DATA_DIR to another directory.`)
      }
      fs.unlinkSync(file)
    }
  }
  throw new Error(`Could not lock the data directory ${path.dirname(file)}`)
}

function isAlive(pid: number): boolean {
  try { process.kill(pid, 0); return true } catch (err) { return (err as NodeJS.ErrnoException).code === 'EPERM' }
}
