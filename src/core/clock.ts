/**
 * Time as the service sees it; tests pass a clock they can move instead of sleeping.
 *
 * The service keeps two (docs/test-clock.md): the business clock, the time of billing (trials,
 * renewals, the estimate's "now"), communications (send_at, deliveries, recurrences), hosted page
 * expiry and every record's timestamps, which the test clock moves; and the real-time clock, the
 * time of tokens (issue, expiry, iat checks), signing-key rotation, rate limits and idempotency
 * keys, which nothing moves: a token must not expire because a tester advanced a year, nor an
 * idempotency key outlive its 24 hours of real time.
 */
export interface Clock { now(): Date }

export const systemClock: Clock = { now: () => new Date() }

/** A clock that stands still until moved (tests). */
export function manualClock(start: Date | string) {
  let current = new Date(start)
  return {
    now: () => new Date(current),
    set(to: Date | string) { current = new Date(to) },
    advance(ms: number) { current = new Date(current.getTime() + ms) },
  }
}
export type ManualClock = ReturnType<typeof manualClock>
