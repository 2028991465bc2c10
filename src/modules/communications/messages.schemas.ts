import { PageFields } from '../../http/pagination.ts'
import { Type, type Static } from 'typebox'
import { Nullable, Uuid } from '../../http/schemas.ts'
import { AttachmentRef } from './communications.schemas.ts'

const At = (description: string) => Type.String({ format: 'date-time', description })

export const Message = Type.Object(
  {
    id: Uuid(),
    communication_id: Uuid(),
    contract_id: Uuid('The recipient'),
    send_at: At('The occurrence this message belongs to'),
    delivered_at: At('When it was delivered'),
    opened_at: Nullable(At('First opening (PUT .../open), or null')),
    action_done_at: Nullable(At('First acknowledgement (PUT .../action), or null')),
  },
  { additionalProperties: false, title: 'CommunicationMessage' },
)
export type Message = Static<typeof Message>

/** A message as its recipient reads it: with what the communication says. */
export const InboxMessage = Type.Object(
  {
    ...Message.properties,
    subject: Type.String(),
    message: Type.String(),
    sender_id: Type.String(),
    action_required: Type.Union([Type.Literal('none'), Type.Literal('acknowledge')]),
    attachments: Type.Array(AttachmentRef),
  },
  { additionalProperties: false, title: 'InboxMessage' },
)
export type InboxMessage = Static<typeof InboxMessage>

// No `default` keywords: validation would fill them in, and page/page_size sent could not be told from left out
// (limit/cursor refuse them).
const Page = Type.Integer({
  minimum: 1,
  maximum: 1_000_000,
  description: 'Page number, from 1 (default 1); not with limit/cursor',
})
const PageSize = Type.Integer({
  minimum: 1,
  maximum: 100,
  description: 'Results per page, at most 100 (default 20); not with limit/cursor',
})

export const MessagesQuery = Type.Object(
  {
    send_at: Type.String({ format: 'date-time', description: 'The occurrence (as in the report)' }),
    page: Type.Optional(Page),
    page_size: Type.Optional(PageSize),
    opened: Type.Optional(Type.Boolean({ description: 'true: only opened messages; false: only unopened' })),
    actions: Type.Optional(
      Type.Boolean({ description: 'true: only acknowledged messages; false: only not acknowledged' }),
    ),
    ...PageFields,
  },
  { additionalProperties: false },
)

export const InboxQuery = Type.Object(
  {
    page: Type.Optional(Page),
    page_size: Type.Optional(PageSize),
    opened: Type.Optional(Type.Boolean({ description: 'true: only opened messages; false: only unopened' })),
    ...PageFields,
  },
  { additionalProperties: false },
)

const pageFields = {
  page: Type.Integer({
    description: 'The page number (with limit/cursor: the pages walked so far, this one included)',
  }),
  page_size: Type.Integer({ description: 'page_size, or limit when paging by cursor' }),
  total: Type.Integer({ description: 'Messages matching the filters, over all pages' }),
}

export const MessagesPage = Type.Object(
  { messages: Type.Array(Message), ...pageFields },
  { additionalProperties: false, title: 'CommunicationMessages' },
)
export const InboxPage = Type.Object(
  { messages: Type.Array(InboxMessage), ...pageFields },
  { additionalProperties: false, title: 'Inbox' },
)

export const ByCommunicationParams = Type.Object({ company_id: Uuid(), communication_id: Uuid('The communication') })
export const InboxParams = Type.Object({ company_id: Uuid(), contract_id: Uuid('The recipient contract') })
export const MessageParams = Type.Object({ company_id: Uuid(), message_id: Uuid('The message') })
