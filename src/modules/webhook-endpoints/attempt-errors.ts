import type { AttemptOutcome } from '../../db/tables.ts'

// An attempt's `error` is a code, never the error's text: that names what our network saw
// (internal names, addresses, ports), which is ours to keep.
export type AttemptError =
  | 'timeout'
  | 'connection_refused'
  | 'dns_failure'
  | 'tls_error'
  | 'invalid_response'
  | `http_${number}`

export const ATTEMPT_ERROR_PATTERN =
  '^(timeout|connection_refused|dns_failure|tls_error|invalid_response|http_[1-5][0-9]{2})$'
const ATTEMPT_ERROR = new RegExp(ATTEMPT_ERROR_PATTERN)

const DNS_FAILURE = /^(ENOTFOUND|EAI_|ENODATA|ESERVFAIL|ENOTIMP|EREFUSED|EBADNAME)/
const NO_CONNECTION = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EADDRNOTAVAIL'])
const TIMED_OUT = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])
const TLS_FAILURE =
  /^(ERR_TLS_|ERR_SSL_|ERR_OSSL_|EPROTO$|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH$|INVALID_CA$)/

export const httpError = (status: number): AttemptError => `http_${status}`

// An error code inside stored text that is not itself a code.
const ERROR_CODE =
  /\b(E[A-Z_]+|ERR_[A-Z_]+|UND_ERR_[A-Z_]+|CERT_[A-Z_]+|UNABLE_TO_[A-Z_]+|DEPTH_ZERO_[A-Z_]+|SELF_SIGNED_[A-Z_]+)\b/

export function errorCodeOf(err: unknown): AttemptError {
  for (
    let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 4;
    e = e.cause as typeof e, depth++
  ) {
    const code = typeof e.code === 'string' ? e.code : ''
    if (DNS_FAILURE.test(code)) return 'dns_failure'
    if (NO_CONNECTION.has(code)) return 'connection_refused'
    if (TIMED_OUT.has(code)) return 'timeout'
    if (TLS_FAILURE.test(code)) return 'tls_error'
  }
  // Connected, then closed or answered with something that is not HTTP.
  return 'invalid_response'
}

/** A stored code as it is; any other stored text as the code its outcome means, never itself. */
export function shownError(outcome: AttemptOutcome, statusCode: number | null, stored: string | null): string | null {
  if (stored === null || ATTEMPT_ERROR.test(stored)) return stored
  if (outcome === 'lost' || outcome === 'succeeded' || outcome === 'pending') return null
  if (outcome === 'failed' && statusCode !== null) return httpError(statusCode)
  if (outcome === 'timeout') return 'timeout'
  if (outcome === 'refused') return 'connection_refused'
  return errorCodeOf({
    code: ERROR_CODE.exec(stored)?.[1],
  })
}
