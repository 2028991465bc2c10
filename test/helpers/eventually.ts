/**
 * Reads until `done` says the value is the one awaited, or `ms` have passed; returns the last
 * value read, for the caller to assert on (a change another instance must hear of, a job that
 * must run): the assertion, not this helper, fails the test.
 */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 3_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await read()
    if (done(value) || Date.now() > deadline) return value
    await new Promise((r) => setTimeout(r, 20))
  }
}
