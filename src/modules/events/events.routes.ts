import { Type } from 'typebox'
import type { FastifyRequest } from 'fastify'
import type { App } from '../../http/app-types.ts'
import { CompanyParams } from '../../http/schemas.ts'
import {
  Event,
  CompanyEventParams,
  CompanyEventsQuery,
  EventParams,
  EventsQuery,
  EVENTS_PAGE,
} from './events.schemas.ts'
import type { EventsService } from './events.service.ts'
import { resourcesReadableBy } from './event-access.ts'
import { answerPage, listResponse, readPage } from '../../http/pagination.ts'

const ORDER =
  'Newest first. `type` is an event type or `<resource>.*`; `created_after` an ISO 8601 time; `limit` 1–500 ' +
  '(default 100), and a `Link: <...>; rel="next"` header when more remain; `cursor` from that header. Events are ' +
  'kept EVENTS_RETENTION_DAYS (30 by default).'

/** The event log. */
export async function eventsRoutes(app: App, { service }: { service: EventsService }) {
  const tags = ['Events']

  const page = (request: FastifyRequest) => readPage(request, ['serial'], { defaultLimit: EVENTS_PAGE })
  // A company token sees the events of the areas it may read; a platform token every event.
  const readable = (request: FastifyRequest) => resourcesReadableBy(request.principal)

  app.get(
    '/api/v1/events',
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'listEvents',
        tags,
        summary: "List every company's events (platform)",
        description: `The events of every company, or of \`company_id\`'s; a platform token. ${ORDER}`,
        querystring: EventsQuery,
        response: { 200: listResponse(Type.Array(Event)) },
      },
    },
    async (request, reply) => {
      const p = page(request)
      return answerPage(request, reply, p, await service.list(request.query, p))
    },
  )

  app.get(
    '/api/v1/companies/:company_id/events',
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'listCompanyEvents',
        tags,
        summary: "List a company's events",
        description:
          `The company's events; \`read:company\` (a company token on its own company, or a platform token). A ` +
          `company token sees the events of the areas it may read: contract events need \`read:contract\` too, ` +
          `team events \`read:team\`, holiday events \`read:holiday\`, communication events ` +
          `\`read:company_communication\`, message events \`read:company_communication_message\`. ${ORDER}`,
        params: CompanyParams,
        querystring: CompanyEventsQuery,
        response: { 200: listResponse(Type.Array(Event)) },
      },
    },
    async (request, reply) => {
      const p = page(request)
      return answerPage(
        request,
        reply,
        p,
        await service.list({ ...request.query, company_id: request.params.company_id }, p, readable(request)),
      )
    },
  )

  app.get(
    '/api/v1/events/:event_id',
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'getEvent',
        tags,
        summary: 'Get an event (platform)',
        description: "Any company's event, while it is kept; a platform token.",
        params: EventParams,
        response: { 200: Event },
      },
    },
    async (request) => service.get(request.params.event_id),
  )

  app.get(
    '/api/v1/companies/:company_id/events/:event_id',
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'getCompanyEvent',
        tags,
        summary: "Get one of a company's events",
        description:
          "The company's event, while it is kept; `read:company`, and the read scope of the event's area as in " +
          "the list. Another company's event, or one of an area the token may not read: 404.",
        params: CompanyEventParams,
        response: { 200: Event },
      },
    },
    async (request) => service.get(request.params.event_id, request.params.company_id, readable(request)),
  )
}
