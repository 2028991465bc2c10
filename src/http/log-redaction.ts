import type { FastifyBaseLogger } from 'fastify'
import type { IncomingMessage } from 'node:http'
import type { ChildLoggerOptions } from 'pino'
import { traceBindings } from './trace-context.ts'
import { lazyChild } from './lazy-child-logger.ts'

/**
 * A hosted page's URL is its capability: `/hosted/<kind>/<token>`, the token 32 random bytes
 * in base64url (43 characters). Whatever a request to it looks like (any method, HEAD, an
 * unknown action, a 404, the token in a query), its log lines carry the URL with every such run
 * replaced. Done where each request's logger is made, so that Fastify's own lines (incoming
 * request, request completed, errors) are covered as well as ours.
 */
const TOKEN = /[A-Za-z0-9_-]{43,}/g

export const redactUrl = (url: string) => url.replace(TOKEN, '[redacted]')

interface LoggedRequest { method?: string; url?: string; host?: string; ip?: string; socket?: { remotePort?: number } }

/** Fastify's request serializer, with the URL redacted. */
function redactedRequest(req: LoggedRequest) {
  return { method: req.method, url: redactUrl(req.url ?? ''), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort }
}

/**
 * Fastify's childLoggerFactory: requests whose URL mentions hosted pages log it redacted; a
 * request with a W3C traceparent logs its trace id on every line (trace-context.ts). The child
 * is made at the request's first line, if any (lazy-child-logger.ts).
 */
export function redactingChildLogger(logger: FastifyBaseLogger, given: Record<string, unknown>, options: ChildLoggerOptions, rawReq: IncomingMessage): FastifyBaseLogger {
  const trace = traceBindings(rawReq.headers.traceparent)
  const bindings = trace ? { ...given, ...trace } : given
  const childOptions = /hosted/i.test(rawReq.url ?? '') ? { ...options, serializers: { ...options.serializers, req: redactedRequest } } : options
  // Made only when the request writes a line (lazy-child-logger.ts).
  return lazyChild(logger, () => logger.child(bindings, childOptions), childOptions)
}
