/**
 * Typed errors that services throw. Only the error handler turns them into HTTP answers, so a
 * service says what went wrong, never which status code it is.
 */
export const ERROR_CODES = [
  'validation_failed', 'unauthorized', 'insufficient_scope', 'forbidden', 'not_found',
  'method_not_allowed', 'conflict', 'payload_too_large', 'unsupported_media_type', 'rate_limited',
  'provider_error', 'unavailable', 'internal',
] as const
/** Every `code` an error answer can carry: the Error schema's enum is this list. */
export type ErrorCode = typeof ERROR_CODES[number]

/** One problem of a refused request: the field's path (`body/team_leader_ids/2`) and a sentence naming it. */
export interface ErrorDetail { field: string; message: string }

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Every problem, when the refusal is about fields (a 400 validation_failed, a 403 forbidden); sent as `details`. */
    readonly details?: ErrorDetail[],
  ) {
    super(message)
    this.name = new.target.name
  }
}

/** The path a sentence starts with, such as `body/plan/features` or `querystring/send_at`. */
const FIELD_FIRST = /^((?:body|querystring|params|headers)(?:\/[^\s:]+)?)[\s:]/

/**
 * A refusal of the request's content. A check outside the schema names one field (a sentence
 * starting with its path): that sentence is also its one detail, so `details` is there whichever
 * check refused. A sentence about the request as a whole has none.
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

/** A path the service has, called with a method it does not have; `Allow` lists the ones it has. */
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
  /** `details` when the refusal is about fields the token may not change. */
  constructor(message: string, details?: ErrorDetail[]) { super('forbidden', 403, message, {}, details) }
}

export class RateLimited extends AppError {
  constructor(retryAfterSeconds: number) {
    super('rate_limited', 429, `Too many requests; retry in ${retryAfterSeconds} s`, { 'retry-after': String(retryAfterSeconds) })
  }
}

/** The billing provider failed (502), or refused the request for a reason of its own (4xx). */
export class ProviderError extends AppError {
  constructor(message: string, statusCode = 502) { super('provider_error', statusCode, message) }
}

/**
 * Temporarily unable to answer (the database unreachable or too slow, the service overloaded or
 * shutting down): retrying after Retry-After is the remedy, unlike `internal`.
 */
export class ServiceUnavailable extends AppError {
  constructor(message: string, retryAfterSeconds = 5) {
    super('unavailable', 503, message, { 'retry-after': String(retryAfterSeconds) })
  }
}
