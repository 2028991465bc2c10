import { Counter, Gauge, type Registry } from 'prom-client'
import type { DeliveryObserver } from './delivery.ts'
import type { WebhookEndpointsRepository } from './webhook-endpoints.repository.ts'

/**
 * Event counts are read from the log at each scrape (triggers write events), service-wide: take the
 * max across instances, not the sum. Deliveries are this instance's; the oldest pending age is per
 * endpoint, service-wide.
 */
export function installWebhookMetrics(
  registry: Registry,
  repo: Pick<WebhookEndpointsRepository, 'eventsSince' | 'oldestPending'>,
  now: () => Date,
): DeliveryObserver {
  let seen: number | undefined
  const events = new Counter({
    name: 'events_written_total',
    help: 'Events written to the event log, by type (service-wide, counted from the log since this process started)',
    labelNames: ['type'],
    registers: [registry],
    async collect() {
      const { counts, seq } = await repo.eventsSince(seen)
      seen = seq
      for (const { type, n } of counts) this.inc({ type }, n)
    },
  })
  void events
  // Counted here per attempt and handed to the counter at each scrape: prom-client's inc() with a
  // label hashes and validates the labels at every call, ten attempts per change. (In one profile
  // the outcome recorder's add(), which called it, had 3 % of a delivering instance's CPU as its
  // own time; how much of that was inc(), inlined there, the profile cannot tell.)
  const unscraped = new Map<string, number>()
  new Counter({
    name: 'webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts of this instance, by outcome (succeeded, failed, timeout, error, refused)',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      for (const [outcome, n] of unscraped) this.inc({ outcome }, n)
      unscraped.clear()
    },
  })
  new Gauge({
    name: 'webhook_oldest_pending_delivery_seconds',
    help: 'Age of the oldest delivery not yet delivered nor given up, per endpoint',
    labelNames: ['endpoint_id'],
    registers: [registry],
    async collect() {
      this.reset()
      for (const row of await repo.oldestPending()) {
        if (row.oldest)
          this.set(
            { endpoint_id: row.endpoint_id },
            Math.max(0, (now().getTime() - new Date(row.oldest as unknown as string).getTime()) / 1000),
          )
      }
    },
  })
  return {
    attempt: (outcome) => {
      unscraped.set(outcome, (unscraped.get(outcome) ?? 0) + 1)
    },
  }
}
