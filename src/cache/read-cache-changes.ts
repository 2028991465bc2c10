// How the read cache hears of changes, three ways each covering what the one before can miss: this
// instance's own writes, the `company_changed` announcements, and the `company_changes` record each
// commit leaves. While any is unavailable, `listening()` is false and nothing is kept.
import { sql } from 'kysely'
import type { Database } from '../db/database.ts'
import { outsideRequestScope } from '../db/request-transaction.ts'
import { parseChange } from './read-areas.ts'

export const COMPANY_CHANGED = 'company_changed'

/** Announcements gather this long, so concurrent writes share one statement. */
const GATHER_MS = 2
/** The longest a change whose writer died before announcing it stays unheard. */
const RECORDED_EVERY_MS = 200
const RECORDED_KEPT_MS = 60_000

export function createReadCacheChanges(options: {
  database: Pick<Database, 'db' | 'listen'>
  /** `areas` undefined: every area; `companyId` undefined: every company. */
  forget: (companyId?: string, areas?: readonly string[]) => void
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

  interface Batch {
    ids: Set<string>
    sent: Promise<void>
    resolve: () => void
  }
  let gathering: Batch | undefined
  let sending = false
  let inFlight: Promise<void> | undefined
  // biome-ignore lint/correctness/noUnusedVariables: read by `??=`
  let timer: NodeJS.Timeout | undefined

  function newBatch(): Batch {
    const batch = { ids: new Set<string>() } as Batch
    batch.sent = new Promise<void>((resolve) => {
      batch.resolve = resolve
    })
    return batch
  }

  function sendGathered() {
    timer = undefined
    const batch = gathering
    if (!batch || sending) return
    gathering = undefined
    sending = true
    inFlight = batch.sent
    const ids = batch.ids.has('') ? [''] : [...batch.ids]
    // Synchronous commit off: nothing durable is at stake, and a crashed database drops the
    // listeners' connections (and so their caches) anyway.
    sql`SELECT pg_notify(${COMPANY_CHANGED}, id)
      FROM set_config('synchronous_commit', 'off', true), unnest(${ids}::text[]) AS id`
      .execute(options.database.db)
      .then(
        () => batch.resolve(),
        (err: unknown) => {
          options.failed?.(err)
          batch.resolve()
        },
      )
      .finally(() => {
        sending = false
        sendGathered()
      })
  }

  // The record is read from the previous snapshot's xmin, so nothing committed since is missed.
  // Transactions already heard (`seen`) are skipped, or a long-running transaction elsewhere would
  // make the same rows forget answers at every read.
  let since: string | undefined
  let seen = new Set<string>()
  let recordTimer: NodeJS.Timeout | undefined
  let stopped = false
  let lastPurge = 0
  // Purged below the xmin of the previous purge (not by the rows' `at`): every transaction below it
  // had ended long enough ago that every instance has read its rows.
  let purgeBelow: string | undefined

  let waiting: Array<() => void> = []

  async function readRecorded() {
    recordTimer = undefined
    if (stopped) return
    const served = waiting
    waiting = []
    try {
      const {
        rows: [row],
      } = await sql<{ xmin: string; byXid: Array<{ xid: string; ids: string[] }> | null }>`
        SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin,
          (SELECT json_agg(json_build_object('xid', xid::text, 'ids', ids)) FROM (
            SELECT xid, array_agg(DISTINCT company_id || coalesce(':' || area, '')) AS ids FROM company_changes
            WHERE ${since ?? null}::xid8 IS NOT NULL AND xid >= ${since ?? null}::xid8 GROUP BY xid) t)
              AS "byXid"`.execute(options.database.db)
      since = row!.xmin
      const fresh = (row!.byXid ?? []).filter((t) => !seen.has(t.xid))
      const changes = [...new Set(fresh.flatMap((t) => t.ids))]
      const floor = BigInt(since)
      seen = new Set([...seen, ...fresh.map((t) => t.xid)].filter((xid) => BigInt(xid) >= floor))
      if (changes.includes('')) forgetChange()
      else for (const change of changes) heardChange(change)
      if (Date.now() - lastPurge > RECORDED_KEPT_MS) {
        lastPurge = Date.now()
        if (purgeBelow)
          await sql`DELETE FROM company_changes WHERE xid < ${purgeBelow}::xid8`.execute(options.database.db)
        purgeBelow = row!.xmin
      }
      recordRead = true
      for (const resolve of served) resolve()
    } catch {
      waiting.push(...served)
      // Changes could go unread: nothing is kept until the record is read again.
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
    listening: () => listening,

    /**
     * Takes the changes this process's work made, after its commit: forgets them here at once, then
     * announces them, gathered, in one statement. A failed announcement goes to `failed`; the others
     * hear of the change from the record.
     */
    written(changes: readonly string[]): void {
      for (const change of changes) heardChange(change)
      gathering ??= newBatch()
      const batch = gathering
      for (const change of changes) batch.ids.add(change)
      // Outside the request's scope: the announcement serves every gathered write.
      timer ??= outsideRequestScope(() => setTimeout(sendGathered, GATHER_MS))
    },

    /** A write's answer waits for this, so its client knows every instance is being told. */
    async announced(): Promise<void> {
      await Promise.allSettled([inFlight, gathering?.sent])
    },

    async listen() {
      await options.database.listen(COMPANY_CHANGED, heardChange, (now) => {
        heard = now
        listening = heard && recordRead
        if (!now) forgetChange()
      })
      await readRecorded()
    },

    /** Resolves once every change committed before now has been heard (tests). */
    async heardUpToNow(): Promise<void> {
      await Promise.allSettled([inFlight, gathering?.sent])
      await new Promise<void>((resolve) => {
        waiting.push(resolve)
      })
    },

    stop() {
      stopped = true
      if (recordTimer) clearTimeout(recordTimer)
    },
  }
}
