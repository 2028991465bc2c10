import { PageFields } from '../../http/pagination.ts'
import { Type, type Static } from 'typebox'
import { Day, Name, Nullable, Uuid, Year } from '../../http/schemas.ts'

const Status = Type.Union(
  [
    Type.Literal('draft'),
    Type.Literal('scheduled'),
    Type.Literal('active'),
    Type.Literal('submitted'),
    Type.Literal('discontinued'),
  ],
  {
    description:
      'draft (kept, never sent), scheduled (first occurrence to come), active (recurrent: some occurrences ' +
      'delivered, more to come), submitted (every occurrence delivered), discontinued (stopped). A client writes ' +
      'draft, scheduled or discontinued; the server moves it to active and submitted.',
  },
)
const Recurrent = Type.Union(
  [
    Type.Literal('none'),
    Type.Literal('daily'),
    Type.Literal('weekly'),
    Type.Literal('monthly'),
    Type.Literal('yearly'),
  ],
  {
    description: "Repeats every period after send_at, on the company's wall clock, until recurrent_until",
  },
)
const ActionRequired = Type.Union([Type.Literal('none'), Type.Literal('acknowledge')], {
  description: 'acknowledge: each recipient is asked to acknowledge (PUT .../messages/{message_id}/action)',
})
const SendAt = Type.String({
  format: 'date-time',
  description:
    'ISO 8601 date-time with an offset; answered in UTC. A client writes one from one year before now to before ' +
    "2200-01-01 on the company's calendar (400 otherwise). Occurrences already past when the communication is " +
    'scheduled collapse into the most recent one.',
})

export const AttachmentRef = Type.Object(
  {
    id: Uuid('An uploaded attachment of the company (POST .../communications/attachments)'),
    name: Type.String(),
    mime: Type.String(),
  },
  { additionalProperties: false, title: 'AttachmentRef' },
)

const AttachmentRefInput = Type.Object(
  {
    id: Uuid('An uploaded attachment of the company (POST .../communications/attachments)'),
    name: Type.Optional(Type.Unknown({ description: 'Taken from the upload; accepted and ignored' })),
    mime: Type.Optional(Type.Unknown({ description: 'Taken from the upload; accepted and ignored' })),
  },
  { additionalProperties: false },
)

export const ChangeLogEntry = Type.Object(
  {
    at: Type.String({ format: 'date-time' }),
    by: Type.String({ description: 'The client id whose token made the change, or "scheduler" for a delivery' }),
    action: Type.Union([
      Type.Literal('created'),
      Type.Literal('updated'),
      Type.Literal('discontinued'),
      Type.Literal('delivered'),
    ]),
    changes: Type.Record(Type.String(), Type.Array(Type.Unknown(), { minItems: 2, maxItems: 2 }), {
      description:
        '{field: [old, new]}; text over 200 characters is recorded as {"length", "sha256"} (hex SHA-256 of its UTF-8)',
    }),
    occurrence: Type.Optional(
      Type.String({ format: 'date-time', description: 'For a delivery: the occurrence delivered' }),
    ),
  },
  { additionalProperties: false, title: 'ChangeLogEntry' },
)

export const Communication = Type.Object(
  {
    id: Uuid(),
    company_id: Uuid(),
    subject: Type.String(),
    message: Type.String(),
    status: Status,
    sender_id: Type.String({ description: 'The client id that created it, or a contract of the company' }),
    send_at: SendAt,
    recurrent: Recurrent,
    recurrent_until: Nullable(
      Day('Last day (inclusive, company calendar) an occurrence may fall on; null when recurrent is none'),
    ),
    action_required: ActionRequired,
    destination_team_ids: Type.Array(Uuid()),
    destination_subsidiary_ids: Type.Array(Uuid()),
    attachments: Type.Array(AttachmentRef),
    change_log: Type.Array(ChangeLogEntry),
  },
  { additionalProperties: false, title: 'Communication' },
)
export type Communication = Static<typeof Communication>

const Ignored = Type.Optional(Type.Unknown({ description: 'Server-owned; accepted and ignored' }))
const Ids = (description: string) => Type.Array(Uuid(), { maxItems: 1000, description })

const inputFields = {
  id: Ignored,
  company_id: Ignored,
  change_log: Ignored,
  subject: Name(300),
  message: Type.String({ minLength: 1, maxLength: 50_000 }),
  status: Type.Optional(Status),
  // A union, so that a contract's id is lower-cased as every uuid is (http/uuids.ts); a client's id is not a uuid.
  sender_id: Type.Optional(
    Type.Union(
      [
        Uuid('A contract of the company'),
        Type.String({ minLength: 1, maxLength: 200, description: "The calling client's id" }),
      ],
      {
        description: "Default: the token's client id; or a contract of the company",
      },
    ),
  ),
  send_at: SendAt,
  recurrent: Type.Optional(Recurrent),
  recurrent_until: Type.Optional(
    Nullable(Day("Required unless recurrent is none; inclusive, on the company's calendar")),
  ),
  action_required: Type.Optional(ActionRequired),
  destination_team_ids: Type.Optional(Ids('Teams of the company')),
  destination_subsidiary_ids: Type.Optional(Ids('Subsidiaries of the company')),
  attachments: Type.Optional(Type.Array(AttachmentRefInput, { maxItems: 20 })),
}

export const CommunicationInput = Type.Object(inputFields, { additionalProperties: false, title: 'CommunicationInput' })
export type CommunicationInput = Static<typeof CommunicationInput>

/** PUT: the same fields, each optional; a field left out keeps its value. */
export const CommunicationUpdate = Type.Partial(CommunicationInput, {
  additionalProperties: false,
  title: 'CommunicationUpdate',
})
export type CommunicationUpdate = Partial<CommunicationInput>

export const CommunicationQuery = Type.Object(
  {
    year: Type.Optional(Year("Year of send_at on the company's calendar")),
    status: Type.Optional(Status),
    ...PageFields,
  },
  { additionalProperties: false },
)

export const CommunicationParams = Type.Object({ company_id: Uuid(), id: Uuid('The communication') })
export const ReportParams = Type.Object({ company_id: Uuid(), communication_id: Uuid('The communication') })

export const ReportRow = Type.Object(
  {
    send_at: Type.String({ format: 'date-time', description: 'The occurrence' }),
    recipients: Type.Integer({ description: 'Contracts it was addressed to (one message each)' }),
    delivered: Type.Integer({ description: 'Messages delivered (in-app delivery is immediate: equals recipients)' }),
    opened: Type.Integer(),
    actions_done: Type.Integer(),
  },
  { additionalProperties: false, title: 'CommunicationReport' },
)
export type ReportRow = Static<typeof ReportRow>
