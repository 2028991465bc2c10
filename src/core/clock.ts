// Time as the service sees it; tests pass a clock they can move instead of sleeping. The business
// clock (billing, communications, hosted pages, timestamps) is what the test clock moves; the real
// clock (tokens, keys, rate limits, idempotency keys) nothing moves (docs/test-clock.md).
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/** A clock that stands still until moved (tests). */
export function manualClock(start: Date | string) {
  let current = new Date(start)
  return {
    now: () => new Date(current),
    set(to: Date | string) {
      current = new Date(to)
    },
    advance(ms: number) {
      current = new Date(current.getTime() + ms)
    },
  }
}
export type ManualClock = ReturnType<typeof manualClock>
