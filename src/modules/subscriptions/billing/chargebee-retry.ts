/**
 * Retries of Chargebee calls (docs/chargebee.md, "Writes"). A call is retried when its failure
 * is temporary: no answer (network error, the SDK's timeout), 429 (rate limited) or a 5xx. A
 * write is retried with the same `chargebee-idempotency-key`, so Chargebee applies it at most
 * once and answers a retry of an applied write with the first answer (replayed).
 *
 * A failure is **uncertain** when Chargebee may have applied the request before failing: no
 * answer, or a 5xx. A 429 is certain (Chargebee refused it before doing anything), and so is
 * every 4xx. Uncertainty is kept across the attempts: a 429 after a timeout leaves the first
 * attempt's outcome open, which the caller settles by reading Chargebee back.
 *
 * The calls run inside the transaction holding the subscription's row lock, so the waits are
 * short: `delayMs` doubled per attempt, and a Retry-After longer than `maxDelayMs` is not waited
 * for (the 429 goes to the client as 503 with that Retry-After).
 */
export interface RetryPolicy {
  /** Attempts in all, the first included (1: no retry). */
  attempts: number
  delayMs: number
  maxDelayMs: number
  sleep?: (ms: number) => Promise<void>
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 4, delayMs: 200, maxDelayMs: 2000 }

interface CbFailure { http_status_code?: number; type?: string; headers?: Record<string, string> | null }

const statusOf = (err: unknown): number | undefined => {
  const status = (err as CbFailure | null)?.http_status_code
  return typeof status === 'number' ? status : undefined
}

/** The SDK's own timeout is a ChargebeeError of type `timeout` and status 504 (net/ClientInterface.js). */
const isTimeout = (err: unknown) => (err as CbFailure | null)?.type === 'timeout'

/** True when Chargebee may have applied the request: no answer (network, timeout) or a 5xx. */
export function isUncertain(err: unknown): boolean {
  const status = statusOf(err)
  return status === undefined || isTimeout(err) || status >= 500
}

/** True when a retry may succeed: the uncertain failures and 429. */
export function isRetryable(err: unknown): boolean {
  return isUncertain(err) || statusOf(err) === 429
}

function retryAfterMs(err: unknown): number | null {
  const header = (err as CbFailure | null)?.headers?.['retry-after']
  const seconds = Number.parseInt(header ?? '', 10)
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : null
}

/** The last failure of a call retried in vain, and whether any attempt's outcome was uncertain. */
export class RetriesFailed extends Error {
  constructor(readonly last: unknown, readonly uncertain: boolean, readonly attempts: number) {
    super(last instanceof Error ? last.message : 'Chargebee call failed')
  }
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Runs `call` until it succeeds, fails for good or the attempts are spent. Throws RetriesFailed
 * (with the last error and the uncertainty of all attempts) when it does not succeed.
 */
export async function withRetries<T>(policy: RetryPolicy, call: (attempt: number) => Promise<T>): Promise<T> {
  const sleep = policy.sleep ?? realSleep
  let uncertain = false
  for (let attempt = 1; ; attempt++) {
    try {
      return await call(attempt)
    } catch (err) {
      uncertain ||= isUncertain(err)
      if (!isRetryable(err) || attempt >= policy.attempts) throw new RetriesFailed(err, uncertain, attempt)
      const asked = statusOf(err) === 429 ? retryAfterMs(err) : null
      if (asked !== null && asked > policy.maxDelayMs) throw new RetriesFailed(err, uncertain, attempt)
      await sleep(asked ?? Math.min(policy.maxDelayMs, policy.delayMs * 2 ** (attempt - 1)))
    }
  }
}
