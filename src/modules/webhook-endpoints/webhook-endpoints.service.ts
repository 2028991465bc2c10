import { randomUUID } from 'node:crypto'
import { Conflict, InsufficientScope, NotFound, ValidationError } from '../../http/errors.ts'
import { areaOf } from '../events/event-access.ts'
import { isEventTypePattern } from '../events/outbox.ts'
import { eventView } from '../events/events.service.ts'
import { EVENTS_PAGE, type Event } from '../events/events.schemas.ts'
import type { Page, Paged } from '../../http/pagination.ts'
import { newSecret } from './signing.ts'
import { checkTargetUrl } from './targets.ts'
import { shownError } from './attempt-errors.ts'
import type { WebhookEndpointsRepository } from './webhook-endpoints.repository.ts'
import type { DeliveryAttempt, SecretRotation, WebhookEndpoint, WebhookEndpointInput, WebhookEndpointUpdate } from './webhook-endpoints.schemas.ts'

/** How long a rotated-out secret keeps signing by default: a day to roll the new one out. */
export const DEFAULT_ROTATION_GRACE_S = 86_400

/** As many endpoints as Stripe allows an account. */
export const MAX_ENDPOINTS = 16

type EndpointRow = Awaited<ReturnType<WebhookEndpointsRepository['list']>>[number]
const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null)

function view(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id, company_id: row.company_id, url: row.url, event_types: row.event_types, description: row.description,
    enabled: row.enabled, disabled_reason: row.disabled_reason, created_at: new Date(row.created_at).toISOString(),
    // Past its time, the replaced secret signs nothing (delivery.ts): not shown either.
    previous_secret_expires_at: row.previous_secret_expires_at && new Date(row.previous_secret_expires_at) > new Date() ? iso(row.previous_secret_expires_at) : null,
  }
}

/**
 * Webhook endpoints of the platform (owner null: every company's events) and of each company
 * (its own events). The owner comes from the path; one owner never sees another's endpoints.
 */
export function createWebhookEndpointsService(deps: {
  repo: WebhookEndpointsRepository
  allowPrivateTargets: boolean
  /** A delivery pass soon (a ping's event is due now). */
  wake?: () => void
  /** An endpoint was created or enabled: the delivery loop takes one for enabled without a look. */
  changed?: () => void
}) {
  const { repo } = deps

  async function find(owner: string | null, id: string) {
    const row = await repo.find(owner, id)
    if (!row) throw new NotFound('Webhook endpoint')
    return row
  }

  /**
   * The types or patterns, each an event type or `<resource>.*`, each of a resource the token may
   * read (`readable`: undefined for a platform token, which reads every one).
   */
  function checkTypes(types: string[], readable: readonly string[] | undefined) {
    types.forEach((type, i) => {
      if (!isEventTypePattern(type)) throw new ValidationError(`body/event_types/${i} must be an event type (company.created, ...) or a resource and .* (subscription.*); "${type}" is neither`)
    })
    const unreadable = readable && types.find((type) => !readable.includes(type.split('.')[0]!))
    if (unreadable) throw new InsufficientScope(`read:${areaOf(unreadable)}`)
    return types
  }

  return {
    /**
     * `readable`: the event resources the creating token may read (a company token's); the
     * endpoint is sent only those, whatever it asks for (docs/webhooks.md). Undefined: every one.
     */
    async create(owner: string | null, input: WebhookEndpointInput, readable?: readonly string[]): Promise<WebhookEndpoint & { secret: string }> {
      const url = checkTargetUrl(input.url.trim(), deps.allowPrivateTargets)
      const types = checkTypes(input.event_types ?? [], readable)
      if (await repo.count(owner) >= MAX_ENDPOINTS) throw new Conflict(`At most ${MAX_ENDPOINTS} webhook endpoints; delete one first`)
      const secret = newSecret()
      const row = await repo.insert({
        id: randomUUID(), company_id: owner, url: url.toString(), event_types: types, description: input.description ?? null, secret, enabled: input.enabled ?? true,
        resources: readable ? [...readable] : null,
      })
      deps.changed?.()
      return { ...view(row), secret }
    },

    /**
     * Changes the fields given. `enabled: true` re-enables an endpoint (the disabling reason is
     * cleared); what was written while it was disabled stays unsent (the event log has it).
     */
    async update(owner: string | null, id: string, input: WebhookEndpointUpdate, readable?: readonly string[]): Promise<WebhookEndpoint> {
      const changes: Parameters<WebhookEndpointsRepository['update']>[2] = {}
      if (input.url !== undefined) changes.url = checkTargetUrl(input.url.trim(), deps.allowPrivateTargets).toString()
      // The resources recorded at creation stay: a change of types cannot widen what is sent.
      if (input.event_types !== undefined) changes.event_types = checkTypes(input.event_types, readable)
      if (input.description !== undefined) changes.description = input.description
      if (input.enabled !== undefined) {
        changes.enabled = input.enabled
        changes.disabled_reason = input.enabled ? null : `Disabled through the API at ${new Date().toISOString()}`
      }
      const row = Object.keys(changes).length > 0 ? await repo.update(owner, id, changes) : await repo.find(owner, id)
      if (!row) throw new NotFound('Webhook endpoint')
      if (changes.enabled) deps.changed?.()
      return view(row)
    },

    /** A new secret, shown in this answer only; the replaced one signs beside it for `previous_secret_expires_in` seconds. */
    async rotateSecret(owner: string | null, id: string, input: SecretRotation): Promise<WebhookEndpoint & { secret: string }> {
      const grace = input.previous_secret_expires_in ?? DEFAULT_ROTATION_GRACE_S
      const secret = newSecret()
      // Real time, as the deliveries that sign with it (delivery.ts).
      const row = await repo.rotateSecret(owner, id, secret, grace > 0 ? new Date(Date.now() + grace * 1000) : null)
      if (!row) throw new NotFound('Webhook endpoint')
      return { ...view(row), secret }
    },

    list: async (owner: string | null) => (await repo.list(owner)).map(view),

    get: async (owner: string | null, id: string) => view(await find(owner, id)),

    async delete(owner: string | null, id: string) {
      if (!(await repo.delete(owner, id))) throw new NotFound('Webhook endpoint')
    },

    async deliveries(owner: string | null, id: string, page: Page): Promise<Paged<DeliveryAttempt>> {
      await find(owner, id)
      // Never answered whole (the route's default limit): a page of the default size.
      const paged = await repo.attempts(id, { ...page, limit: page.limit ?? EVENTS_PAGE })
      return {
        items: paged.items.map((r) => ({
          id: String(r.id), delivery_id: r.delivery_id, event_id: r.event_id, event_type: r.event_type, attempt: r.attempt,
          started_at: new Date(r.started_at).toISOString(), status: r.outcome, status_code: r.status_code, duration_ms: r.duration_ms,
          error: shownError(r.outcome, r.status_code, r.error), next_retry_at: iso(r.next_retry_at),
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
