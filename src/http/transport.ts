import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from '../config.ts'
import { corsOrigins, trustProxy } from '../config-values.ts'
import { installCors } from './cors.ts'
import { installValidation } from './validation.ts'
import { installRequestLimits } from './request-limits.ts'
import { installUuidCase } from './uuids.ts'
import { createLazyCompilers } from './schema-compilers.ts'
import { indexRouteMethods } from './route-methods.ts'
import { clientErrorHandler, frameworkErrors, installDraining, installErrorHandler } from './error-handler.ts'
import { installMetrics } from './metrics.ts'
import { installOpenApi } from './openapi.ts'
import { installLoadShedding } from './load-shedding.ts'
import { createReadiness } from './shutdown.ts'
import { redactingChildLogger } from './log-redaction.ts'

/**
 * The Fastify instance and what every route goes through before a module's routes are added: request ids,
 * timeouts, CORS, validation, request limits, error mapping, draining, OpenAPI, metrics and load shedding.
 */

const REQUEST_ID = /^[A-Za-z0-9\-_.:]{1,100}$/
const ROUTER_OPTIONS = { ignoreTrailingSlash: true, maxParamLength: 200 }

export async function createTransport(config: Config, logger: FastifyBaseLogger | boolean | undefined) {
  const compilers = createLazyCompilers()
  const app = Fastify({
    loggerInstance: typeof logger === 'object' ? logger : undefined,
    logger: typeof logger === 'object' ? undefined : logger === false ? false : { level: config.LOG_LEVEL },
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: trustProxy(config.TRUST_PROXY),
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    // Draining answers in the service's own error shape (http/error-handler.ts).
    return503OnClosing: false,
    clientErrorHandler,
    // Node checks these timeouts only every connectionsCheckingInterval.
    http: {
      headersTimeout: Math.min(config.HEADERS_TIMEOUT_MS, config.REQUEST_TIMEOUT_MS),
      connectionsCheckingInterval: 1000,
    },
    routerOptions: ROUTER_OPTIONS,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    frameworkErrors,
    // Hosted page tokens never reach the log.
    childLoggerFactory: redactingChildLogger,
    schemaController: { compilersFactory: { buildSerializer: compilers.buildSerializer } },
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Before any route, so a wrong method's 405 lists every method, the preflight's included.
  const routeMethods = indexRouteMethods(app, ROUTER_OPTIONS)
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })
  // First of the request hooks: a preflight is answered before auth and limits.
  await installCors(app, corsOrigins(config.CORS_ORIGINS))

  const validation = installValidation(app, compilers)
  installRequestLimits(app)
  installUuidCase(app)
  installErrorHandler(app, validation, routeMethods)
  installDraining(app)
  const readiness = createReadiness(app)
  await installOpenApi(app, { serverUrl: config.PUBLIC_BASE_URL })
  const metrics = installMetrics(app, { token: config.METRICS_TOKEN })
  await installLoadShedding(
    app,
    {
      maxInFlight: config.SHED_MAX_IN_FLIGHT,
      maxEventLoopDelayMs: config.SHED_EVENT_LOOP_DELAY_MS,
      maxHeapUsedBytes: config.SHED_HEAP_USED_BYTES,
      retryAfterSeconds: config.SHED_RETRY_AFTER_SECONDS,
    },
    metrics.shed,
  )
  return { app, compilers, readiness, metrics }
}
