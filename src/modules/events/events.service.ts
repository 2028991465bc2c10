import { NotFound, ValidationError } from '../../http/errors.ts'
import type { Event, EventsQuery } from './events.schemas.ts'
import type { EventsRepository } from './events.repository.ts'
import { isEventTypePattern } from './outbox.ts'
import { decodeCursor, DEFAULT_LIMIT, encodeCursor } from './paging.ts'

export type EventRow = Awaited<ReturnType<EventsRepository['list']>>[number]

/** The event as clients see it, in the log and in webhooks. */
export function eventView(row: Pick<EventRow, 'id' | 'type' | 'company_id' | 'data' | 'created_at'>): Event {
  return { id: row.id, type: row.type as Event['type'], created_at: new Date(row.created_at).toISOString(), company_id: row.company_id, data: row.data as Event['data'] }
}

/** The event log, newest first (docs/webhooks.md). */
export function createEventsService(deps: { repo: EventsRepository }) {
  return {
    /** One event; of the company when one is given (another company's is not found). */
    async get(id: string, companyId?: string): Promise<Event> {
      const row = await deps.repo.find(id, companyId)
      if (!row) throw new NotFound('Event')
      return eventView(row)
    },

    /** One page of events and the cursor of the next, if more remain. */
    async list(query: EventsQuery): Promise<{ events: Event[]; next?: string }> {
      let type
      if (query.type !== undefined) {
        if (!isEventTypePattern(query.type)) throw new ValidationError('querystring/type must be an event type (company.created, ...) or a resource and .* (subscription.*); see the Event shape for every type')
        type = query.type.endsWith('.*') ? { prefix: query.type.slice(0, -1) } : { exact: query.type }
      }
      const limit = query.limit ?? DEFAULT_LIMIT
      const rows = await deps.repo.list({
        companyId: query.company_id, type, createdAfter: query.created_after ? new Date(query.created_after) : undefined,
        before: decodeCursor(query.cursor), limit: limit + 1,
      })
      const page = rows.slice(0, limit)
      return { events: page.map(eventView), next: rows.length > limit ? encodeCursor(page[page.length - 1]!.seq) : undefined }
    },
  }
}

export type EventsService = ReturnType<typeof createEventsService>
