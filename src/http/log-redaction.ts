import type { FastifyBaseLogger } from 'fastify'
import type { IncomingMessage } from 'node:http'
import type { ChildLoggerOptions } from 'pino'
import { traceBindings } from './trace-context.ts'
import { lazyChild } from './lazy-child-logger.ts'

/**
 * A hosted page's URL is its capability (a 43-character token): every log line of every request
 * carries the URL with such runs replaced. Done where each request's logger is made, so Fastify's
 * own lines are covered too.
 */
const TOKEN = /[A-Za-z0-9_-]{43,}/g

export const redactUrl = (url: string) => url.replace(TOKEN, '[redacted]')

interface LoggedRequest {
  method?: string
  url?: string
  host?: string
  ip?: string
  socket?: { remotePort?: number }
}

function redactedRequest(req: LoggedRequest) {
  return {
    method: req.method,
    url: redactUrl(req.url ?? ''),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }
}

/** Redacts hosted page URLs and logs a W3C traceparent's trace id on every line. */
export function redactingChildLogger(
  logger: FastifyBaseLogger,
  given: Record<string, unknown>,
  options: ChildLoggerOptions,
  rawReq: IncomingMessage,
): FastifyBaseLogger {
  const trace = traceBindings(rawReq.headers.traceparent)
  const bindings = trace ? { ...given, ...trace } : given
  const childOptions = /hosted/i.test(rawReq.url ?? '')
    ? { ...options, serializers: { ...options.serializers, req: redactedRequest } }
    : options
  // Made only when the request writes a line.
  return lazyChild(logger, () => logger.child(bindings, childOptions), childOptions)
}
