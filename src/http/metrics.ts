import type { FastifyInstance } from 'fastify'
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/** Prometheus metrics at /metrics: the process's own and one histogram of request durations by route. */
export function installMetrics(app: FastifyInstance) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Duration of HTTP requests by route and status',
    labelNames: ['method', 'route', 'status_code'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  })

  app.addHook('onResponse', async (request, reply) => {
    duration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unknown', status_code: reply.statusCode },
      reply.elapsedTime / 1000,
    )
  })

  app.get('/metrics', {
    config: { access: 'none' },
    schema: {
      operationId: 'metrics', tags: ['Operations'], summary: 'Prometheus metrics (text exposition format)',
      // Only the 200 is text: `produces` would also label the JSON error answers text/plain.
      response: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } } },
    },
  }, async (_request, reply) => {
    reply.type(registry.contentType)
    return registry.metrics()
  })
  return registry
}
