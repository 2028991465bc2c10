import { AsyncLocalStorage } from 'node:async_hooks'
import type pg from 'pg'

/**
 * One transaction for a whole request: every statement the request runs, on whichever Kysely
 * instance or repository, goes to one connection inside one transaction, which the request's
 * owner commits (or rolls back) once it knows the answer. The `Idempotency-Key` layer uses it
 * to commit a request's work and its kept answer together (src/http/idempotency.ts): an
 * instance that dies before that commit leaves neither behind.
 *
 * How: a request that may own one runs in a scope (`enterRequestScope`); once it `pin`s a
 * transaction, the pool (database.ts) hands every connection asked for in that scope out as
 * the pinned one, one borrower at a time (a second waits for the first to give it back, as it
 * would wait for a pooled connection). A borrower's own BEGIN, COMMIT and ROLLBACK become a
 * savepoint, its release and a rollback to it; a statement outside a transaction of its own
 * gets a savepoint too, so a failing statement fails alone, as it would have in autocommit.
 */
export interface RequestTransaction {
  /** A statement on the pinned connection, outside any borrower's savepoint (waits for the borrower). */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>
  /**
   * Commits, or rolls back on `false`; the connection goes back to the pool either way. With
   * `closeScope`, a statement the request still runs afterwards fails instead of going to the
   * pool on its own (a request abandoned while its handler runs must not commit half its work).
   */
  end(commit: boolean, closeScope?: boolean): Promise<void>
}

interface Scope { pinned?: Pinned | 'closed' }

const scope = new AsyncLocalStorage<Scope>()

/** Runs `next` (and what it leads to: the rest of the request) in a scope that may pin a transaction. */
export function enterRequestScope(next: () => void) {
  scope.run({}, next)
}

/** Runs `work` outside any request's scope: for work shared by requests (a timer, a batch). */
export function outsideRequestScope<T>(work: () => T): T {
  return scope.exit(work)
}

/** Whether the current request's statements go to a pinned transaction. */
export function inRequestTransaction(): boolean {
  return scope.getStore()?.pinned !== undefined
}

/** The connection the pool hands out in the current scope instead of one of its own, if any. */
export function pinnedBorrow(): Promise<pg.PoolClient> | undefined {
  const pinned = scope.getStore()?.pinned
  if (pinned === 'closed') return Promise.reject(new Error('This request ended before its work did; its transaction was rolled back'))
  return pinned?.borrow()
}

/**
 * Begins a transaction on `client` (taken from the pool by the caller, who gives it back through
 * `release`) and pins it to the current request's scope. Throws outside a request's scope.
 */
export async function pin(client: pg.PoolClient, release: (err?: Error) => void, settings: string[]): Promise<RequestTransaction> {
  const current = scope.getStore()
  if (!current) throw new Error('pin() outside a request scope')
  if (current.pinned) throw new Error('This request already holds a transaction')
  try {
    await client.query('BEGIN')
    for (const setting of settings) await client.query(setting)
  } catch (err) {
    release(err as Error)
    throw err
  }
  const pinned = new Pinned(client)
  current.pinned = pinned
  return {
    query: (text, values) => pinned.exclusive(() => client.query(text, values as unknown[])),
    async end(commit, closeScope = false) {
      if (current.pinned !== pinned) return
      let failed: Error | undefined
      try {
        await pinned.exclusive(() => client.query(commit ? 'COMMIT' : 'ROLLBACK'))
      } catch (err) {
        failed = err as Error
      } finally {
        current.pinned = closeScope ? 'closed' : undefined
        // A connection whose transaction could not end is not given to anyone else.
        release(failed)
      }
      if (failed) throw failed
    },
  }
}

class Pinned {
  private queue: Promise<unknown> = Promise.resolve()
  private savepoints = 0

  constructor(private readonly client: pg.PoolClient) {}

  /** Runs `work` once every earlier borrower is done. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work)
    this.queue = run.catch(() => undefined)
    return run
  }

  /** The pinned connection for one borrower (one Kysely connection checkout), as a pool client. */
  borrow(): Promise<pg.PoolClient> {
    return new Promise((handed) => {
      void this.exclusive(() => new Promise<void>((returned) => handed(this.borrower(returned))))
    })
  }

  private borrower(returned: () => void): pg.PoolClient {
    const client = this.client
    let depth = 0
    const names: string[] = []
    const savepoint = () => `request_${++this.savepoints}`
    const run = (text: string, values?: unknown[]) => client.query(text, values)
    const query = async (text: unknown, values?: unknown[]) => {
      if (typeof text !== 'string') throw new Error('A request transaction takes statements as text')
      const verb = text.trimStart().slice(0, 20).toLowerCase()
      if (verb === 'begin' || verb.startsWith('start transaction')) {
        const name = savepoint()
        names.push(name)
        depth++
        return run(`SAVEPOINT ${name}`)
      }
      if (verb === 'commit' && depth > 0) {
        depth--
        return run(`RELEASE SAVEPOINT ${names.pop()}`)
      }
      if (verb === 'rollback' && depth > 0) {
        depth--
        const name = names.pop()
        await run(`ROLLBACK TO SAVEPOINT ${name}`)
        return run(`RELEASE SAVEPOINT ${name}`)
      }
      if (depth > 0) return run(text, values)
      const name = savepoint()
      await run(`SAVEPOINT ${name}`)
      try {
        const result = await run(text, values)
        await run(`RELEASE SAVEPOINT ${name}`)
        return result
      } catch (err) {
        await run(`ROLLBACK TO SAVEPOINT ${name}`)
        await run(`RELEASE SAVEPOINT ${name}`)
        throw err
      }
    }
    let given = false
    return {
      query,
      release() {
        if (given) return
        given = true
        returned()
      },
    } as unknown as pg.PoolClient
  }
}
