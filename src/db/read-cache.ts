import type { Database } from './database.ts'

export const COMPANY_CHANGED = 'company_changed'

/** Past this age an answer is read again even if no change was heard: a net under the net. */
const MAX_AGE_MS = 60_000
/** What a company's shelf costs besides its answers (its map and key), counted against maxBytes. */
const SHELF_BYTES = 256

interface Shelf {
  /** The answers of one company, by read ('teams', 'company'), as the bytes sent. */
  answers: Map<string, { body: string; at: number }>
  bytes: number
}

/**
 * Answers of hot company-scoped reads, kept serialized in this process and sent again without a
 * query while nothing they show has changed. What tells it that something changed is the
 * database: every change to the tables these reads show is announced on `company_changed` by
 * the tables' triggers, in the writing transaction, whoever writes (migrations 0008 and 0012),
 * and heard by every instance on the database when it commits; an instance also forgets a
 * company before it answers a write of that company (`forget`), so a client always reads its
 * own writes. While the LISTEN connection is down, nothing is cached.
 *
 * A read that loses a race keeps nothing: each company's answers sit on a shelf that a change
 * replaces, and an answer is put back only on the shelf its read started from, so a read that
 * began before a change and ended after it is sent but never kept.
 *
 * Bounded by `maxBytes`: past it, the companies cached first are dropped first.
 */
export function createReadCache(options: { maxBytes: number; database: Pick<Database, 'db' | 'listen'> }) {
  const shelves = new Map<string, Shelf>()
  let bytes = 0
  let listening = false
  // Others that keep what a company's change makes stale (the token endpoint's clients).
  const alsoForget: Array<(companyId?: string) => void> = []

  function forgetCompany(companyId?: string) {
    if (companyId) drop(companyId)
    else forgetAll()
    for (const other of alsoForget) other(companyId)
  }

  function drop(companyId: string) {
    const shelf = shelves.get(companyId)
    if (!shelf) return
    bytes -= shelf.bytes
    shelves.delete(companyId)
  }

  function forgetAll() {
    shelves.clear()
    bytes = 0
  }

  function keep(shelf: Shelf, read: string, body: string) {
    const size = body.length * 2
    if (size > options.maxBytes) return
    const before = shelf.answers.get(read)
    if (before) { shelf.bytes -= before.body.length * 2; bytes -= before.body.length * 2 }
    shelf.answers.set(read, { body, at: Date.now() })
    shelf.bytes += size
    bytes += size
    makeRoom(shelf)
  }

  /** Drops the companies cached first until the whole fits in maxBytes again (sparing `current`). */
  function makeRoom(current: Shelf) {
    for (const [companyId, oldest] of shelves) {
      if (bytes <= options.maxBytes) break
      if (oldest !== current) drop(companyId)
    }
  }

  return {
    /** The cached answer of `read` for the company, or what `load` answers (kept when it safely can be). */
    async get(companyId: string, read: string, load: () => Promise<string>): Promise<string> {
      if (!listening || options.maxBytes <= 0) return load()
      let shelf = shelves.get(companyId)
      const hit = shelf?.answers.get(read)
      if (hit && Date.now() - hit.at < MAX_AGE_MS) return hit.body
      if (!shelf) {
        shelf = { answers: new Map(), bytes: SHELF_BYTES }
        shelves.set(companyId, shelf)
        bytes += SHELF_BYTES
        makeRoom(shelf)
      }
      const body = await load()
      if (listening && shelves.get(companyId) === shelf) keep(shelf, read, body)
      return body
    },

    /** Forgets a company's answers (or, without one, every company's). */
    forget: forgetCompany,

    /** Calls `forget` whenever a company is forgotten here: on this instance's writes and on the changes it hears. */
    onForget(forget: (companyId?: string) => void) { alsoForget.push(forget) },

    /** Whether changes are being heard (nothing may be cached otherwise). */
    listening: () => listening,

    /** Subscribes to the database's change announcements; caching starts once they are heard. */
    async listen() {
      await options.database.listen(COMPANY_CHANGED, (companyId) => forgetCompany(companyId || undefined), (heard) => {
        listening = heard
        if (!heard) forgetCompany()
      })
    },

    stats: () => ({ companies: shelves.size, bytes, listening }),
  }
}

export type ReadCache = ReturnType<typeof createReadCache>
