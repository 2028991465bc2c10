/**
 * Retries of Chargebee calls on temporary failures (no answer, 429, 5xx) with the same idempotency
 * key. No answer or a 5xx leaves the outcome **uncertain**, settled by reading back. Waits are short
 * (a row is locked): a longer Retry-After goes to the client as a 503.
 */
export interface RetryPolicy {
  /** The first included (1: no retry). */
  attempts: number
  delayMs: number
  maxDelayMs: number
  sleep?: (ms: number) => Promise<void>
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 4, delayMs: 200, maxDelayMs: 2000 }

interface CbFailure {
  http_status_code?: number
  type?: string
  headers?: Record<string, string> | null
}

const statusOf = (err: unknown): number | undefined => {
  const status = (err as CbFailure | null)?.http_status_code
  return typeof status === 'number' ? status : undefined
}

/** The SDK's own timeout: a ChargebeeError of type `timeout`. */
const isTimeout = (err: unknown) => (err as CbFailure | null)?.type === 'timeout'

export function isUncertain(err: unknown): boolean {
  const status = statusOf(err)
  return status === undefined || isTimeout(err) || status >= 500
}

export function isRetryable(err: unknown): boolean {
  return isUncertain(err) || statusOf(err) === 429
}

function retryAfterMs(err: unknown): number | null {
  const header = (err as CbFailure | null)?.headers?.['retry-after']
  const seconds = Number.parseInt(header ?? '', 10)
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : null
}

export class RetriesFailed extends Error {
  constructor(
    readonly last: unknown,
    readonly uncertain: boolean,
    readonly attempts: number,
  ) {
    super(last instanceof Error ? last.message : 'Chargebee call failed')
  }
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Throws RetriesFailed, with the last error and whether any attempt was uncertain, when it does not succeed. */
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
