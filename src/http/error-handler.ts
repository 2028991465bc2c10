import { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, MethodNotAllowed, ServiceUnavailable, type ErrorCode, type ErrorDetail } from '../core/errors.ts'
import { headersOf, HttpRefusal, statusOf } from './error-status.ts'
import { DETAILS_MAX, type Validation } from './validation.ts'
import type { RouteMethods } from './route-methods.ts'

/** The body of every refusal: `{errors, code}`, and `details` when the refusal names fields. */
export function errorBody(mapped: AppError): { errors: string; code: ErrorCode; details?: ErrorDetail[] } {
  return mapped.details && mapped.details.length > 0
    ? { errors: mapped.message, code: mapped.code, details: mapped.details }
    : { errors: mapped.message, code: mapped.code }
}

/**
 * Turns anything thrown into `{errors, code}` with its status: the only place that knows error status codes.
 * An unrouted request is a 405 when its path has routes for other methods, else a 404.
 */
export function installErrorHandler(
  app: FastifyInstance,
  validation?: Pick<Validation, 'problemsAfter'>,
  routes?: RouteMethods,
) {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const mapped = withOtherParts(toAppError(err), err, request, validation)
    const status = statusOf(mapped)
    if (status >= 500) request.log.error({ err }, 'request failed')
    else request.log.info({ code: mapped.code, message: mapped.message }, 'request refused')
    for (const [name, value] of Object.entries(headersOf(mapped))) reply.header(name, value)
    if (status === 413 && !request.raw.complete) lingerOnRefusedBody(request, reply)
    return reply.code(status).send(errorBody(mapped))
  })

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]
    const allowed = routes?.of(request.url) ?? []
    // A route of this method that found nothing (a refused preflight, a missing /docs file) stays a 404.
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      const mapped = new MethodNotAllowed(request.method, path, allowed)
      for (const [name, value] of Object.entries(headersOf(mapped))) reply.header(name, value)
      return reply.code(statusOf(mapped)).send(errorBody(mapped))
    }
    return reply.code(404).send({ errors: `No route ${request.method} ${path}`, code: 'not_found' })
  })
}

function withOtherParts(
  mapped: AppError,
  err: FastifyError,
  request: FastifyRequest,
  validation?: Pick<Validation, 'problemsAfter'>,
): AppError {
  if (!err.validation || !validation) return mapped
  const more = validation.problemsAfter(request, err.validationContext)
  if (more.length === 0) return mapped
  return new HttpRefusal(
    mapped.code,
    statusOf(mapped),
    mapped.message,
    [...(mapped.details ?? []), ...more].slice(0, DETAILS_MAX),
  )
}

const LINGER_MS = 5_000

/**
 * A body refused for its size may still be arriving; closing with unread data makes the kernel
 * reset the connection, and the client often loses the 413. So Node reads and drops the rest for
 * at most LINGER_MS before closing.
 */
export function lingerOnRefusedBody(request: FastifyRequest, reply: FastifyReply) {
  const socket = request.raw.socket
  // An injected request has no connection to keep open.
  if (!(socket instanceof Socket)) return
  reply.removeHeader('connection')
  const timer = setTimeout(() => socket.destroy(), LINGER_MS)
  timer.unref()
  request.raw.once('end', () => clearTimeout(timer))
  socket.once('close', () => clearTimeout(timer))
}

// Errors Fastify raises before a route is found bypass the error handler: same body here.
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const mapped =
    err.code === 'FST_ERR_BAD_URL'
      ? new HttpRefusal('validation_failed', 400, 'The URL is malformed: a percent-encoding does not decode')
      : err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new HttpRefusal('validation_failed', 414, 'A path segment is longer than 200 characters')
        : toAppError(err)
  reply.header('x-request-id', request.id)
  for (const [name, value] of Object.entries(headersOf(mapped))) reply.header(name, value)
  reply.code(statusOf(mapped)).send(errorBody(mapped))
}

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
}

// SQLSTATE classes meaning the database is unavailable or too slow (57014: cancelled at its bound).
const UNAVAILABLE_SQLSTATE = /^(08|53|57P0[1-3]|57014)/
const UNAVAILABLE_NET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'])

export function toAppError(err: FastifyError & { code?: string }): AppError {
  if (err instanceof AppError) return err
  if (err.validation) {
    const details = (err as { details?: ErrorDetail[] }).details
    return new HttpRefusal('validation_failed', 400, err.message, details)
  }
  const code = err.code ?? ''
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return new HttpRefusal('payload_too_large', 413, 'The request body is larger than the limit')
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return new HttpRefusal('unsupported_media_type', 415, 'The request body must be application/json')
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
    return new HttpRefusal('validation_failed', 400, 'The body is empty although its content type is application/json')
  if (
    code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
    code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' ||
    err instanceof SyntaxError
  ) {
    return new HttpRefusal('validation_failed', 400, 'The body is not valid JSON')
  }
  if (isDatabaseUnavailable(err)) return new ServiceUnavailable('The database is unavailable; retry shortly')
  // The services check constraints; these only catch a race between two writers.
  if (code === '23505') return new HttpRefusal('conflict', 409, 'A resource with the same unique value already exists')
  if (code === '23503') return new HttpRefusal('validation_failed', 400, 'A referenced resource does not exist')
  if (/^22/.test(code)) return new HttpRefusal('validation_failed', 400, 'A value is out of range or malformed')
  if (code === '40001' || code === '40P01') return new ServiceUnavailable('A concurrent change conflicted; retry', 1)
  const status = err.statusCode ?? 500
  if (status >= 400 && status < 500) {
    return new HttpRefusal(
      CODE_BY_STATUS[status] ?? 'validation_failed',
      status,
      err.message || 'The request was refused',
    )
  }
  return new HttpRefusal('internal', 500, 'Internal error')
}

// "Query read timeout": no answer within the bound. The last two: the database was closed under the app.
const UNAVAILABLE_MESSAGE = new RegExp(
  [
    'Connection terminated',
    'timeout exceeded when trying to connect',
    'Query read timeout',
    'Client has encountered a connection error',
    'Cannot use a pool after calling end',
    'driver has already been destroyed',
    'PGlite is closed',
  ].join('|'),
)

export function isDatabaseUnavailable(err: { code?: string; message?: string }): boolean {
  const code = err.code ?? ''
  if (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_NET.has(code)) return true
  const message = err.message ?? ''
  return UNAVAILABLE_MESSAGE.test(message)
}

/**
 * While draining (SIGTERM) a request gets `503 {errors, code}` with Retry-After, like every other
 * refusal, instead of Fastify's own answer; Fastify still marks them `Connection: close`.
 */
export function installDraining(app: FastifyInstance) {
  let draining = false
  const start = () => {
    draining = true
  }
  app.addHook('preClose', async () => start())
  app.addHook('onRequest', (_request, _reply, done) => {
    done(
      draining
        ? new ServiceUnavailable('The service is shutting down; retry on another instance or shortly', 1)
        : undefined,
    )
  })
  return { start }
}

const CLIENT_ERRORS: Record<string, [number, string, ErrorCode, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'validation_failed', 'The request was not received in time'],
  HPE_HEADER_OVERFLOW: [
    431,
    'Request Header Fields Too Large',
    'validation_failed',
    'The request headers are larger than the limit',
  ],
}

const refused = new WeakSet<import('node:net').Socket>()

/**
 * Requests Node's parser refuses before Fastify sees them get the same `{errors, code}` body, then
 * the connection is closed gently (FIN, the rest drained for at most LINGER_MS): destroying it with
 * unread data makes the kernel reset it and the client lose the answer.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: import('node:net').Socket) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  if (refused.has(socket)) return
  refused.add(socket)
  const [status, reason, code, message] = CLIENT_ERRORS[err.code ?? ''] ?? [
    400,
    'Bad Request',
    'validation_failed',
    'The request is not valid HTTP',
  ]
  const body = JSON.stringify({ errors: message, code })
  if (!socket.writable) {
    socket.destroy()
    return
  }
  socket.removeAllListeners('data')
  socket.on('data', () => {})
  socket.on('end', () => socket.destroy())
  const timer = setTimeout(() => socket.destroy(), LINGER_MS)
  timer.unref()
  socket.once('close', () => clearTimeout(timer))
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json; ` +
      `charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  )
  socket.resume()
}
