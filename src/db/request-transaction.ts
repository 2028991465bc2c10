import { AsyncLocalStorage } from 'node:async_hooks'
import type pg from 'pg'

/**
 * One transaction for a whole request, committed once the answer is known (idempotency.ts keeps
 * the answer in it). The pool hands out the pinned connection one borrower at a time; a borrower's
 * own BEGIN, COMMIT and ROLLBACK become savepoints, so a failing statement fails alone.
 */
export interface RequestTransaction {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>
  /**
   * Commits, or rolls back on `false`. With `closeScope`, later statements of the request fail
   * instead of running alone: an abandoned request must not commit half its work.
   */
  end(commit: boolean, closeScope?: boolean): Promise<void>
}

interface Scope {
  pinned?: Pinned | 'closed'
}

const scope = new AsyncLocalStorage<Scope>()

export function enterRequestScope(next: () => void) {
  scope.run({}, next)
}

/** For work shared by requests (a timer, a batch). */
export function outsideRequestScope<T>(work: () => T): T {
  return scope.exit(work)
}

export function inRequestTransaction(): boolean {
  return scope.getStore()?.pinned !== undefined
}

export function pinnedBorrow(): Promise<pg.PoolClient> | undefined {
  const pinned = scope.getStore()?.pinned
  if (pinned === 'closed')
    return Promise.reject(new Error('This request ended before its work did; its transaction was rolled back'))
  return pinned?.borrow()
}

/** Throws outside a request's scope. */
export async function pin(
  client: pg.PoolClient,
  release: (err?: Error) => void,
  settings: string[],
): Promise<RequestTransaction> {
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

  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work)
    this.queue = run.catch(() => undefined)
    return run
  }

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
