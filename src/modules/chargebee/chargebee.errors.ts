import { AppError, ProviderError } from '../../core/errors.ts'

/**
 * What a failed Chargebee call becomes, always a `provider_error`: Chargebee's 400 a 400, its 409 a
 * 409, 429 a 503 with its Retry-After once our short retries are spent, and anything else (404, our
 * key refused, 5xx, timeouts) a 502: nothing the client can fix.
 */
interface CbErrorBody {
  message?: string
  api_error_code?: string
  error_code?: string
  http_status_code?: number
  headers?: Record<string, string>
}

const DEFAULT_RETRY_AFTER_SECONDS = 5

export function providerErrorFrom(err: unknown, action: string): AppError {
  if (err instanceof AppError) return err
  const e = (typeof err === 'object' && err !== null ? err : {}) as CbErrorBody
  const status = typeof e.http_status_code === 'number' ? e.http_status_code : undefined
  const code = e.api_error_code ?? e.error_code ?? 'unknown'
  const said = e.message ? `: ${e.message}` : ''
  if (status === undefined) {
    return new ProviderError(
      `Chargebee could not be reached to ${action}${err instanceof Error ? ` (${err.message})` : ''}`,
    )
  }
  if (status === 429) {
    const given = Number.parseInt(e.headers?.['retry-after'] ?? '', 10)
    const seconds = Number.isFinite(given) && given > 0 ? given : DEFAULT_RETRY_AFTER_SECONDS
    return new ProviderError(`Chargebee is rate limiting this service; retry in ${seconds} s`, 'busy', seconds)
  }
  if (status === 400) return new ProviderError(`Chargebee refused to ${action} (${code})${said}`, 'refused')
  if (status === 409)
    return new ProviderError(`Chargebee refused to ${action} in the subscription's state (${code})${said}`, 'conflict')
  if (status === 404) return new ProviderError(`Chargebee does not know an object needed to ${action} (${code})${said}`)
  return new ProviderError(`Chargebee failed to ${action} (HTTP ${status}, ${code})`)
}

export async function callChargebee<T>(action: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (err) {
    throw providerErrorFrom(err, action)
  }
}
