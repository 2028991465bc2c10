import { Type, type Static } from 'typebox'
import { Nullable, Uuid } from '../../http/schemas.ts'
import { pageFieldsWithDefault } from '../../http/pagination.ts'

/** A page of the event log (or of an endpoint's attempts) without `limit`: a log is never answered whole. */
export const EVENTS_PAGE = 100
import { EVENT_TYPES, type EventType as EventTypeName } from './outbox.ts'

const EXAMPLE = {
  id: '5b0e6f0e-1c7a-4a59-9a51-8d3f7c1e2a44',
  type: 'team.member_added',
  created_at: '2026-11-26T09:15:02.114Z',
  company_id: '0f9d3c52-6a7e-4bb1-9a8f-2f4c1d7e9b10',
  data: {
    object: {
      id: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
      first_name: 'Mario',
      last_name: 'Rossi',
      email: 'mario@example.com',
      subsidiary_id: null,
      team_ids: ['8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f'],
      active: true,
      is_leader: false,
    },
  },
}

// A string with an enum, not a union of literals: the serializer then writes the type as it is.
// A union makes it match the value against each literal, and a type written by a newer verb
// than this list knows (a subscription's history gains one) would turn the whole list into a 500.
export const EventType = Type.Unsafe<EventTypeName>({
  type: 'string',
  enum: [...EVENT_TYPES],
  description: 'What happened: `<resource>.<verb>`',
})

export const Event = Type.Object(
  {
    id: Uuid('The event; also the `webhook-id` of its deliveries, the same on every retry'),
    type: EventType,
    created_at: Type.String({ format: 'date-time', description: 'When the change committed its transaction (UTC)' }),
    company_id: Nullable(Uuid('The company the change belongs to')),
    data: Type.Object(
      {
        object: Type.Unknown({
          description:
            'The resource after the change (before it, for a deletion), in the shape, fields and units its own ' +
            'GET answers: `company.*` a Company, `subsidiary.*` a Subsidiary, `contract.*` a Contract, `team.*` ' +
            'a Team, `team.member_*` a TeamMember, `holiday.*` a Holiday, `communication.*` a Communication, ' +
            '`message.*` a CommunicationMessage, `subscription.*` the `subscription` of GET .../details, ' +
            "`invoice.*` an Invoice, `credit_note.*` a CreditNote; `ping`: the endpoint's id and a message",
        }),
        previous_attributes: Type.Optional(
          Type.Record(Type.String(), Type.Unknown(), {
            description: 'On an update: the fields of `object` that moved, with their values before it',
          }),
        ),
      },
      { additionalProperties: false },
    ),
  },
  {
    additionalProperties: false,
    title: 'Event',
    description: 'A change, as the event log keeps it for EVENTS_RETENTION_DAYS and webhooks send it',
    examples: [EXAMPLE],
  },
)
export type Event = Static<typeof Event>

const queryFields = {
  type: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'An event type (`subscription.cancelled`) or every type of a resource (`subscription.*`)',
    }),
  ),
  created_after: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only events created after this time (ISO 8601)' }),
  ),
  ...pageFieldsWithDefault(EVENTS_PAGE),
}
export const CompanyEventsQuery = Type.Object(queryFields, { additionalProperties: false })
export const EventsQuery = Type.Object(
  { company_id: Type.Optional(Uuid("Only this company's events")), ...queryFields },
  { additionalProperties: false },
)
export type EventsQuery = Static<typeof EventsQuery>

export const EventParams = Type.Object({ event_id: Uuid('The event') })
export const CompanyEventParams = Type.Object({ company_id: Uuid('The company'), event_id: Uuid('The event') })
