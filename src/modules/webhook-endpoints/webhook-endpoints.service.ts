import { randomUUID } from 'node:crypto'
import { Conflict, NotFound, ValidationError } from '../../http/errors.ts'
import { isEventTypePattern } from '../events/outbox.ts'
import { eventView } from '../events/events.service.ts'
import type { Event } from '../events/events.schemas.ts'
import type { Page, Paged } from '../../http/pagination.ts'
import { newSecret } from './signing.ts'
import { checkTargetUrl } from './targets.ts'
import type { WebhookEndpointsRepository } from './webhook-endpoints.repository.ts'
import type { DeliveryAttempt, WebhookEndpoint, WebhookEndpointInput } from './webhook-endpoints.schemas.ts'

/** As many endpoints as Stripe allows an account. */
export const MAX_ENDPOINTS = 16

type EndpointRow = Awaited<ReturnType<WebhookEndpointsRepository['list']>>[number]
const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null)

function view(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id, company_id: row.company_id, url: row.url, event_types: row.event_types, description: row.description,
    enabled: row.enabled, disabled_reason: row.disabled_reason, created_at: new Date(row.created_at).toISOString(),
  }
}

/**
 * Webhook endpoints of the platform (owner null: every company's events) and of each company
 * (its own events). The owner comes from the path; one owner never sees another's endpoints.
 */
export function createWebhookEndpointsService(deps: { repo: WebhookEndpointsRepository; allowPrivateTargets: boolean; wake?: () => void }) {
  const { repo } = deps

  async function find(owner: string | null, id: string) {
    const row = await repo.find(owner, id)
    if (!row) throw new NotFound('Webhook endpoint')
    return row
  }

  return {
    async create(owner: string | null, input: WebhookEndpointInput): Promise<WebhookEndpoint & { secret: string }> {
      const url = checkTargetUrl(input.url.trim(), deps.allowPrivateTargets)
      const types = input.event_types ?? []
      types.forEach((type, i) => {
        if (!isEventTypePattern(type)) throw new ValidationError(`body/event_types/${i} must be an event type (company.created, ...) or a resource and .* (subscription.*); "${type}" is neither`)
      })
      if (await repo.count(owner) >= MAX_ENDPOINTS) throw new Conflict(`At most ${MAX_ENDPOINTS} webhook endpoints; delete one first`)
      const secret = newSecret()
      const row = await repo.insert({
        id: randomUUID(), company_id: owner, url: url.toString(), event_types: types, description: input.description ?? null, secret, enabled: input.enabled ?? true,
      })
      return { ...view(row), secret }
    },

    list: async (owner: string | null) => (await repo.list(owner)).map(view),

    get: async (owner: string | null, id: string) => view(await find(owner, id)),

    async delete(owner: string | null, id: string) {
      if (!(await repo.delete(owner, id))) throw new NotFound('Webhook endpoint')
    },

    async deliveries(owner: string | null, id: string, page: Page): Promise<Paged<DeliveryAttempt>> {
      await find(owner, id)
      const paged = await repo.attempts(id, page)
      return {
        items: paged.items.map((r) => ({
          id: String(r.id), delivery_id: r.delivery_id, event_id: r.event_id, event_type: r.event_type, attempt: r.attempt,
          started_at: new Date(r.started_at).toISOString(), status: r.outcome, status_code: r.status_code, duration_ms: r.duration_ms,
          error: r.error, next_retry_at: iso(r.next_retry_at),
        })),
        next: paged.next,
      }
    },

    /** Sends a `ping` event to this endpoint only; answers the event. */
    async ping(owner: string | null, id: string): Promise<Event> {
      const endpoint = await find(owner, id)
      if (!endpoint.enabled) throw new Conflict('The endpoint is disabled: it sends nothing, a ping included')
      const event = await repo.ping(endpoint)
      deps.wake?.()
      return eventView(event)
    },
  }
}

export type WebhookEndpointsService = ReturnType<typeof createWebhookEndpointsService>
