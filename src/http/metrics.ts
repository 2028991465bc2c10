import { timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { WriteBatchObserver } from '../db/write-batches.ts'
import type { ProviderObserver } from '../modules/billing/index.ts'
import { Unauthorized } from '../core/errors.ts'

/** Read when Prometheus scrapes, rather than counted as things happen. */
export interface MetricsSources {
  backlog(): Promise<{ due: number; oldestDueSeconds: number }>
  pool(): { total: number; idle: number; waiting: number }
}

/** Prometheus metrics at /metrics (docs/operations.md); with METRICS_TOKEN set, only that bearer reads them. */
export function installMetrics(app: FastifyInstance, options: { token?: string } = {}) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const registers = [registry]
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Duration of HTTP requests by route and status',
    labelNames: ['method', 'route', 'status_code'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  })

  const batches = new Histogram({
    name: 'db_write_batch_items',
    help:
      'Items per statement of the writes that share one (src/db/write-batches.ts), by what they write and whether ' +
      'the statement failed as a whole',
    labelNames: ['name', 'outcome'],
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers,
  })
  const writeBatches: WriteBatchObserver = (name, items, outcome) => batches.observe({ name, outcome }, items)

  const jobFailures = new Counter({
    name: 'scheduler_job_failures_total',
    help: 'Jobs that failed (and will be retried with a backoff), by kind',
    labelNames: ['kind'],
    registers,
  })
  const providerCalls = new Histogram({
    name: 'billing_provider_call_duration_seconds',
    help: 'Calls to a billing provider (local engine, Chargebee) by provider, operation and outcome (ok, error)',
    labelNames: ['provider', 'operation', 'outcome'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  })
  const providerErrors = new Counter({
    name: 'billing_provider_errors_total',
    help: 'Billing provider calls that failed, by provider and operation',
    labelNames: ['provider', 'operation'],
    registers,
  })
  const reconciliationDrift = new Counter({
    name: 'chargebee_reconciliation_drift_total',
    help:
      'What the Chargebee reconciliation found out of step and corrected (subscription, invoice, credit_note) or ' +
      'could not find at Chargebee (missing_subscription)',
    labelNames: ['kind'],
    registers,
  })
  const rateLimited = new Counter({
    name: 'rate_limit_refusals_total',
    help: 'Requests refused with 429 by the rate limit',
    registers,
  })
  const readCacheAnswers = new Counter({
    name: 'read_cache_answers_total',
    help:
      'Answers of cached reads, by read and outcome: hit (from the cache), miss (read, and kept when it safely ' +
      'could be), uncached (the cache off or not listening)',
    labelNames: ['read', 'outcome'],
    registers,
  })
  const shed = new Counter({
    name: 'load_shed_refusals_total',
    help: 'Requests refused with 503 by load shedding, by what was over its threshold',
    labelNames: ['reason'],
    registers,
  })

  const observeProvider: ProviderObserver = (provider, operation, seconds, failed) => {
    providerCalls.observe({ provider, operation, outcome: failed ? 'error' : 'ok' }, seconds)
    if (failed) providerErrors.inc({ provider, operation })
  }

  function watch(sources: MetricsSources) {
    new Gauge({
      name: 'scheduler_jobs_due',
      help: 'Jobs whose time has come and that have not run yet',
      registers,
      async collect() {
        this.set((await sources.backlog()).due)
      },
    })
    new Gauge({
      name: 'scheduler_oldest_due_seconds',
      help: 'How long the oldest due job has been waiting (0: none)',
      registers,
      async collect() {
        this.set((await sources.backlog()).oldestDueSeconds)
      },
    })
    new Gauge({
      name: 'db_pool_connections_in_use',
      help: 'Database connections checked out of the pool',
      registers,
      collect() {
        const p = sources.pool()
        this.set(p.total - p.idle)
      },
    })
    new Gauge({
      name: 'db_pool_connections_waiting',
      help: 'Requests waiting for a database connection',
      registers,
      collect() {
        this.set(sources.pool().waiting)
      },
    })
  }

  app.addHook('onResponse', async (request, reply) => {
    duration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unknown', status_code: reply.statusCode },
      reply.elapsedTime / 1000,
    )
  })

  const expected = options.token === undefined ? undefined : Buffer.from(`Bearer ${options.token}`)
  app.get(
    '/metrics',
    {
      config: { access: 'none' },
      schema: {
        operationId: 'metrics',
        tags: ['Operations'],
        summary: 'Prometheus metrics (text exposition format)',
        description:
          "The process's metrics for Prometheus. Open, unless the service has METRICS_TOKEN: then only a request " +
          'with `Authorization: Bearer <METRICS_TOKEN>` reads them (401 otherwise). Changes nothing.',
        // Only the 200 is text: `produces` would also label the JSON errors text/plain.
        response: {
          200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } },
        },
      },
    },
    async (request, reply) => {
      if (expected) {
        const given = Buffer.from(request.headers.authorization ?? '')
        if (given.length !== expected.length || !timingSafeEqual(given, expected))
          throw new Unauthorized('/metrics needs the METRICS_TOKEN of the service as a Bearer token')
      }
      reply.type(registry.contentType)
      return registry.metrics()
    },
  )
  return {
    registry,
    writeBatches,
    watch,
    observeProvider,
    jobFailed: (kind: string) => jobFailures.inc({ kind }),
    reconciliationDrift: (kind: string) => reconciliationDrift.inc({ kind }),
    rateLimited: () => rateLimited.inc(),
    readCacheAnswer: (read: string, outcome: 'hit' | 'miss' | 'uncached') => readCacheAnswers.inc({ read, outcome }),
    shed: (reason: string) => shed.inc({ reason }),
  }
}
