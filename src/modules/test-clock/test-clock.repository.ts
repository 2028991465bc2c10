import { sql, type Kysely } from 'kysely'
import type { DB } from '../../db/tables.ts'

/** The test clock's one row (migration 0017). */
export interface TestClockRow {
  offset_ms: number
  status: 'ready' | 'advancing'
  advancing_to: Date | null
}

/** An advance whose instance has not stepped for this long is taken to be dead and may be taken over. */
const STALE_AFTER = '2 minutes'

export function createTestClockRepository(db: Kysely<DB>) {
  return {
    async read(): Promise<TestClockRow> {
      const {
        rows: [row],
      } = await sql<TestClockRow>`SELECT offset_ms, status, advancing_to FROM test_clock`.execute(db)
      return row ?? { offset_ms: 0, status: 'ready', advancing_to: null }
    },

    /** Marks the clock advancing towards `to`; undefined when another advance (alive) holds it. */
    async claim(to: Date): Promise<TestClockRow | undefined> {
      const {
        rows: [row],
      } = await sql<TestClockRow>`
        UPDATE test_clock SET status = 'advancing', advancing_to = ${to}, heartbeat_at = now()
        WHERE status = 'ready' OR heartbeat_at IS NULL OR heartbeat_at < now() - ${STALE_AFTER}::interval
        RETURNING offset_ms, status, advancing_to`.execute(db)
      return row
    },

    /** Moves the clock (never back) while this advance holds it; false when it no longer does. */
    async step(offsetMs: number, to: Date): Promise<boolean> {
      const { numAffectedRows } = await sql`
        UPDATE test_clock SET offset_ms = GREATEST(offset_ms, ${offsetMs}::bigint), heartbeat_at = now()
        WHERE status = 'advancing' AND advancing_to = ${to}`.execute(db)
      return Number(numAffectedRows ?? 0) > 0
    },

    /** Ends the advance towards `to` (whether it finished or failed). */
    async release(to: Date): Promise<void> {
      await sql`UPDATE test_clock SET status = 'ready', advancing_to = NULL, heartbeat_at = NULL
        WHERE status = 'advancing' AND advancing_to = ${to}`.execute(db)
    },
  }
}

export type TestClockRepository = ReturnType<typeof createTestClockRepository>
