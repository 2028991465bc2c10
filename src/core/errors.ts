// Typed errors services throw; only the error handler knows their status codes.
export const ERROR_CODES = [
  'validation_failed',
  'unauthorized',
  'insufficient_scope',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'provider_error',
  'unavailable',
  'internal',
] as const
/** The Error schema's enum. */
export type ErrorCode = (typeof ERROR_CODES)[number]

export interface ErrorDetail {
  field: string
  message: string
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /**
     * Every problem, when the refusal is about fields (a 400 validation_failed, a 403 forbidden); sent as `details`.
     */
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
    super('validation_failed', message, details ?? (field ? [{ field, message }] : undefined))
  }
}

export class NotFound extends AppError {
  constructor(what: string) {
    super('not_found', `${what} not found`)
  }
}

/** Something that existed and is no more (an expired or withdrawn page): `not_found`, answered as gone. */
export class Gone extends AppError {
  constructor(message: string) {
    super('not_found', message)
  }
}

/** A path the service has, called with a method it does not have; `allowed` lists the ones it has. */
export class MethodNotAllowed extends AppError {
  constructor(
    method: string,
    path: string,
    readonly allowed: readonly string[],
  ) {
    super('method_not_allowed', `${method} is not allowed on ${path}; its methods are ${allowed.join(', ')}`)
  }
}

export class Conflict extends AppError {
  constructor(message: string) {
    super('conflict', message)
  }
}

/** No valid credentials: a bearer token, or the HTTP Basic credentials of `basicRealm`. */
export class Unauthorized extends AppError {
  constructor(
    message = 'A valid bearer token is required',
    readonly basicRealm?: string,
  ) {
    super('unauthorized', message)
  }
}

export class InsufficientScope extends AppError {
  constructor(readonly scope: string) {
    super('insufficient_scope', `The token lacks the scope ${scope}`)
  }
}

export class Forbidden extends AppError {
  /** `details` when the refusal is about fields the token may not change. */
  constructor(message: string, details?: ErrorDetail[]) {
    super('forbidden', message, details)
  }
}

export class PayloadTooLarge extends AppError {
  constructor(message: string) {
    super('payload_too_large', message)
  }
}

export class UnsupportedMediaType extends AppError {
  constructor(message: string) {
    super('unsupported_media_type', message)
  }
}

export class RateLimited extends AppError {
  constructor(readonly retryAfterSeconds: number) {
    super('rate_limited', `Too many requests; retry in ${retryAfterSeconds} s`)
  }
}

export class ProviderError extends AppError {
  constructor(
    message: string,
    readonly outcome: 'failed' | 'refused' | 'conflict' | 'busy' = 'failed',
    readonly retryAfterSeconds?: number,
  ) {
    super('provider_error', message)
  }
}

/** Retrying after Retry-After is the remedy, unlike `internal`. */
export class ServiceUnavailable extends AppError {
  constructor(
    message: string,
    readonly retryAfterSeconds = 5,
  ) {
    super('unavailable', message)
  }
}
