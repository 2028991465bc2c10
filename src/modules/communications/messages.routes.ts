import { linkNext, listResponse, readPage } from '../../http/pagination.ts'
import type { App } from '../../http/app-types.ts'
import { accepted } from '../../http/app-types.ts'
import { Accepted } from '../../http/schemas.ts'
import type { MessagesService } from './messages.service.ts'
import {
  ByCommunicationParams,
  InboxPage,
  InboxParams,
  InboxQuery,
  MessageParams,
  MessagesPage,
  MessagesQuery,
} from './messages.schemas.ts'

const COMPANY = '/api/v1/companies/:company_id'
const tags = ['Communication messages']
const access = { area: 'company_communication_message' }

/** Endpoint 32 and the recipients' side: inbox, opening, acknowledging. */
export async function messagesRoutes(app: App, { service }: { service: MessagesService }) {
  app.get(
    `${COMPANY}/communications/messages/by_communication/:communication_id`,
    {
      config: { access },
      schema: {
        operationId: 'listCommunicationMessages',
        tags,
        params: ByCommunicationParams,
        querystring: MessagesQuery,
        summary: 'Messages of one occurrence (32), a page at a time',
        description:
          'send_at names the occurrence (as in the report). page from 1 (default 1), page_size 1 to 100 (default ' +
          '20); or, as every list, `limit` and `cursor` (never both ways at once: 400), the Link header naming ' +
          'the next page. Ordered by contract id.',
        response: { 200: listResponse(MessagesPage) },
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['uuid'])
      const { body, next } = await service.byOccurrence(
        request.params.company_id,
        request.params.communication_id,
        request.query,
        page,
      )
      linkNext(request, reply, page, next)
      return body
    },
  )

  app.get(
    `${COMPANY}/contracts/:contract_id/messages`,
    {
      config: { access },
      schema: {
        operationId: 'listContractMessages',
        tags,
        params: InboxParams,
        querystring: InboxQuery,
        response: { 200: listResponse(InboxPage) },
        summary: "A contract's inbox: the messages delivered to it, newest first",
        description:
          'Newest send_at first, then id. page/page_size (default 1 and 20, at most 100) or `limit` and `cursor` ' +
          '(never both: 400), the Link header naming the next page.',
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['time', 'uuid'])
      const { body, next } = await service.inbox(
        request.params.company_id,
        request.params.contract_id,
        request.query,
        page,
      )
      linkNext(request, reply, page, next)
      return body
    },
  )

  app.put(
    `${COMPANY}/communications/messages/:message_id/open`,
    {
      config: { access },
      schema: {
        operationId: 'openCommunicationMessage',
        tags,
        params: MessageParams,
        response: { 202: Accepted },
        summary: 'Record that a message was opened (the first time only)',
      },
    },
    async (request, reply) => {
      await service.open(request.params.company_id, request.params.message_id)
      return accepted(reply)
    },
  )

  app.put(
    `${COMPANY}/communications/messages/:message_id/action`,
    {
      config: { access },
      schema: {
        operationId: 'acknowledgeCommunicationMessage',
        tags,
        params: MessageParams,
        response: { 202: Accepted },
        summary: 'Record the acknowledgement a message asks for (the first time only)',
        description:
          'Only for a communication whose action_required is acknowledge (409 otherwise). Also records the ' +
          'opening if none was.',
      },
    },
    async (request, reply) => {
      await service.acknowledge(request.params.company_id, request.params.message_id)
      return accepted(reply)
    },
  )
}
