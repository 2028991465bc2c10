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
  /** Subscribes to a NOTIFY channel; `onListening(false)` says notifications may be missed until `true`. */
  listen(
    channel: string,
    onMessage: (payload: string) => void,
    onListening?: (listening: boolean) => void,
  ): Promise<void>
  /** Begins a transaction every statement of the current request joins (request-transaction.ts). */
  requestTransaction(settings?: string[]): Promise<RequestTransaction>
  /**
   * Calls `handler` with the changes this process's own work made to cached tables, once that work
   * has ended (after the commit). A rolled-back change is handed over too: it only costs a cache entry.
   */
  onChangesWritten(handler: (changes: string[]) => void): void
  poolStats(): { total: number; idle: number; waiting: number }
  close(): Promise<void>
}

/**
 * In the service's sessions triggers tell the writing connection what changed and the service
 * announces it after commit; in other sessions they NOTIFY at commit. `company_changes` records
 * every change too, so a writer that died before announcing is still heard.
 */
export const ANNOUNCE_SETTING = 'company_admin.announce'
// Notices must reach the service whatever the role's or the database's default: they carry what
// each statement changed (migration 0047), and a setting sent at connection start overrides both.
const SESSION_OPTIONS = `-c ${ANNOUNCE_SETTING}=after_commit -c client_min_messages=notice`
const CHANGES_NOTICE = 'company_changed'

const DATE_OID = 1082
const INT8_OID = 20

// Days stay 'YYYY-MM-DD' strings (a Date would shift them by the process time zone); counts
// (bigint) become numbers. PGlite's rows come through pg too.
pg.types.setTypeParser(DATE_OID, (v) => v)
pg.types.setTypeParser(INT8_OID, (v) => Number(v))

export interface DatabaseOptions {
  databaseUrl?: string
  dataDir?: string
  poolSize?: number
  /** PostgreSQL only: the statement timeout and pool wait; the answer wait is NETWORK_GRACE_MS longer. */
  statementTimeoutMs?: number
  pgliteDump?: Blob
}

export async function createDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl)
    return createPostgres(options.databaseUrl, options.poolSize ?? 10, options.statementTimeoutMs ?? 5_000)
  return createPglite(options)
}

/**
 * The server cancels a statement past its bound on a usable connection; this process gives up
 * only later, when no answer came at all (a network holding bytes), and closes the connection.
 */
const NETWORK_GRACE_MS = 1_000
/** TCP keepalive: a vanished peer is noticed on an idle connection too. */
const KEEPALIVE_DELAY_MS = 10_000

const statementBound = new AsyncLocalStorage<number>()

/**
 * Runs `work` with another answer-wait bound than the pool's (0: none), e.g. migrations and jobs.
 * The work sets the server's own `statement_timeout` in its transactions.
 */
export function withStatementTimeout<T>(ms: number, work: () => T): T {
  return statementBound.run(ms, work)
}

function answerWaitMs(poolBoundMs: number): number {
  const ms = statementBound.getStore() ?? poolBoundMs
  return ms > 0 ? ms + NETWORK_GRACE_MS : 0
}

/** pg's query_timeout: the connection's protocol state is unknown afterwards. */
function isAnswerTimeout(err: unknown): boolean {
  return (err as Error | undefined)?.message === 'Query read timeout'
}

/** A connection whose answer never came is never reused. */
function abandonConnection(client: pg.ClientBase) {
  ;(client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
}

function serverOf(connectionString: string): string {
  try {
    const url = new URL(connectionString)
    return `${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname}`
  } catch {
    return '(unparsable URL)'
  }
}

async function createPostgres(connectionString: string, max: number, statementTimeoutMs: number): Promise<Database> {
  const pool = new pg.Pool({
    connectionString,
    max,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: statementTimeoutMs,
    options: SESSION_OPTIONS,
    statement_timeout: statementTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  })
  keepErrorsQuiet(pool)
  // Connect once first, so a wrong setting stops the start with a sentence naming it.
  try {
    ;(await pool.connect()).release()
  } catch (err) {
    await pool.end().catch(() => {})
    throw new Error(
      `Could not connect to the PostgreSQL server of DATABASE_URL (${serverOf(connectionString)}): ` +
        `${(err as Error).message}`,
    )
  }
  const listeners: pg.Client[] = []
  const written = changesWritten()
  const pooled = preparingPool(pool, MAX_NAMED.postgres, written.handOver, () => answerWaitMs(statementTimeoutMs))
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: pooled }) })
  let closed = false
  return {
    db,
    engine: 'postgres',
    /** A dropped LISTEN connection is reopened with backoff; once back it calls onMessage('') ("forget everything"). */
    async listen(channel, onMessage, onListening) {
      let attempt = 0
      const reconnectLater = () => {
        if (closed) return
        // Short: while it is away, caches that rely on it ask the database instead.
        const delay = Math.min(1_000, 100 * 2 ** attempt++)
        setTimeout(() => {
          if (closed) return
          open().then(() => {
            attempt = 0
            onMessage('')
            onListening?.(true)
          }, reconnectLater)
        }, delay).unref()
      }
      const open = async () => {
        const client = new pg.Client({
          connectionString,
          connectionTimeoutMillis: statementTimeoutMs,
          query_timeout: statementTimeoutMs + NETWORK_GRACE_MS,
          keepAlive: true,
          keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
        })
        client.on('error', () => {})
        client.on('notification', (n) => {
          if (n.channel === channel) onMessage(n.payload ?? '')
        })
        try {
          await client.connect()
          await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
        } catch (err) {
          abandonConnection(client)
          client.end().catch(() => {})
          throw err
        }
        let lost = false
        // A waiting connection hears nothing when the network holds its bytes: a periodic statement
        // must be answered in time, or it counts as lost.
        const heartbeat = setInterval(
          () => {
            client.query('SELECT 1').catch(onLost)
          },
          Math.max(1_000, statementTimeoutMs),
        )
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

// A client that loses its server emits 'error' (idle: the pool's; checked out: its own);
// without a listener either would end the process.
function keepErrorsQuiet(pool: pg.Pool) {
  pool.on('error', () => {})
  pool.on('connect', (client) => {
    client.on('error', () => {})
  })
}

/**
 * How many distinct texts become named statements. PGlite keeps them in this process's memory,
 * and every length of an IN list would grow it past its bound: the hot queries are a few dozen texts.
 */
const MAX_NAMED = { postgres: 2000, pglite: 200 } as const

const PREPARING = Symbol('preparing')
const TOLD = Symbol('told')

function changesWritten() {
  const handlers: Array<(changes: string[]) => void> = []
  return {
    subscribe: (handler: (changes: string[]) => void) => {
      handlers.push(handler)
    },
    handOver: (changes: string[]) => {
      for (const handler of handlers) {
        // A handler's failure must neither keep the connection from the pool nor the others from hearing.
        try {
          handler(changes)
        } catch {
          /* the commits' record tells every instance within its interval */
        }
      }
    },
  }
}

/**
 * Parameterised statements become named prepared statements per connection, so PostgreSQL plans
 * each text once (prepared.ts keeps hot texts identical). Statements without parameters and texts
 * beyond `maxNamed` go unnamed.
 */
function preparingPool(
  pool: pg.Pool,
  maxNamed: number,
  handOver: (changes: string[]) => void,
  answerWait: () => number = () => 0,
) {
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
    const client = (await pool.connect()) as pg.PoolClient & { [PREPARING]?: true; [TOLD]: string[] }
    // A statement's notices arrive before its answer, so by release the connection has heard every change.
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
        const config = {
          text,
          ...(values === undefined ? {} : { values }),
          ...(name === undefined ? {} : { name }),
          query_timeout: waitMs,
        }
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
    /** A pool connection, or the current request's transaction (request-transaction.ts). */
    connect: () => pinnedBorrow() ?? connectOwn(),
    connectOwn,
    end: () => pool.end(),
  }
}

async function createPglite(options: DatabaseOptions): Promise<Database> {
  // Loaded only for PGlite: a PostgreSQL server starts faster and smaller without it.
  const [{ PGlite }, { createPgConfig }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/node-postgres'),
  ])
  let release = () => {}
  let pglite: PGlite
  // PGlite touches all its shared buffers at start, so each one is idle memory: keep them to a
  // small deployment's hot pages, and let the OS cache the rest of the data directory.
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
  // node-postgres over PGlite's one session: named prepared statements work (PGlite's query()
  // keeps none). One client that never idles out: a transaction holds it and others wait their turn.
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
    // One process, one session: its own NOTIFYs arrive at commit and none can be missed.
    async listen(channel, onMessage, onListening) {
      await pglite.listen(channel, onMessage)
      if (onListening) {
        hearing.push(onListening)
        onListening(true)
      }
    },
    async requestTransaction(settings = []) {
      const client = await outsideRequestScope(() => pooled.connectOwn())
      // PGlite has no other session to replace the one client.
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

// mkdir -p one level at a time: Node 20's recursive mkdirSync can spin forever on a pseudo file system.
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
 * PGlite has no guard against two processes opening one data directory. The lock file holds the
 * owner's pid; a lock whose process is gone is taken over.
 */
function takeLock(file: string): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' })
      return () => {
        try {
          fs.unlinkSync(file)
        } catch {
          /* already gone */
        }
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const owner = Number(fs.readFileSync(file, 'utf8'))
      if (owner && owner !== process.pid && isAlive(owner)) {
        throw new Error(
          `The data directory ${path.dirname(file)} is in use by process ${owner}; stop it, or set DATA_DIR to ` +
            `another directory.`,
        )
      }
      fs.unlinkSync(file)
    }
  }
  throw new Error(`Could not lock the data directory ${path.dirname(file)}`)
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
