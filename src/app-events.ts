import type { FastifyBaseLogger } from 'fastify'
import type { Registry } from 'prom-client'
import type { Config } from './config.ts'
import type { Clock } from './core/clock.ts'
import type { Database } from './db/database.ts'
import type { Scheduler } from './jobs/scheduler.ts'
import { createEventsRepository } from './modules/events/events.repository.ts'
import { createEventsService } from './modules/events/events.service.ts'
import { createEventPresenter, type ObjectPresenters } from './modules/events/event-objects.ts'
import { createEventPruning } from './modules/events/events.pruning.ts'
import { createWebhookEndpointsRepository } from './modules/webhook-endpoints/webhook-endpoints.repository.ts'
import { createWebhookEndpointsService } from './modules/webhook-endpoints/webhook-endpoints.service.ts'
import { createWebhookDelivery } from './modules/webhook-endpoints/delivery.ts'
import { installWebhookMetrics } from './modules/webhook-endpoints/webhook-metrics.ts'

/** Events are written by the tables' triggers; these services read, prune and send them. */
export function createEventServices(deps: {
  db: Database['db']
  config: Pick<Config, 'EVENTS_RETENTION_DAYS' | 'WEBHOOK_TIMEOUT_MS' | 'WEBHOOK_ALLOW_PRIVATE_TARGETS'>
  realClock: Clock
  scheduler: Scheduler
  log: FastifyBaseLogger
  registry: Registry
  objects: ObjectPresenters
}) {
  const { db, config, realClock } = deps
  const presenter = createEventPresenter(deps.objects)
  const eventsRepo = createEventsRepository(db)
  const events = createEventsService({ repo: eventsRepo, presenter })
  const endpointsRepo = createWebhookEndpointsRepository(db)
  const eventPruning = createEventPruning({
    repo: eventsRepo,
    alsoPrune: [endpointsRepo.pruneDelivered],
    scheduler: deps.scheduler,
    clock: realClock,
    retentionDays: config.EVENTS_RETENTION_DAYS,
  })
  const webhookDelivery = createWebhookDelivery({
    repo: endpointsRepo,
    clock: realClock,
    log: deps.log,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    allowPrivateTargets: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    observer: installWebhookMetrics(deps.registry, endpointsRepo, () => realClock.now()),
    presenter,
  })
  const webhookEndpoints = createWebhookEndpointsService({
    repo: endpointsRepo,
    allowPrivateTargets: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    wake: () => webhookDelivery.wake(),
    changed: () => webhookDelivery.endpointsChanged(),
    presenter,
  })
  return { events, eventPruning, webhookDelivery, webhookEndpoints }
}
