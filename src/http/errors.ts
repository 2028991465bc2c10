// Typed errors services throw; only the error handler knows their status codes.
export const ERROR_CODES = [
  'validation_failed', 'unauthorized', 'insufficient_scope', 'forbidden', 'not_found',
  'method_not_allowed', 'conflict', 'payload_too_large', 'unsupported_media_type', 'rate_limited',
  'provider_error', 'unavailable', 'internal',
] as const
/** The Error schema's enum. */
export type ErrorCode = typeof ERROR_CODES[number]

export interface ErrorDetail { field: string; message: string }

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Every problem, when the refusal is about fields; sent as `details`. */
    readonly details?: ErrorDetail[],
  ) {
    super(message)
    this.name = new.target.name
  }
}

const FIELD_FIRST = /^((?:body|querystring|params|headers)(?:\/[^\s:]+)?)[\s:]/

/**
 * A refusal of the request's content. A sentence starting with a field's path is also its one
 * detail, so `details` is there whichever check refused.
 */
export class ValidationError extends AppError {
  constructor(message: string, details?: ErrorDetail[]) {
    const field = details ? undefined : FIELD_FIRST.exec(message)?.[1]
    super('validation_failed', 400, message, {}, details ?? (field ? [{ field, message }] : undefined))
  }
}

export class NotFound extends AppError {
  constructor(what: string) { super('not_found', 404, `${what} not found`) }
}

export class MethodNotAllowed extends AppError {
  constructor(method: string, path: string, allowed: readonly string[]) {
    super('method_not_allowed', 405, `${method} is not allowed on ${path}; its methods are ${allowed.join(', ')}`, { allow: allowed.join(', ') })
  }
}

export class Conflict extends AppError {
  constructor(message: string) { super('conflict', 409, message) }
}

export class Unauthorized extends AppError {
  constructor(message = 'A valid bearer token is required') {
    super('unauthorized', 401, message, { 'www-authenticate': 'Bearer error="invalid_token"' })
  }
}

export class InsufficientScope extends AppError {
  constructor(scope: string) {
    super('insufficient_scope', 403, `The token lacks the scope ${scope}`, {
      'www-authenticate': `Bearer error="insufficient_scope", scope="${scope}"`,
    })
  }
}

export class Forbidden extends AppError {
  constructor(message: string, details?: ErrorDetail[]) { super('forbidden', 403, message, {}, details) }
}

export class RateLimited extends AppError {
  constructor(retryAfterSeconds: number) {
    super('rate_limited', 429, `Too many requests; retry in ${retryAfterSeconds} s`, { 'retry-after': String(retryAfterSeconds) })
  }
}

export class ProviderError extends AppError {
  constructor(message: string, statusCode = 502) { super('provider_error', statusCode, message) }
}

/** Retrying after Retry-After is the remedy, unlike `internal`. */
export class ServiceUnavailable extends AppError {
  constructor(message: string, retryAfterSeconds = 5) {
    super('unavailable', 503, message, { 'retry-after': String(retryAfterSeconds) })
  }
}
