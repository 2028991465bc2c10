import { Type } from 'typebox'
import { answerPage, listResponse, pageQuery, readPage } from '../../http/pagination.ts'
import type { App } from '../../http/app-types.ts'
import { accepted } from '../../http/app-types.ts'
import { principalOf } from '../../http/auth.ts'
import { Accepted, CompanyParams } from '../../http/schemas.ts'
import type { CommunicationsService } from './communications.service.ts'
import type { MessagesService } from './messages.service.ts'
import type { AttachmentsService } from './attachments.service.ts'
import {
  Communication,
  CommunicationInput,
  CommunicationParams,
  CommunicationQuery,
  CommunicationUpdate,
  ReportParams,
  ReportRow,
} from './communications.schemas.ts'
import { messagesRoutes } from './messages.routes.ts'
import { attachmentsRoutes } from './attachments.routes.ts'

const BASE = '/api/v1/companies/:company_id/communications'
const tags = ['Communications']
const access = { area: 'company_communication' }

export interface CommunicationsRoutesOptions {
  communications: CommunicationsService
  messages: MessagesService
  attachments: AttachmentsService
  attachmentMaxBytes: number
}

/** Communications (21, 22, 27, 28, 29), their messages (32 and the recipients' side) and attachments. */
export async function communicationsRoutes(app: App, options: CommunicationsRoutesOptions) {
  const service = options.communications

  app.post(
    BASE,
    {
      config: { access },
      schema: {
        operationId: 'createCommunication',
        tags,
        params: CompanyParams,
        body: CommunicationInput,
        response: { 202: Accepted },
        summary: 'Create a communication (21)',
        description:
          'status defaults to scheduled (draft keeps it unsent). A scheduled communication whose send_at is past ' +
          'is delivered at once. Location names the new communication.',
      },
    },
    async (request, reply) => {
      const { company_id } = request.params
      const id = await service.create(company_id, request.body, principalOf(request).clientId)
      return accepted(reply, `/api/v1/companies/${company_id}/communications/${id}`)
    },
  )

  app.get(
    BASE,
    {
      config: { access },
      schema: {
        operationId: 'listCommunications',
        tags,
        params: CompanyParams,
        querystring: CommunicationQuery,
        response: { 200: listResponse(Type.Array(Communication)) },
        summary: 'List communications (22), newest send_at first',
        description:
          "Newest send_at first, ties newest id first. Filters: `year` (of send_at on the company's calendar), " +
          '`status`. Pages with `limit` and `cursor`; without `limit`, the whole list.',
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['time', 'uuid'])
      return answerPage(request, reply, page, await service.list(request.params.company_id, request.query, page))
    },
  )

  app.put(
    `${BASE}/:id`,
    {
      config: { access },
      schema: {
        operationId: 'updateCommunication',
        tags,
        params: CommunicationParams,
        body: CommunicationUpdate,
        response: { 202: Accepted },
        summary: 'Change a communication (27)',
        description:
          'A field left out keeps its value. Once an occurrence has been delivered, only status discontinued is ' +
          'accepted (409 otherwise); submitted and discontinued communications are final (409). A body that ' +
          'changes nothing is accepted.',
      },
    },
    async (request, reply) => {
      await service.update(request.params.company_id, request.params.id, request.body, principalOf(request).clientId)
      return accepted(reply)
    },
  )

  app.get(
    `${BASE}/:id`,
    {
      config: { access },
      schema: {
        operationId: 'getCommunication',
        tags,
        params: CommunicationParams,
        response: { 200: Communication },
        summary: 'Get a communication (28)',
      },
    },
    async (request) => service.get(request.params.company_id, request.params.id),
  )

  app.get(
    `${BASE}/:communication_id/report`,
    {
      config: { access },
      schema: {
        operationId: 'getCommunicationReport',
        tags,
        params: ReportParams,
        querystring: pageQuery(),
        response: { 200: listResponse(Type.Array(ReportRow)) },
        summary: 'Report of a communication (29): one row per delivered occurrence, oldest first',
        description:
          'One row per delivered occurrence, oldest send_at first. Pages with `limit` and `cursor`; without ' +
          '`limit`, every occurrence.',
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['time'])
      return answerPage(
        request,
        reply,
        page,
        await service.report(request.params.company_id, request.params.communication_id, page),
      )
    },
  )

  await app.register(messagesRoutes, { service: options.messages })
  await app.register(attachmentsRoutes, { service: options.attachments, maxBytes: options.attachmentMaxBytes })
}
