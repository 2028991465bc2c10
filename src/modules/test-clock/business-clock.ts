import type { Clock } from '../../core/clock.ts'
import type { Database } from '../../db/database.ts'
import type { TestClockRepository, TestClockRow } from './test-clock.repository.ts'
import { outsideRequestScope } from '../../db/request-transaction.ts'

const CHANGED = 'test_clock_changed'
/** The longest a missed notification leaves an instance behind. */
const READ_EVERY_MS = 200

export interface BusinessClock extends Clock {
  /** How far business time runs ahead of the base clock (ms); 0 without a test clock. */
  offsetMs(): number
  state(): TestClockRow
  /** A state this instance wrote itself, taken before the others hear of it. */
  apply(row: Partial<TestClockRow>): void
  onChange(listener: () => void): void
  listen(): Promise<void>
  stop(): void
}

/**
 * The business clock with the test clock on: the base clock plus the offset the database holds
 * for every instance, kept in memory so now() is cheap. Changes are heard by NOTIFY and, if
 * missed, from the periodic read. The offset never goes back, so a late read cannot move it.
 */
export function createBusinessClock(options: {
  base: Clock
  repo: Pick<TestClockRepository, 'read'>
  database: Pick<Database, 'listen'>
}): BusinessClock {
  let current: TestClockRow = { offset_ms: 0, status: 'ready', advancing_to: null }
  const listeners: Array<() => void> = []
  let timer: NodeJS.Timeout | undefined
  let stopped = false

  // Bumped by each state written here: a read that began before it is older news.
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
      apply(before === written ? row : { offset_ms: row.offset_ms })
    } catch {
      // The database is away: the last offset read stays.
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
    apply(row) {
      written++
      apply(row)
    },
    onChange(listener) {
      listeners.push(listener)
    },
    async listen() {
      await options.database.listen(
        CHANGED,
        () => {
          void refresh()
        },
        (heard) => {
          if (heard) void refresh()
        },
      )
      await loop()
    },
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}

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
