/**
 * How the read cache (src/cache/read-cache.ts) hears that something changed, apart from what it
 * keeps: whether its answers may be kept at all depends only on this, and this never looks at
 * an answer. Three ways, each covering what the one before can miss: what this instance's own
 * work wrote, as the database named it to the writing connection (`written`, forgotten here at
 * once and announced after the commits, gathered), the announcements every instance hears on
 * `company_changed` (LISTEN/NOTIFY), and the record the commits themselves leave in
 * `company_changes`, read every RECORDED_EVERY_MS. What is heard is handed to `forget`; while
 * the LISTEN connection is down or the record cannot be read, `listening()` is false and the
 * cache keeps nothing.
 */
import { sql } from 'kysely'
import type { Database } from '../db/database.ts'
import { outsideRequestScope } from '../db/request-transaction.ts'
import { parseChange } from './read-areas.ts'

export const COMPANY_CHANGED = 'company_changed'

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

export function createReadCacheChanges(options: {
  database: Pick<Database, 'db' | 'listen'>
  /** Told of every change heard: `areas` (undefined: every area) of a company (undefined: every company). */
  forget: (companyId?: string, areas?: readonly string[]) => void
  /** Told when an announcement could not be sent. */
  failed?: (err: unknown) => void
}) {
  const forgetChange = options.forget
  let heard = false
  let recordRead = false
  let listening = false

  const heardChange = (payload: string) => {
    const { companyId, areas } = parseChange(payload)
    forgetChange(companyId, areas)
  }

  // What is announced: change payloads (src/cache/read-areas.ts), '' for every area of every company.
  interface Batch { ids: Set<string>; sent: Promise<void>; resolve: () => void }
  let gathering: Batch | undefined
  let sending = false
  let inFlight: Promise<void> | undefined
  let timer: NodeJS.Timeout | undefined

  function newBatch(): Batch {
    const batch = { ids: new Set<string>() } as Batch
    batch.sent = new Promise<void>((resolve) => { batch.resolve = resolve })
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
      .then(() => batch.resolve(), (err: unknown) => { options.failed?.(err); batch.resolve() })
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
    /** Whether changes are being heard (nothing may be cached otherwise). */
    listening: () => listening,

    /**
     * Takes the changes a piece of this process's work made, as the database named them, once
     * that work has ended (after its commit): forgets them here at once, then announces them to
     * every instance. Announcements gather for GATHER_MS, and while one statement is on its way,
     * and then go together in one statement: concurrent writes cost one round trip between them,
     * not one each. A failed announcement is reported to `failed`; the others hear of the change
     * from the record its commit left.
     */
    written(changes: readonly string[]): void {
      for (const change of changes) heardChange(change)
      gathering ??= newBatch()
      const batch = gathering
      for (const change of changes) batch.ids.add(change)
      // Outside the request's scope: the announcement is every write's, sent after their commits.
      timer ??= outsideRequestScope(() => setTimeout(sendGathered, GATHER_MS))
    },

    /**
     * Resolves once every change taken so far has been announced, or its announcement has failed:
     * a write's answer waits for it, so that a client holding it knows every instance is being told.
     */
    async announced(): Promise<void> {
      await Promise.allSettled([inFlight, gathering?.sent])
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
  }
}
