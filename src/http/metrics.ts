import type { FastifyInstance } from 'fastify'
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { WriteBatchObserver } from '../db/write-batches.ts'

/** Prometheus metrics at /metrics: the process's own, request durations by route, and write batches. */
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

  const batches = new Histogram({
    name: 'db_write_batch_items',
    help: 'Items per statement of the writes that share one (src/db/write-batches.ts), by what they write and whether the statement failed as a whole',
    labelNames: ['name', 'outcome'],
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: [registry],
  })
  const writeBatches: WriteBatchObserver = (name, items, outcome) => batches.observe({ name, outcome }, items)

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
  return { registry, writeBatches }
}
