import type { PGlite } from '@electric-sql/pglite'
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
} from 'kysely'

/**
 * Kysely over PGlite, which is a single database session. A connection is lent to one caller at
 * a time (a queue of waiters), so a transaction's BEGIN ... COMMIT never interleaves with
 * another caller's statements: the equivalent of Kysely 0.29's dialect, which needs Node 22.
 */
export class PGliteDialect implements Dialect {
  constructor(private readonly pglite: PGlite) {}
  createAdapter() { return new PostgresAdapter() }
  createDriver(): Driver { return new PGliteDriver(this.pglite) }
  createIntrospector(db: Kysely<any>) { return new PostgresIntrospector(db) }
  createQueryCompiler() { return new PostgresQueryCompiler() }
}

class PGliteDriver implements Driver {
  readonly #connection: PGliteConnection
  #busy = false
  readonly #waiters: Array<() => void> = []

  constructor(pglite: PGlite) { this.#connection = new PGliteConnection(pglite) }

  async init() {}

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#busy) await new Promise<void>((resolve) => this.#waiters.push(resolve))
    this.#busy = true
    return this.#connection
  }

  async releaseConnection() {
    const next = this.#waiters.shift()
    if (next) next()
    else this.#busy = false
  }

  async beginTransaction(connection: DatabaseConnection) { await connection.executeQuery(CompiledQuery.raw('BEGIN')) }
  async commitTransaction(connection: DatabaseConnection) { await connection.executeQuery(CompiledQuery.raw('COMMIT')) }
  async rollbackTransaction(connection: DatabaseConnection) { await connection.executeQuery(CompiledQuery.raw('ROLLBACK')) }
  async destroy() {}
}

class PGliteConnection implements DatabaseConnection {
  constructor(private readonly pglite: PGlite) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    // A statement without parameters goes through the simple protocol, which accepts several
    // statements at once (migrations), exactly as node-postgres does for the server.
    if (compiled.parameters.length === 0) {
      const results = await this.pglite.exec(compiled.sql)
      const last = results[results.length - 1]
      return { rows: (last?.rows ?? []) as R[], numAffectedRows: last?.affectedRows === undefined ? undefined : BigInt(last.affectedRows) }
    }
    const result = await this.pglite.query<R>(compiled.sql, compiled.parameters as unknown[])
    return { rows: result.rows, numAffectedRows: result.affectedRows === undefined ? undefined : BigInt(result.affectedRows) }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('Streaming is not supported on PGlite')
  }
}
