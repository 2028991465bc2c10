import { AppError, ProviderError } from '../../../core/errors.ts'

/**
 * What a failed Chargebee call becomes (docs/chargebee.md). The SDK rejects with Chargebee's
 * error JSON (`{message, type, api_error_code, error_code, http_status_code}`, plus the response
 * `headers`), with a ChargebeeError of the same fields when the body was not JSON, or with a
 * network error. Every answer is a `provider_error`:
 *
 * - 400 (`invalid_request`, `param_wrong_value`, ...): 400 — the request named something
 *   Chargebee does not accept (e.g. a plan sku that is no item price there).
 * - 409 (`invalid_state_for_request`): 409 — Chargebee's state refuses it.
 * - 429: 503 with Chargebee's `Retry-After`, once the short retries of chargebee-retry.ts are
 *   spent or the Retry-After is longer than they wait (the call runs inside a transaction
 *   holding the subscription's row lock; the client retries).
 * - 404 (`resource_not_found`), 401/403 (our key), 5xx, timeouts, network: 502 — our mirror or
 *   configuration disagrees with Chargebee, or Chargebee failed: nothing the client can fix. A
 *   5xx or timeout of a write reaches here only when reading Chargebee back showed it not applied
 *   (chargebee-writes.ts).
 */
interface CbErrorBody { message?: string; api_error_code?: string; error_code?: string; http_status_code?: number; headers?: Record<string, string> }

const DEFAULT_RETRY_AFTER_SECONDS = 5

export function providerErrorFrom(err: unknown, action: string): AppError {
  if (err instanceof AppError) return err
  const e = (typeof err === 'object' && err !== null ? err : {}) as CbErrorBody
  const status = typeof e.http_status_code === 'number' ? e.http_status_code : undefined
  const code = e.api_error_code ?? e.error_code ?? 'unknown'
  const said = e.message ? `: ${e.message}` : ''
  if (status === undefined) {
    return new ProviderError(`Chargebee could not be reached to ${action}${err instanceof Error ? ` (${err.message})` : ''}`)
  }
  if (status === 429) {
    const given = Number.parseInt(e.headers?.['retry-after'] ?? '', 10)
    const seconds = Number.isFinite(given) && given > 0 ? given : DEFAULT_RETRY_AFTER_SECONDS
    return new ProviderError(`Chargebee is rate limiting this service; retry in ${seconds} s`, 'busy', seconds)
  }
  if (status === 400) return new ProviderError(`Chargebee refused to ${action} (${code})${said}`, 'refused')
  if (status === 409) return new ProviderError(`Chargebee refused to ${action} in the subscription's state (${code})${said}`, 'conflict')
  if (status === 404) return new ProviderError(`Chargebee does not know an object needed to ${action} (${code})${said}`)
  return new ProviderError(`Chargebee failed to ${action} (HTTP ${status}, ${code})`)
}

/** Runs one Chargebee call, turning its failure into a `provider_error`. */
export async function callChargebee<T>(action: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (err) {
    throw providerErrorFrom(err, action)
  }
}
