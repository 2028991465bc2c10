import { randomUUID } from 'node:crypto'
import { Conflict, InsufficientScope, NotFound, ValidationError } from '../../core/errors.ts'
import { areaOf } from '../events/event-access.ts'
import { EVENT_RESOURCES, isEventTypePattern } from '../events/outbox.ts'
import type { EventPresenter } from '../events/event-objects.ts'
import { EVENTS_PAGE, type Event } from '../events/events.schemas.ts'
import type { Page, Paged } from '../../core/paging.ts'
import { newSecret } from './signing.ts'
import { checkTargetUrl } from './targets.ts'
import { shownError } from './attempt-errors.ts'
import type { EndpointChanges, WebhookEndpointsRepository } from './webhook-endpoints.repository.ts'
import type {
  DeliveryAttempt,
  SecretRotation,
  WebhookEndpoint,
  WebhookEndpointInput,
  WebhookEndpointUpdate,
} from './webhook-endpoints.schemas.ts'

/** A day to roll the new secret out. */
export const DEFAULT_ROTATION_GRACE_S = 86_400

export const MAX_ENDPOINTS = 16

type EndpointRow = Awaited<ReturnType<WebhookEndpointsRepository['list']>>[number]
const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null)

function view(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    company_id: row.company_id,
    url: row.url,
    event_types: row.event_types,
    description: row.description,
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    created_by: row.created_by,
    created_at: new Date(row.created_at).toISOString(),
    // Past its time the replaced secret signs nothing, so it is not shown either.
    previous_secret_expires_at:
      row.previous_secret_expires_at && new Date(row.previous_secret_expires_at) > new Date()
        ? iso(row.previous_secret_expires_at)
        : null,
  }
}

/** Those its types name (every one when empty), among those its creator could read (null: every one). */
function resourcesSent(endpoint: { event_types: readonly string[]; resources: readonly string[] | null }): string[] {
  const named = (resource: string) =>
    endpoint.event_types.length === 0 || endpoint.event_types.some((type) => type.split('.')[0] === resource)
  return EVENT_RESOURCES.filter(
    (resource) => named(resource) && (endpoint.resources === null || endpoint.resources.includes(resource)),
  )
}

// Who points an endpoint somewhere must be able to read all it is sent, or a token could route to
// itself events it may not read (docs/adr/0001-webhook-endpoint-access.md).
function checkMayReadSent(
  endpoint: { event_types: readonly string[]; resources: readonly string[] | null },
  readable: readonly string[] | undefined,
) {
  const unreadable = readable && resourcesSent(endpoint).find((resource) => !readable.includes(resource))
  if (unreadable) throw new InsufficientScope(`read:${areaOf(unreadable)}`)
}

const CompanyDisabled = () =>
  new Conflict('The company is disabled: its webhook endpoints send nothing until it is enabled')

/** `readable` undefined: a platform token, which reads every resource. */
export interface Caller {
  clientId: string
  readable?: readonly string[]
}

/** Webhook endpoints of the platform (owner null: every company's events) and of each company. */
export function createWebhookEndpointsService(deps: {
  repo: WebhookEndpointsRepository
  allowPrivateTargets: boolean
  wake?: () => void
  changed?: () => void
  presenter: EventPresenter
}) {
  const { repo } = deps

  async function find(owner: string | null, id: string) {
    const row = await repo.find(owner, id)
    if (!row) throw new NotFound('Webhook endpoint')
    return row
  }

  function checkTypes(types: string[], readable: readonly string[] | undefined) {
    types.forEach((type, i) => {
      if (!isEventTypePattern(type))
        throw new ValidationError(
          `body/event_types/${i} must be an event type (company.created, ...) or a resource and .* ` +
            `(subscription.*); "${type}" is neither`,
        )
    })
    const unreadable = readable && types.find((type) => !readable.includes(type.split('.')[0]!))
    if (unreadable) throw new InsufficientScope(`read:${areaOf(unreadable)}`)
    return types
  }

  return {
    /** The caller's client answers for the endpoint (`created_by`), which is sent only what that token may read. */
    async create(
      owner: string | null,
      input: WebhookEndpointInput,
      caller: Caller,
    ): Promise<WebhookEndpoint & { secret: string }> {
      const url = checkTargetUrl(input.url.trim(), deps.allowPrivateTargets)
      const types = checkTypes(input.event_types ?? [], caller.readable)
      const secret = newSecret()
      const row = await repo.transaction(async (writes) => {
        if (await writes.companyDisabled(owner)) throw CompanyDisabled()
        if ((await writes.count(owner)) >= MAX_ENDPOINTS)
          throw new Conflict(`At most ${MAX_ENDPOINTS} webhook endpoints; delete one first`)
        return writes.insert({
          id: randomUUID(),
          company_id: owner,
          url: url.toString(),
          event_types: types,
          description: input.description ?? null,
          secret,
          enabled: input.enabled ?? true,
          resources: caller.readable ? [...caller.readable] : null,
          created_by: caller.clientId,
        })
      })
      deps.changed?.()
      return { ...view(row), secret }
    },

    /**
     * Changes the fields given. A new `url` or `event_types`, or re-enabling, needs a caller that may
     * read all it is then sent, and makes that client `created_by`. Events written while disabled stay unsent.
     */
    async update(
      owner: string | null,
      id: string,
      input: WebhookEndpointUpdate,
      caller: Caller,
    ): Promise<WebhookEndpoint> {
      const url =
        input.url === undefined ? undefined : checkTargetUrl(input.url.trim(), deps.allowPrivateTargets).toString()
      const types = input.event_types === undefined ? undefined : checkTypes(input.event_types, caller.readable)
      const { row, enabled } = await repo.transaction(async (writes) => {
        const current = await writes.lock(owner, id)
        if (!current) throw new NotFound('Webhook endpoint')
        const enabling = input.enabled === true && !current.enabled
        const changes: EndpointChanges = {}
        if (url !== undefined) changes.url = url
        // The resources recorded at creation stay: new types cannot widen what is sent.
        if (types !== undefined) changes.event_types = types
        if (url !== undefined || types !== undefined || enabling) {
          checkMayReadSent({ event_types: types ?? current.event_types, resources: current.resources }, caller.readable)
          // Revoking that client stops the endpoint.
          changes.created_by = caller.clientId
        }
        if (input.description !== undefined) changes.description = input.description
        if (enabling) {
          if (await writes.companyDisabled(owner)) throw CompanyDisabled()
          Object.assign(changes, { enabled: true, disabled_reason: null })
        }
        if (input.enabled === false && current.enabled)
          Object.assign(changes, {
            enabled: false,
            disabled_reason: `Disabled through the API at ${new Date().toISOString()}`,
          })
        return { row: Object.keys(changes).length > 0 ? await writes.update(id, changes) : current, enabled: enabling }
      })
      if (enabled) deps.changed?.()
      return view(row)
    },

    /** A new secret, shown in this answer only; the replaced one signs beside it during the grace. */
    async rotateSecret(
      owner: string | null,
      id: string,
      input: SecretRotation,
      caller: Caller,
    ): Promise<WebhookEndpoint & { secret: string }> {
      const grace = input.previous_secret_expires_in ?? DEFAULT_ROTATION_GRACE_S
      const secret = newSecret()
      const row = await repo.transaction(async (writes) => {
        const current = await writes.lock(owner, id)
        if (!current) throw new NotFound('Webhook endpoint')
        checkMayReadSent(current, caller.readable)
        // Real time, as the deliveries that sign with it.
        return writes.rotateSecret(id, secret, grace > 0 ? new Date(Date.now() + grace * 1000) : null)
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
      const paged = await repo.attempts(id, { ...page, limit: page.limit ?? EVENTS_PAGE })
      return {
        items: paged.items.map((r) => ({
          id: String(r.id),
          delivery_id: r.delivery_id,
          event_id: r.event_id,
          event_type: r.event_type,
          attempt: r.attempt,
          started_at: new Date(r.started_at).toISOString(),
          status: r.outcome,
          status_code: r.status_code,
          duration_ms: r.duration_ms,
          error: shownError(r.outcome, r.status_code, r.error),
          next_retry_at: iso(r.next_retry_at),
        })),
        next: paged.next,
      }
    },

    async ping(owner: string | null, id: string, caller: Caller): Promise<Event> {
      const endpoint = await find(owner, id)
      checkMayReadSent(endpoint, caller.readable)
      if (!endpoint.enabled) throw new Conflict('The endpoint is disabled: it sends nothing, a ping included')
      const event = await repo.ping(endpoint)
      deps.wake?.()
      return deps.presenter.event(event)
    },
  }
}

export type WebhookEndpointsService = ReturnType<typeof createWebhookEndpointsService>
