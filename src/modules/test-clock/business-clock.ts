import type { Clock } from '../../core/clock.ts'
import type { Database } from '../../db/database.ts'
import type { TestClockRepository, TestClockRow } from './test-clock.repository.ts'
import { outsideRequestScope } from '../../db/request-transaction.ts'

const CHANGED = 'test_clock_changed'
/** How often the row is read anyway: the longest a missed notification leaves an instance behind. */
const READ_EVERY_MS = 200

export interface BusinessClock extends Clock {
  /** How far the business time runs ahead of the base clock (ms); 0 without a test clock. */
  offsetMs(): number
  /** The test clock's state as this instance last read it. */
  state(): TestClockRow
  /** Takes a state this instance wrote itself (an advance's step), before the others hear of it. */
  apply(row: Partial<TestClockRow>): void
  /** Calls `listener` whenever the offset moves (the scheduler wakes: jobs may have fallen due). */
  onChange(listener: () => void): void
  /** Subscribes to changes and starts reading the row every READ_EVERY_MS. */
  listen(): Promise<void>
  stop(): void
}

/**
 * The business clock with the test clock on: the base clock (the system's, or a test's) plus
 * the offset that the database holds for every instance. The offset is kept in memory, so
 * now() costs what the base clock costs; a change is heard by NOTIFY when it commits
 * (migration 0017) and, should the notification be missed, from the row read every 200 ms: the
 * pattern of the cached reads' change record (read-cache.ts). The offset never goes back: an
 * older read arriving late cannot move the clock backwards.
 */
export function createBusinessClock(options: { base: Clock; repo: Pick<TestClockRepository, 'read'>; database: Pick<Database, 'listen'> }): BusinessClock {
  let current: TestClockRow = { offset_ms: 0, status: 'ready', advancing_to: null }
  const listeners: Array<() => void> = []
  let timer: NodeJS.Timeout | undefined
  let stopped = false

  // Bumped by each state this instance writes itself: a read that began before it is older news.
  let written = 0

  function apply(row: Partial<TestClockRow>) {
    const moved = row.offset_ms !== undefined && row.offset_ms > current.offset_ms
    current = { ...current, ...row, offset_ms: Math.max(current.offset_ms, row.offset_ms ?? 0) }
    if (moved) for (const listener of listeners) listener()
  }

  async function refresh() {
    const before = written
    try {
      const row = await options.repo.read()
      // A read that began before this instance's own write keeps only what cannot go back: the offset.
      apply(before === written ? row : { offset_ms: row.offset_ms })
    } catch {
      // The database is away: the last offset read stays (it only ever grows).
    }
  }

  async function loop() {
    timer = undefined
    if (stopped) return
    await refresh()
    if (!stopped) timer = outsideRequestScope(() => setTimeout(loop, READ_EVERY_MS))
    timer?.unref()
  }

  return {
    now: () => new Date(options.base.now().getTime() + current.offset_ms),
    offsetMs: () => current.offset_ms,
    state: () => current,
    apply(row) { written++; apply(row) },
    onChange(listener) { listeners.push(listener) },
    async listen() {
      await options.database.listen(CHANGED, () => { void refresh() }, (heard) => { if (heard) void refresh() })
      await loop()
    },
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}

/** The business clock without a test clock: the base clock itself, never moved by anyone. */
export function fixedBusinessClock(base: Clock): BusinessClock {
  const state: TestClockRow = { offset_ms: 0, status: 'ready', advancing_to: null }
  return {
    now: () => base.now(),
    offsetMs: () => 0,
    state: () => state,
    apply: () => {},
    onChange: () => {},
    listen: async () => {},
    stop: () => {},
  }
}
