import fs from 'node:fs'
import path from 'node:path'
import { AsyncLocalStorage } from 'node:async_hooks'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { PGlite } from '@electric-sql/pglite'
import type { DB } from './tables.ts'
import { initPgliteDataDir } from './pglite-initdb.ts'
import { outsideRequestScope, pin, pinnedBorrow, type RequestTransaction } from './request-transaction.ts'

export type Engine = 'postgres' | 'pglite'

export interface Database {
  db: Kysely<DB>
  engine: Engine
  /**
   * Subscribes to a NOTIFY channel. `onListening(false)` says notifications may be missed from
   * now on (the LISTEN connection is lost), `onListening(true)` that they are heard again.
   */
  listen(channel: string, onMessage: (payload: string) => void, onListening?: (listening: boolean) => void): Promise<void>
  /**
   * Begins a transaction that every statement of the current request joins from now on, on any
   * Kysely instance of this database (request-transaction.ts); `settings` run right after BEGIN.
   */
  requestTransaction(settings?: string[]): Promise<RequestTransaction>
  /**
   * Calls `handler` with the changes this process's own work made to the tables cached reads
   * show, as their triggers told the writing connection (migration 0047), once that work has
   * ended: when its connection goes back to the pool, after the commit. A change named and then
   * rolled back is handed over too; it costs a forgotten answer, nothing more.
   */
  onChangesWritten(handler: (changes: string[]) => void): void
  /** The pool's connections now, for the metrics. */
  poolStats(): { total: number; idle: number; waiting: number }
  close(): Promise<void>
}

/**
 * In the service's sessions the tables' triggers tell the writing connection what each statement
 * changed, and the service announces it once the work has committed (migration 0047 says why);
 * in everyone else's they NOTIFY at commit. Every session's changes, the service's included, are
 * also recorded by their own commit in `company_changes` (migration 0010), which every instance
 * reads: a change whose writer died before announcing it is heard that way.
 */
export const ANNOUNCE_SETTING = 'company_admin.announce'
// Notices must reach the service whatever the role's or the database's default: they carry what
// each statement changed (migration 0047), and a setting sent at connection start overrides both.
const SESSION_OPTIONS = `-c ${ANNOUNCE_SETTING}=after_commit -c client_min_messages=notice`
/** The message of the triggers' notices that name a statement's changes (migration 0047). */
const CHANGES_NOTICE = 'company_changed'

const DATE_OID = 1082
const INT8_OID = 20

// Days stay 'YYYY-MM-DD' strings (a Date would shift them by the process time zone), and
// counts (bigint) become numbers: no table holds more than 2^53 rows. On both engines: PGlite's
// rows come through pg too (createPglite).
pg.types.setTypeParser(DATE_OID, (v) => v)
pg.types.setTypeParser(INT8_OID, (v) => Number(v))

export interface DatabaseOptions {
  databaseUrl?: string
  dataDir?: string
  poolSize?: number
  /**
   * PostgreSQL only: how long one statement may run (the server's `statement_timeout`), how long
   * a connection of the pool is waited for, and, NETWORK_GRACE_MS more, how long this process
   * waits for a statement's answer before it gives the connection up. Default 5,000.
   */
  statementTimeoutMs?: number
  /** An in-memory PGlite started from a dumped data directory (tests). */
  pgliteDump?: Blob
}

export async function createDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl) return createPostgres(options.databaseUrl, options.poolSize ?? 10, options.statementTimeoutMs ?? 5_000)
  return createPglite(options)
}

/**
 * The server cancels a statement past its bound and answers with an error, on a connection that
 * stays usable; this process gives a statement up only this much later, when no answer came at
 * all (a network that holds bytes without failing), and then closes its connection.
 */
const NETWORK_GRACE_MS = 1_000
/** TCP keepalive on every connection: a peer that vanished is noticed on an idle connection too. */
const KEEPALIVE_DELAY_MS = 10_000

const statementBound = new AsyncLocalStorage<number>()

/**
 * Runs `work` with another bound on its statements than the pool's (0: none): migrations, the
 * scheduler's jobs. This bounds how long this process waits for an answer; the work sets the
 * server's own (`statement_timeout`) in its transactions, since a connection of the pool keeps
 * the pool's.
 */
export function withStatementTimeout<T>(ms: number, work: () => T): T {
  return statementBound.run(ms, work)
}

/** How long this process waits for a statement's answer in the current scope, 0 for ever. */
function answerWaitMs(poolBoundMs: number): number {
  const ms = statementBound.getStore() ?? poolBoundMs
  return ms > 0 ? ms + NETWORK_GRACE_MS : 0
}

/** Whether `err` is pg's own "no answer in time" (query_timeout), after which the connection's state is unknown. */
function isAnswerTimeout(err: unknown): boolean {
  return (err as Error | undefined)?.message === 'Query read timeout'
}

/** Closes a connection whose answer never came: its protocol state is unknown, so it is never reused. */
function abandonConnection(client: pg.ClientBase) {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
}

/** host:port/database of a URL, without its credentials, for a sentence an operator reads. */
function serverOf(connectionString: string): string {
  try {
    const url = new URL(connectionString)
    return `${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname}`
  } catch {
    return '(unparsable URL)'
  }
}

async function createPostgres(connectionString: string, max: number, statementTimeoutMs: number): Promise<Database> {
  // connectionTimeoutMillis bounds both a new connection and the wait for a free one.
  const pool = new pg.Pool({
    connectionString, max, idleTimeoutMillis: 30_000, connectionTimeoutMillis: statementTimeoutMs, options: SESSION_OPTIONS,
    statement_timeout: statementTimeoutMs, keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  })
  keepErrorsQuiet(pool)
  // One connection first, so that a wrong host, port, password or database stops the start with
  // a sentence naming the setting rather than a bare ECONNREFUSED from the first migration.
  try {
    (await pool.connect()).release()
  } catch (err) {
    await pool.end().catch(() => {})
    throw new Error(`Could not connect to the PostgreSQL server of DATABASE_URL (${serverOf(connectionString)}): ${(err as Error).message}`)
  }
  const listeners: pg.Client[] = []
  const written = changesWritten()
  const pooled = preparingPool(pool, MAX_NAMED.postgres, written.handOver, () => answerWaitMs(statementTimeoutMs))
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: pooled }) })
  // Closing twice (the app on shutdown, then its owner) is harmless.
  let closed = false
  return {
    db,
    engine: 'postgres',
    /**
     * A LISTEN connection that the server drops (a restart, a failover, a killed backend) is
     * opened again, with a growing delay while the server is away. Notifications sent meanwhile
     * are lost, so once back it calls onMessage('') ("forget everything").
     */
    async listen(channel, onMessage, onListening) {
      let attempt = 0
      const reconnectLater = () => {
        if (closed) return
        // Short: while it is away, caches that rely on it ask the database instead (read-cache.ts, oauth.access.ts).
        const delay = Math.min(1_000, 100 * 2 ** attempt++)
        setTimeout(() => {
          if (closed) return
          open().then(() => { attempt = 0; onMessage(''); onListening?.(true) }, reconnectLater)
        }, delay).unref()
      }
      const open = async () => {
        const client = new pg.Client({
          connectionString, connectionTimeoutMillis: statementTimeoutMs, query_timeout: statementTimeoutMs + NETWORK_GRACE_MS,
          keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
        })
        client.on('error', () => {})
        client.on('notification', (n) => { if (n.channel === channel) onMessage(n.payload ?? '') })
        try {
          await client.connect()
          await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
        } catch (err) {
          abandonConnection(client)
          client.end().catch(() => {})
          throw err
        }
        let lost = false
        // A connection that only waits hears nothing when the network holds its bytes, and would
        // never know: a statement now and then must be answered in time, or it counts as lost.
        const heartbeat = setInterval(() => { client.query('SELECT 1').catch(onLost) }, Math.max(1_000, statementTimeoutMs))
        heartbeat.unref()
        function onLost() {
          if (lost) return
          lost = true
          clearInterval(heartbeat)
          const at = listeners.indexOf(client)
          if (at >= 0) listeners.splice(at, 1)
          abandonConnection(client)
          client.end().catch(() => {})
          onListening?.(false)
          reconnectLater()
        }
        client.on('error', onLost)
        client.on('end', onLost)
        listeners.push(client)
      }
      await open()
      onListening?.(true)
    },
    async requestTransaction(settings = []) {
      const client = await outsideRequestScope(() => pooled.connectOwn())
      return pin(client, (err) => client.release(err), settings)
    },
    onChangesWritten: written.subscribe,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async close() {
      if (closed) return
      closed = true
      await Promise.all(listeners.map((c) => c.end().catch(() => {})))
      await db.destroy()
    },
  }
}

/**
 * A client that loses its server (or PGlite, closed under it) emits 'error', idle (the pool's
 * event) or checked out (its own; the query in flight fails on its own). Without a listener
 * either would end the process.
 */
function keepErrorsQuiet(pool: pg.Pool) {
  pool.on('error', () => {})
  pool.on('connect', (client) => { client.on('error', () => {}) })
}

/**
 * How many distinct texts become named statements. On PostgreSQL each lives in its connection's
 * backend. PGlite keeps them in this process's own memory (about 35 KB each, measured), and the
 * reliability suite's hostile input, every length of IN list, grew a PGlite server past its
 * memory bound with 2,000: the hot queries of prepared.ts are a few dozen texts.
 */
const MAX_NAMED = { postgres: 2000, pglite: 200 } as const

const PREPARING = Symbol('preparing')
/** The changes a connection's triggers have named since it was taken from the pool. */
const TOLD = Symbol('told')

/** Who hears of the changes the pool's connections were told of, and how they are handed over. */
function changesWritten() {
  const handlers: Array<(changes: string[]) => void> = []
  return {
    subscribe: (handler: (changes: string[]) => void) => { handlers.push(handler) },
    handOver: (changes: string[]) => {
      for (const handler of handlers) {
        // A handler's failure must neither keep the connection from the pool nor the others from hearing.
        try { handler(changes) } catch { /* the commits' record tells every instance within its interval */ }
      }
    },
  }
}

/**
 * Every parameterised statement becomes a named prepared statement on its connection: PostgreSQL
 * parses and plans a query's text once per connection instead of at every call (the statements
 * of this service are a fixed set of texts; prepared.ts keeps the hot ones' text identical).
 * Statements without parameters (migrations, BEGIN, COMMIT) and texts beyond the first
 * `maxNamed` ones (an IN list of every length) go unnamed, as before.
 */
function preparingPool(pool: pg.Pool, maxNamed: number, handOver: (changes: string[]) => void, answerWait: () => number = () => 0) {
  const names = new Map<string, string>()
  function statementName(text: string): string | undefined {
    let name = names.get(text)
    if (name === undefined && names.size < maxNamed) {
      name = `s${names.size}`
      names.set(text, name)
    }
    return name
  }
  async function connectOwn() {
    const client = await pool.connect() as pg.PoolClient & { [PREPARING]?: true; [TOLD]: string[] }
    // The notices of a statement arrive before its answer, so by the time the connection goes back
    // (after its work's commit or rollback) it has heard every change its work made.
    const giveBack = client.release
    client.release = (err?: Error | boolean) => {
      const told = client[TOLD]
      client[TOLD] = []
      try {
        if (told.length > 0) handOver(told)
      } finally {
        giveBack.call(client, err)
      }
    }
    if (!client[PREPARING]) {
      client[TOLD] = []
      client.on('notice', (notice) => {
        if (notice.message === CHANGES_NOTICE && notice.detail) client[TOLD].push(...notice.detail.split('\n'))
      })
      const query = client.query.bind(client) as (...args: unknown[]) => unknown
      const unbounded = (text: unknown, values?: unknown) => {
        if (typeof text === 'string' && Array.isArray(values) && values.length > 0) {
          const name = statementName(text)
          if (name !== undefined) return query({ name, text, values })
        }
        return values === undefined ? query(text) : query(text, values)
      }
      client.query = ((text: unknown, values?: unknown) => {
        const waitMs = answerWait()
        if (waitMs === 0 || typeof text !== 'string') return unbounded(text, values)
        const name = Array.isArray(values) && values.length > 0 ? statementName(text) : undefined
        const config = { text, ...(values === undefined ? {} : { values }), ...(name === undefined ? {} : { name }), query_timeout: waitMs }
        return (query(config) as Promise<unknown>).catch((err: unknown) => {
          if (isAnswerTimeout(err)) abandonConnection(client)
          throw err
        })
      }) as typeof client.query
      client[PREPARING] = true
    }
    return client
  }
  return {
    /** A connection of the pool, or, for a request that holds a transaction, that one (request-transaction.ts). */
    connect: () => pinnedBorrow() ?? connectOwn(),
    connectOwn,
    end: () => pool.end(),
  }
}

async function createPglite(options: DatabaseOptions): Promise<Database> {
  // Loaded only for PGlite: a server on PostgreSQL starts faster and smaller without it.
  const [{ PGlite }, { createPgConfig }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite/node-postgres')])
  let release = () => {}
  let pglite: PGlite
  // PGlite's PostgreSQL keeps 128 MB of shared buffers in the process's memory by default, which
  // doubled the idle RSS of a server on PGlite (bench/RESULTS.md). PGlite touches all of them at
  // its start, so each MB is a MB of idle RSS: 16 MB (2,048 pages) holds the hot pages of a small
  // deployment; a page beyond them is read again from the data directory, which the OS caches
  // (bench/findings.md, "Issue 19": 32 → 16 MB took ~20 MB off the idle RSS, the PGlite
  // workloads of the bench unchanged).
  const startParams = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB']
  if (options.pgliteDump) {
    pglite = new PGlite({ loadDataDir: options.pgliteDump, startParams })
  } else {
    const dataDir = path.resolve(options.dataDir ?? './data')
    try {
      makeDirectory(dataDir)
      release = takeLock(path.join(dataDir, '.lock'))
      await initPgliteDataDir(path.join(dataDir, 'pgdata'))
    } catch (err) {
      release()
      const { code, message } = err as NodeJS.ErrnoException
      // takeLock's and initdb's own refusals already name the setting.
      throw code ? new Error(`DATA_DIR ${dataDir} cannot be used for the embedded database: ${message}`) : err
    }
    pglite = new PGlite({ dataDir: path.join(dataDir, 'pgdata'), startParams })
  }
  try {
    await pglite.waitReady
    await pglite.exec(`SET ${ANNOUNCE_SETTING} = 'after_commit'; SET client_min_messages = notice`)
  } catch (err) {
    release()
    throw err
  }
  // node-postgres over PGlite's one session, through PGlite's own adapter: the driver, type
  // parsers and named prepared statements of the PostgreSQL engine, so a hot query is parsed
  // and planned once instead of at every call (PGlite's query() keeps no prepared statements:
  // 3.4-5.8 ms of CPU per uncached read before, bench/findings.md). One client that never
  // idles out: a transaction holds it and every other statement waits its turn, and the
  // session's prepared statements stay known to the one connection object that made them.
  const pool = new pg.Pool({ ...createPgConfig(pglite), max: 1, idleTimeoutMillis: 0 })
  keepErrorsQuiet(pool)
  const written = changesWritten()
  const pooled = preparingPool(pool, MAX_NAMED.pglite, written.handOver)
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: pooled }) })
  let closed = false
  const hearing: Array<(listening: boolean) => void> = []
  return {
    db,
    engine: 'pglite',
    // One process and one session: its own NOTIFYs reach it at commit, and none can be missed
    // until the database is closed.
    async listen(channel, onMessage, onListening) {
      await pglite.listen(channel, onMessage)
      if (onListening) {
        hearing.push(onListening)
        onListening(true)
      }
    },
    async requestTransaction(settings = []) {
      const client = await outsideRequestScope(() => pooled.connectOwn())
      // The pool's one client is never thrown away: PGlite has no other session to replace it.
      return pin(client, () => client.release(), settings)
    },
    onChangesWritten: written.subscribe,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async close() {
      if (closed) return
      closed = true
      for (const onListening of hearing) onListening(false)
      await db.destroy()
      await pglite.close()
      release()
    },
  }
}

/**
 * mkdir -p, one level at a time: Node 20's recursive mkdirSync spins forever on a path it cannot
 * create under a pseudo file system (DATA_DIR=/proc/x hung the start), instead of failing.
 */
function makeDirectory(dir: string) {
  if (fs.existsSync(dir)) {
    if (!fs.statSync(dir).isDirectory()) throw Object.assign(new Error('it is not a directory'), { code: 'ENOTDIR' })
    return
  }
  const parent = path.dirname(dir)
  if (parent !== dir) makeDirectory(parent)
  fs.mkdirSync(dir)
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
