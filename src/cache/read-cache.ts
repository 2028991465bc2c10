/**
 * The read cache's keeping of answers: the shelves per company and area, their sizes and bound,
 * their ages, and what each answer tells the metrics. How it hears that something changed lives
 * apart (src/cache/read-cache-changes.ts): this file only trusts `listening()` and is told what to
 * forget; the public API (`createReadCache`, `ReadCache`, `Answer`) stays here.
 */
import type { Database } from '../db/database.ts'
import { CACHED_READS, type Area, type CachedRead } from './read-areas.ts'
import { createReadCacheChanges } from './read-cache-changes.ts'

export { COMPANY_CHANGED } from './read-cache-changes.ts'

/** Past this age an answer is read again even if no change was heard: a net under the net. */
const MAX_AGE_MS = 60_000

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
 * (src/cache/read-areas.ts); a change names the tables it touched, and forgets only the answers
 * that show one of them (a change that names none forgets the whole company).
 *
 * What tells it that something changed is the database, never a route: the tables' triggers
 * name what each statement changed (migration 0047). A writer of this service is told on its own
 * connection; the instance forgets those answers as soon as the work has committed, before it
 * answers, so a client always reads its own writes, and announces them on `company_changed`.
 * Any other writer's triggers announce there at its commit. Every instance on the database
 * hears the announcements. Every change is also recorded by its own
 * commit in `company_changes` with its table (migrations 0010 and 0031), which each instance
 * reads every RECORDED_EVERY_MS: a change whose writer died between its commit and its
 * announcement is forgotten that way. While the LISTEN connection is down, or the record cannot
 * be read, nothing is cached. All this hearing is src/cache/read-cache-changes.ts.
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
  database: Pick<Database, 'db' | 'listen' | 'onChangesWritten'>
  /** Told when the changes of this instance's work could not be announced to the others. */
  failedToAnnounce?: (err: unknown) => void
  /** Told of every answer: from the cache, read, or read with the cache off or not listening (the metrics). */
  observe?: (read: CachedRead, outcome: 'hit' | 'miss' | 'uncached') => void
}) {
  const shelves = new Map<string, Shelf>()
  let bytes = 0
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
    // Spelled out, not spread: on Node 20's V8 each property added after a spread costs over a
    // microsecond (docs/performance.md), and every miss keeps an answer.
    shelf.answers.set(key, { body: answer.body, link: answer.link, at: Date.now(), read, size })
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

  const changes = createReadCacheChanges({ database: options.database, forget: forgetChange, failed: options.failedToAnnounce })
  options.database.onChangesWritten(changes.written)

  return {
    /**
     * The cached answer of `read` for the company, or what `load` answers (kept when it safely
     * can be). `query`: what else the answer depends on (its URL's query, the year it shows);
     * answers of one read with different queries are kept apart and forgotten together.
     */
    async get(companyId: string, read: CachedRead, query: string, load: () => Promise<Answer>): Promise<Answer> {
      if (!changes.listening() || options.maxBytes <= 0) {
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
      if (changes.listening() && shelves.get(companyId) === shelf && areas.every((area, i) => (shelf.generations.get(area) ?? 0) === before[i])) {
        keep(shelf, key, read, answer)
      }
      return answer
    },

    /** Forgets what a change of `areas` (undefined: every area) of a company (undefined: every company) makes stale. */
    forget: forgetChange,

    /** Calls `forget` whenever something is forgotten here: on this instance's writes and on the changes it hears. */
    onForget(forget: (companyId: string | undefined, areas: readonly string[] | undefined) => void) { alsoForget.push(forget) },

    /** Whether changes are being heard (nothing may be cached otherwise). */
    listening: changes.listening,

    // How changes are told and heard: src/cache/read-cache-changes.ts.
    written: changes.written,
    announced: changes.announced,
    listen: changes.listen,
    heardUpToNow: changes.heardUpToNow,
    stop: changes.stop,

    stats: () => ({ companies: shelves.size, bytes, listening: changes.listening() }),
  }
}

export type ReadCache = ReturnType<typeof createReadCache>
