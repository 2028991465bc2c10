import { NotFound, ValidationError } from '../../core/errors.ts'
import type { Event, EventsQuery } from './events.schemas.ts'
import type { EventsRepository } from './events.repository.ts'
import { isEventTypePattern } from './outbox.ts'
import type { EventPresenter } from './event-objects.ts'
import type { Page, Paged } from '../../core/paging.ts'

/** The event log, newest first (docs/webhooks.md). */
export function createEventsService(deps: { repo: EventsRepository; presenter: EventPresenter }) {
  return {
    /**
     * One event; of the company when one is given (another company's is not found), of the readable resources when they
     * are given.
     */
    async get(id: string, companyId?: string, resources?: readonly string[]): Promise<Event> {
      const row = await deps.repo.find(id, companyId, resources)
      if (!row) throw new NotFound('Event')
      return deps.presenter.event(row)
    },

    /** One page of events, and the key to continue after when more remain. */
    async list(query: EventsQuery, page: Page, resources?: readonly string[]): Promise<Paged<Event>> {
      let type: { exact: string } | { prefix: string } | undefined
      if (query.type !== undefined) {
        if (!isEventTypePattern(query.type))
          throw new ValidationError(
            'querystring/type must be an event type (company.created, ...) or a resource and .* ' +
              '(subscription.*); see the Event shape for every type',
          )
        type = query.type.endsWith('.*') ? { prefix: query.type.slice(0, -1) } : { exact: query.type }
      }
      const paged = await deps.repo.list(
        {
          companyId: query.company_id,
          type,
          createdAfter: query.created_after ? new Date(query.created_after) : undefined,
          resources,
        },
        page,
      )
      return { items: await Promise.all(paged.items.map(deps.presenter.event)), next: paged.next }
    },
  }
}

export type EventsService = ReturnType<typeof createEventsService>
