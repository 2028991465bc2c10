import { sql } from 'kysely'
import type { Database } from './database.ts'
import { outsideRequestScope } from './request-transaction.ts'
import { CACHED_READS, changePayload, parseChange, type Area, type CachedRead } from './read-areas.ts'

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

/** What a company's shelf costs besides its answers (its maps and key), counted against maxBytes. */
const SHELF_BYTES = 256
/** What an answer costs besides its strings. */
const ANSWER_BYTES = 64

/** An answer as sent: its body, and its Link header when it is a page with a next one. */
export interface Answer { body: string; link?: string }

interface Kept extends Answer { at: number; read: CachedRead; size: number }

interface Shelf {
  /** The answers of one company, by read and query ('teams', 'contracts /api/...?limit=50'), as the bytes sent. */
  answers: Map<string, Kept>
  /** Moves for an area at each change of it heard: a read that saw one of its areas move keeps nothing. */
  generations: Map<string, number>
  bytes: number
}

/**
 * Answers of hot company-scoped reads, kept serialized in this process and sent again without a
 * query while nothing they show has changed. Each read declares the tables it shows
 * (src/db/read-areas.ts); a change names the tables it touched, and forgets only the answers
 * that show one of them (a change that names none forgets the whole company).
 *
 * What tells it that something changed is the database: every committed change to the tables
 * these reads show is announced on `company_changed` with its tables (migrations 0008 and 0031:
 * by the tables' triggers, or by the service after a request or in a job), heard by every
 * instance on the database; an instance also forgets what a write changes before it answers it
 * (`forget`), so a client always reads its own writes. Every change is also recorded by its own
 * commit in `company_changes` with its table (migrations 0010 and 0031), which each instance
 * reads every RECORDED_EVERY_MS: a change whose writer died between its commit and its
 * announcement is forgotten that way. While the LISTEN connection is down, or the record cannot
 * be read, nothing is cached.
 *
 * A read that loses a race keeps nothing: each company's answers sit on a shelf that a change of
 * the whole company replaces, and that counts the changes of each area it has heard of; an
 * answer is put back only on the shelf its read started from, and only if none of the areas it
 * shows moved meanwhile, so a read that began before a change and ended after it is sent but
 * never kept.
 *
 * Bounded by `maxBytes`: past it, the companies cached first are dropped first (and a company
 * whose answers alone fill it loses its oldest answers).
 */
export function createReadCache(options: {
  maxBytes: number
  database: Pick<Database, 'db' | 'listen'>
  /** Told of every answer: from the cache, read, or read with the cache off or not listening (the metrics). */
  observe?: (read: CachedRead, outcome: 'hit' | 'miss' | 'uncached') => void
}) {
  const shelves = new Map<string, Shelf>()
  let bytes = 0
  let heard = false
  let recordRead = false
  let listening = false
  // Others that keep what a company's change makes stale (the token endpoint's clients).
  const alsoForget: Array<(companyId: string | undefined, areas: readonly string[] | undefined) => void> = []

  /** Forgets what a change of `areas` (undefined: every area) of a company (undefined: every company) makes stale. */
  function forgetChange(companyId?: string, areas?: readonly string[]) {
    if (areas === undefined) {
      if (companyId) drop(companyId)
      else forgetAll()
    } else if (companyId) {
      const shelf = shelves.get(companyId)
      if (shelf) forgetAreas(shelf, areas)
    } else {
      for (const shelf of shelves.values()) forgetAreas(shelf, areas)
    }
    for (const other of alsoForget) other(companyId, areas)
  }

  function forgetAreas(shelf: Shelf, areas: readonly string[]) {
    for (const area of areas) shelf.generations.set(area, (shelf.generations.get(area) ?? 0) + 1)
    for (const [key, answer] of shelf.answers) {
      if ((CACHED_READS[answer.read] as readonly string[]).some((area) => areas.includes(area))) remove(shelf, key, answer)
    }
  }

  function remove(shelf: Shelf, key: string, answer: Kept) {
    shelf.answers.delete(key)
    shelf.bytes -= answer.size
    bytes -= answer.size
  }

  const heardChange = (payload: string) => {
    const { companyId, areas } = parseChange(payload)
    forgetChange(companyId, areas)
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

  function keep(shelf: Shelf, key: string, read: CachedRead, answer: Answer) {
    const size = (key.length + answer.body.length + (answer.link?.length ?? 0)) * 2 + ANSWER_BYTES
    if (size + SHELF_BYTES > options.maxBytes) return
    const before = shelf.answers.get(key)
    if (before) remove(shelf, key, before)
    shelf.answers.set(key, { ...answer, at: Date.now(), read, size })
    shelf.bytes += size
    bytes += size
    makeRoom(shelf)
  }

  /**
   * Drops the companies cached first until the whole fits in maxBytes again, sparing `current`;
   * then, if `current` alone is too big (one company's many pages), its oldest answers.
   */
  function makeRoom(current: Shelf) {
    for (const [companyId, oldest] of shelves) {
      if (bytes <= options.maxBytes) break
      if (oldest !== current) drop(companyId)
    }
    for (const [key, answer] of current.answers) {
      if (bytes <= options.maxBytes) break
      remove(current, key, answer)
    }
  }

  // What is announced: change payloads (src/db/read-areas.ts), '' for every area of every company.
  interface Batch { ids: Set<string>; sent: Promise<void>; resolve: () => void; reject: (err: unknown) => void }
  let gathering: Batch | undefined
  let sending = false
  let inFlight: Promise<void> | undefined
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
    inFlight = batch.sent
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
  // that committed since is at or past it. While an older transaction runs (anywhere on the
  // server), the same committed rows come back at every read: the transactions already heard
  // (`seen`, those at or past `since`) are skipped, or their companies' answers would be forgotten
  // every RECORDED_EVERY_MS for as long as that transaction runs. A transaction's rows become
  // visible all at once, at its commit, so one heard is heard whole.
  let since: string | undefined
  let seen = new Set<string>()
  let recordTimer: NodeJS.Timeout | undefined
  let stopped = false
  let lastPurge = 0
  // The xmin read at the previous purge, RECORDED_KEPT_MS ago or more: every transaction below it
  // had ended by then, so every instance (reading every RECORDED_EVERY_MS) has read its rows.
  // Purging by the rows' `at` instead (the writing transaction's start) could delete the rows of
  // a transaction that ran longer than RECORDED_KEPT_MS before the others had read them.
  let purgeBelow: string | undefined

  // Those waiting for a read of the record that starts after they asked (`heardUpToNow`).
  let waiting: Array<() => void> = []

  async function readRecorded() {
    recordTimer = undefined
    if (stopped) return
    const served = waiting
    waiting = []
    try {
      const { rows: [row] } = await sql<{ xmin: string; byXid: Array<{ xid: string; ids: string[] }> | null }>`
        SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin,
          (SELECT json_agg(json_build_object('xid', xid::text, 'ids', ids)) FROM (
            SELECT xid, array_agg(DISTINCT company_id || coalesce(':' || area, '')) AS ids FROM company_changes
            WHERE ${since ?? null}::xid8 IS NOT NULL AND xid >= ${since ?? null}::xid8 GROUP BY xid) t) AS "byXid"`
        .execute(options.database.db)
      since = row!.xmin
      const fresh = (row!.byXid ?? []).filter((t) => !seen.has(t.xid))
      const changes = [...new Set(fresh.flatMap((t) => t.ids))]
      const floor = BigInt(since)
      seen = new Set([...seen, ...fresh.map((t) => t.xid)].filter((xid) => BigInt(xid) >= floor))
      if (changes.includes('')) forgetChange()
      else for (const change of changes) heardChange(change)
      if (Date.now() - lastPurge > RECORDED_KEPT_MS) {
        lastPurge = Date.now()
        if (purgeBelow) await sql`DELETE FROM company_changes WHERE xid < ${purgeBelow}::xid8`.execute(options.database.db)
        purgeBelow = row!.xmin
      }
      recordRead = true
      for (const resolve of served) resolve()
    } catch {
      waiting.push(...served)
      // Changes could go unread: nothing is kept until the record is read again, from then on.
      recordRead = false
      since = undefined
      seen = new Set()
      forgetChange()
    }
    listening = heard && recordRead
    if (!stopped) recordTimer = setTimeout(readRecorded, RECORDED_EVERY_MS)
    recordTimer?.unref()
  }

  return {
    /**
     * The cached answer of `read` for the company, or what `load` answers (kept when it safely
     * can be). `query`: what else the answer depends on (its URL's query, the year it shows);
     * answers of one read with different queries are kept apart and forgotten together.
     */
    async get(companyId: string, read: CachedRead, query: string, load: () => Promise<Answer>): Promise<Answer> {
      if (!listening || options.maxBytes <= 0) {
        options.observe?.(read, 'uncached')
        return load()
      }
      const key = query ? `${read} ${query}` : read
      let shelf = shelves.get(companyId)
      const hit = shelf?.answers.get(key)
      if (hit && Date.now() - hit.at < MAX_AGE_MS) {
        options.observe?.(read, 'hit')
        return hit
      }
      options.observe?.(read, 'miss')
      if (!shelf) {
        shelf = { answers: new Map(), generations: new Map(), bytes: SHELF_BYTES }
        shelves.set(companyId, shelf)
        bytes += SHELF_BYTES
        makeRoom(shelf)
      }
      const areas: readonly Area[] = CACHED_READS[read]
      const before = areas.map((area) => shelf.generations.get(area) ?? 0)
      const answer = await load()
      if (listening && shelves.get(companyId) === shelf && areas.every((area, i) => (shelf.generations.get(area) ?? 0) === before[i])) {
        keep(shelf, key, read, answer)
      }
      return answer
    },

    /** Forgets what a change of `areas` (undefined: every area) of a company (undefined: every company) makes stale. */
    forget: forgetChange,

    /** Calls `forget` whenever something is forgotten here: on this instance's writes and on the changes it hears. */
    onForget(forget: (companyId: string | undefined, areas: readonly string[] | undefined) => void) { alsoForget.push(forget) },

    /** Whether changes are being heard (nothing may be cached otherwise). */
    listening: () => listening,

    /**
     * Tells every instance that `areas` (undefined: every area) of a company (undefined: every
     * company) changed: what the
     * service does after a request's work has committed, its own sessions being the ones the
     * tables' triggers leave to it (migration 0008). Its statement commits without waiting for
     * a WAL flush. Announcements gather for GATHER_MS, and while one statement
     * is on its way, and then go together in one statement: concurrent writes cost one round
     * trip between them, not one each. Resolves once the announcement is sent.
     */
    announce(companyId?: string, areas?: readonly string[]): Promise<void> {
      gathering ??= newBatch()
      const batch = gathering
      batch.ids.add(changePayload(companyId, areas))
      // Outside the request's scope: the announcement is every write's, sent after their commits.
      timer ??= outsideRequestScope(() => setTimeout(sendGathered, GATHER_MS))
      return batch.sent
    },

    /** Subscribes to the database's change announcements and records; caching starts once both are heard. */
    async listen() {
      await options.database.listen(COMPANY_CHANGED, heardChange, (now) => {
        heard = now
        listening = heard && recordRead
        if (!now) forgetChange()
      })
      await readRecorded()
    },

    /**
     * Resolves once this instance's announcements are sent and every change committed before
     * then has been heard from the record (a test's way to know that its earlier writes will
     * forget nothing more).
     */
    async heardUpToNow(): Promise<void> {
      await Promise.allSettled([inFlight, gathering?.sent])
      await new Promise<void>((resolve) => { waiting.push(resolve) })
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
