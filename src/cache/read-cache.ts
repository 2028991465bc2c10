// The read cache's keeping of answers: shelves per company and area, their sizes, bound and ages.
// How it hears of changes is read-cache-changes.ts.
import type { Database } from '../db/database.ts'
import { CACHED_READS, type Area, type CachedRead } from './read-areas.ts'
import { createReadCacheChanges } from './read-cache-changes.ts'

export { COMPANY_CHANGED } from './read-cache-changes.ts'

/** Past this age an answer is read again even if no change was heard. */
const MAX_AGE_MS = 60_000

const SHELF_BYTES = 256
const ANSWER_BYTES = 64

export interface Answer {
  body: string
  link?: string
}

interface Kept extends Answer {
  at: number
  read: CachedRead
  size: number
}

interface Shelf {
  /** Keyed by read and query, as the bytes sent. */
  answers: Map<string, Kept>
  /** Counts changes heard per area: a read that saw one of its areas move keeps nothing. */
  generations: Map<string, number>
  bytes: number
}

/**
 * Hot company-scoped answers, kept serialized while nothing they show changed: each read declares its
 * tables (read-areas.ts), and the database's triggers name what changed. A read that overlaps a change
 * is sent but never kept. Past `maxBytes` the companies cached first go first.
 */
export function createReadCache(options: {
  maxBytes: number
  database: Pick<Database, 'db' | 'listen' | 'onChangesWritten'>
  failedToAnnounce?: (err: unknown) => void
  observe?: (read: CachedRead, outcome: 'hit' | 'miss' | 'uncached') => void
}) {
  const shelves = new Map<string, Shelf>()
  let bytes = 0
  // Others that keep what a company's change makes stale.
  const alsoForget: Array<(companyId: string | undefined, areas: readonly string[] | undefined) => void> = []

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
      if ((CACHED_READS[answer.read] as readonly string[]).some((area) => areas.includes(area)))
        remove(shelf, key, answer)
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
    // Spelled out, not spread: adding properties after a spread is slow on V8, and every miss keeps an answer.
    shelf.answers.set(key, { body: answer.body, link: answer.link, at: Date.now(), read, size })
    shelf.bytes += size
    bytes += size
    makeRoom(shelf)
  }

  /** Drops the companies cached first until all fits in maxBytes, sparing `current`; then its own oldest answers. */
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

  const changes = createReadCacheChanges({
    database: options.database,
    forget: forgetChange,
    failed: options.failedToAnnounce,
  })
  options.database.onChangesWritten(changes.written)

  return {
    /** The cached answer of `read`, or what `load` answers; `query` separates answers forgotten together. */
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
      if (
        changes.listening() &&
        shelves.get(companyId) === shelf &&
        areas.every((area, i) => (shelf.generations.get(area) ?? 0) === before[i])
      ) {
        keep(shelf, key, read, answer)
      }
      return answer
    },

    forget: forgetChange,

    onForget(forget: (companyId: string | undefined, areas: readonly string[] | undefined) => void) {
      alsoForget.push(forget)
    },

    listening: changes.listening,

    written: changes.written,
    announced: changes.announced,
    listen: changes.listen,
    heardUpToNow: changes.heardUpToNow,
    stop: changes.stop,

    stats: () => ({ companies: shelves.size, bytes, listening: changes.listening() }),
  }
}

export type ReadCache = ReturnType<typeof createReadCache>
