import { sql } from 'kysely'
import type { Database } from './database.ts'
import { outsideRequestScope } from './request-transaction.ts'

export const COMPANY_CHANGED = 'company_changed'

/** Past this age an answer is read again even if no change was heard: a net under the net. */
const MAX_AGE_MS = 60_000
/**
 * How long announcements gather before they go out together: under load, one statement carries
 * the companies of many writes (fewer round trips for the writes' share of the database and of
 * this process); alone, a change reaches the other instances that much later.
 */
const GATHER_MS = 2
/**
 * How often the changes recorded by their commits (`company_changes`, migration 0010) are read:
 * the longest a change whose writer died before announcing it stays unheard.
 */
const RECORDED_EVERY_MS = 200
/** Recorded changes are kept this long (read by every instance within RECORDED_EVERY_MS). */
const RECORDED_KEPT_MS = 60_000

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
 * database: every committed change to the tables these reads show is announced on
 * `company_changed` (migration 0008: by the tables' triggers, or by the service after a request
 * or in a job), heard by every instance on the database; an instance also forgets a company
 * before it answers a write of that company (`forget`), so a client always reads its own
 * writes. Every change is also recorded by its own commit in `company_changes` (migration
 * 0010), which each instance reads every RECORDED_EVERY_MS: a change whose writer died between
 * its commit and its announcement is forgotten that way. While the LISTEN connection is down,
 * or the record cannot be read, nothing is cached.
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
  let heard = false
  let recordRead = false
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

  interface Batch { ids: Set<string>; sent: Promise<void>; resolve: () => void; reject: (err: unknown) => void }
  let gathering: Batch | undefined
  let sending = false
  let timer: NodeJS.Timeout | undefined

  function newBatch(): Batch {
    const batch = { ids: new Set<string>() } as Batch
    batch.sent = new Promise<void>((resolve, reject) => { batch.resolve = resolve; batch.reject = reject })
    return batch
  }

  function sendGathered() {
    timer = undefined
    const batch = gathering
    if (!batch || sending) return
    gathering = undefined
    sending = true
    // '' (every company) says all the others say.
    const ids = batch.ids.has('') ? [''] : [...batch.ids]
    // NOTIFY gives its transaction an id, so its commit is a WAL record that a synchronous commit
    // would wait to flush (fsync), in line with the writes'. Nothing durable is at stake: the
    // listeners are told at commit, and a database that crashes drops their connections, and so
    // their caches, anyway.
    sql`SELECT pg_notify(${COMPANY_CHANGED}, id) FROM set_config('synchronous_commit', 'off', true), unnest(${ids}::text[]) AS id`.execute(options.database.db)
      .then(() => batch.resolve(), batch.reject)
      .finally(() => { sending = false; sendGathered() })
  }

  // The record of changes, read from where the last read's snapshot left off: every
  // transaction that had not ended then has an id at least that snapshot's xmin, so a change
  // that committed since is at or past it (its rows are read again while an older transaction
  // runs; forgetting twice is harmless).
  let since: string | undefined
  let recordTimer: NodeJS.Timeout | undefined
  let stopped = false
  let lastPurge = 0
  // The xmin read at the previous purge, RECORDED_KEPT_MS ago or more: every transaction below it
  // had ended by then, so every instance (reading every RECORDED_EVERY_MS) has read its rows.
  // Purging by the rows' `at` instead (the writing transaction's start) could delete the rows of
  // a transaction that ran longer than RECORDED_KEPT_MS before the others had read them.
  let purgeBelow: string | undefined

  async function readRecorded() {
    recordTimer = undefined
    if (stopped) return
    try {
      const { rows: [row] } = await sql<{ xmin: string; ids: string[] | null }>`
        SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin,
          (SELECT array_agg(DISTINCT company_id) FROM company_changes WHERE ${since ?? null}::xid8 IS NOT NULL AND xid >= ${since ?? null}::xid8) AS ids`
        .execute(options.database.db)
      since = row!.xmin
      const ids = row!.ids ?? []
      if (ids.includes('')) forgetCompany()
      else for (const id of ids) forgetCompany(id)
      if (Date.now() - lastPurge > RECORDED_KEPT_MS) {
        lastPurge = Date.now()
        if (purgeBelow) await sql`DELETE FROM company_changes WHERE xid < ${purgeBelow}::xid8`.execute(options.database.db)
        purgeBelow = row!.xmin
      }
      recordRead = true
    } catch {
      // Changes could go unread: nothing is kept until the record is read again, from then on.
      recordRead = false
      since = undefined
      forgetCompany()
    }
    listening = heard && recordRead
    if (!stopped) recordTimer = setTimeout(readRecorded, RECORDED_EVERY_MS)
    recordTimer?.unref()
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

    /**
     * Tells every instance that a company changed (or, without one, every company): what the
     * service does after a request's work has committed, its own sessions being the ones the
     * tables' triggers leave to it (migration 0008). Its statement commits without waiting for
     * a WAL flush. Announcements gather for GATHER_MS, and while one statement
     * is on its way, and then go together in one statement: concurrent writes cost one round
     * trip between them, not one each. Resolves once the announcement is sent.
     */
    announce(companyId?: string): Promise<void> {
      gathering ??= newBatch()
      const batch = gathering
      batch.ids.add(companyId ?? '')
      // Outside the request's scope: the announcement is every write's, sent after their commits.
      timer ??= outsideRequestScope(() => setTimeout(sendGathered, GATHER_MS))
      return batch.sent
    },

    /** Subscribes to the database's change announcements and records; caching starts once both are heard. */
    async listen() {
      await options.database.listen(COMPANY_CHANGED, (companyId) => forgetCompany(companyId || undefined), (now) => {
        heard = now
        listening = heard && recordRead
        if (!now) forgetCompany()
      })
      await readRecorded()
    },

    /** Stops reading the record (the database is about to close). */
    stop() {
      stopped = true
      if (recordTimer) clearTimeout(recordTimer)
    },

    stats: () => ({ companies: shelves.size, bytes, listening }),
  }
}

export type ReadCache = ReturnType<typeof createReadCache>
