import {
  AppError,
  Gone,
  InsufficientScope,
  MethodNotAllowed,
  ProviderError,
  RateLimited,
  ServiceUnavailable,
  Unauthorized,
  type ErrorCode,
  type ErrorDetail,
} from '../core/errors.ts'

/** A refusal only the transport makes (a malformed URL, a path segment too long): it names its status itself. */
export class HttpRefusal extends AppError {
  constructor(
    code: ErrorCode,
    readonly status: number,
    message: string,
    details?: ErrorDetail[],
  ) {
    super(code, message, details)
  }
}

const STATUS_BY_CODE: Record<ErrorCode, number> = {
  validation_failed: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  provider_error: 502,
  unavailable: 503,
  internal: 500,
}

const PROVIDER_STATUS = { failed: 502, refused: 400, conflict: 409, busy: 503 } as const

/** An error's HTTP status. */
export function statusOf(err: AppError): number {
  if (err instanceof HttpRefusal) return err.status
  if (err instanceof Gone) return 410
  if (err instanceof ProviderError) return PROVIDER_STATUS[err.outcome]
  return STATUS_BY_CODE[err.code]
}

/** The headers an error's answer carries: the challenge, Allow, Retry-After. */
export function headersOf(err: AppError): Record<string, string> {
  if (err instanceof Unauthorized) {
    return {
      'www-authenticate': err.basicRealm
        ? `Basic realm="${err.basicRealm}", charset="UTF-8"`
        : 'Bearer error="invalid_token"',
    }
  }
  if (err instanceof InsufficientScope)
    return { 'www-authenticate': `Bearer error="insufficient_scope", scope="${err.scope}"` }
  if (err instanceof MethodNotAllowed) return { allow: err.allowed.join(', ') }
  if (err instanceof RateLimited || err instanceof ServiceUnavailable)
    return { 'retry-after': String(err.retryAfterSeconds) }
  if (err instanceof ProviderError && err.retryAfterSeconds !== undefined)
    return { 'retry-after': String(err.retryAfterSeconds) }
  return {}
}
