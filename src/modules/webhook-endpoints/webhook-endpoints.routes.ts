import { Type } from 'typebox'
import type { FastifyRequest } from 'fastify'
import type { App } from '../../http/app-types.ts'
import type { Access } from '../../http/auth.ts'
import { CompanyParams, ErrorBody } from '../../http/schemas.ts'
import { Event, EVENTS_PAGE } from '../events/events.schemas.ts'
import type { Caller, WebhookEndpointsService } from './webhook-endpoints.service.ts'
import { resourcesReadableBy } from '../events/event-access.ts'
import {
  CompanyEndpointParams,
  CreatedWebhookEndpoint,
  DeliveriesQuery,
  DeliveryAttempt,
  EndpointParams,
  SecretRotation,
  WebhookEndpoint,
  WebhookEndpointInput,
  WebhookEndpointUpdate,
} from './webhook-endpoints.schemas.ts'
import { answerPage, listResponse, readPage } from '../../http/pagination.ts'

const NoContent = Type.Null({ description: 'Deleted' })

const MAY_READ_SENT =
  'A company token must also be able to read every area the endpoint is sent (its `event_types`, among the areas ' +
  'its creator could read: contract events need `read:contract`, team events `read:team`, ...), else 403 ' +
  'insufficient_scope naming a missing scope.'
const ScopeRefused = {
  ...ErrorBody,
  description:
    'The token lacks the scope, or its company is disabled; or a company token may not read an area the endpoint ' +
    'is sent (insufficient_scope, naming the scope)',
}

function callerOf(request: FastifyRequest): Caller {
  return { clientId: request.principal!.clientId, readable: resourcesReadableBy(request.principal) }
}

/**
 * Outgoing webhooks: the platform's endpoints hear every company's events, a company's its own.
 * Chargebee's incoming webhooks are src/modules/chargebee/chargebee-webhooks.*.
 */
export async function webhookEndpointsRoutes(app: App, { service }: { service: WebhookEndpointsService }) {
  const tags = ['Webhooks']
  const variants = [
    {
      base: '/api/v1/webhook_endpoints',
      access: 'platform' as Access,
      who: 'A platform token (`write:company` to change).',
      hears: "every company's events",
      name: 'Platform',
      params: undefined,
      idParams: EndpointParams,
      owner: (_params: unknown) => null,
    },
    {
      base: '/api/v1/companies/:company_id/webhook_endpoints',
      access: { area: 'company' } as Access,
      who: "`read:company` to read, `write:company` to change: the company's token, or a platform token.",
      hears: "the company's events",
      name: 'Company',
      params: CompanyParams,
      idParams: CompanyEndpointParams,
      owner: (params: unknown) => (params as { company_id: string }).company_id,
    },
  ]

  for (const v of variants) {
    const one = `${v.base}/:id`
    const params = v.params ? { params: v.params } : {}

    app.post(
      v.base,
      {
        config: { access: v.access },
        schema: {
          operationId: `create${v.name}WebhookEndpoint`,
          tags,
          summary: `Create a webhook endpoint that hears ${v.hears}`,
          description:
            `${v.who} Answers 201 with the endpoint and its signing \`secret\`, shown this once. \`url\` must be ` +
            `https and reach only public unicast addresses (400 naming \`url\` otherwise); \`event_types\` lists ` +
            `types or \`<resource>.*\` (400 for an unknown one), empty for every type. A company token's endpoint ` +
            `is sent only the events of the areas that token may read (contract events need \`read:contract\`, ` +
            `team events \`read:team\`, ...); naming a type of another area is 403 insufficient_scope. The token's ` +
            `client is recorded as \`created_by\`: the endpoint stops (\`disabled_reason: client_revoked\`) when ` +
            `that client is revoked, and when the company is disabled (\`company_disabled\`). At most 16 ` +
            `endpoints, and none for a disabled company (409).`,
          ...params,
          body: WebhookEndpointInput,
          response: { 201: CreatedWebhookEndpoint, 403: ScopeRefused },
        },
      },
      async (request, reply) => {
        const created = await service.create(v.owner(request.params), request.body, callerOf(request))
        reply.header('location', `${request.url.replace(/\/+$/, '').split('?')[0]}/${created.id}`)
        return reply.code(201).send(created)
      },
    )

    app.get(
      v.base,
      {
        config: { access: v.access },
        schema: {
          operationId: `list${v.name}WebhookEndpoints`,
          tags,
          summary: `List the webhook endpoints that hear ${v.hears}`,
          description: `${v.who} Oldest first; secrets are never shown again.`,
          ...params,
          response: { 200: Type.Array(WebhookEndpoint) },
        },
      },
      async (request) => service.list(v.owner(request.params)),
    )

    app.get(
      one,
      {
        config: { access: v.access },
        schema: {
          operationId: `get${v.name}WebhookEndpoint`,
          tags,
          summary: 'Get a webhook endpoint',
          description: v.who,
          params: v.idParams,
          response: { 200: WebhookEndpoint },
        },
      },
      async (request) => service.get(v.owner(request.params), (request.params as { id: string }).id),
    )

    app.patch(
      one,
      {
        config: { access: v.access },
        schema: {
          operationId: `update${v.name}WebhookEndpoint`,
          tags,
          summary: 'Update or re-enable a webhook endpoint',
          description:
            `${v.who} Changes the fields given and answers 200 with the endpoint. \`enabled: true\` re-enables a ` +
            `disabled endpoint (its \`disabled_reason\` is cleared, and the token's client becomes its ` +
            `\`created_by\`); events written while it was disabled are not sent (read them from the event log with ` +
            `\`created_after\`); while the company is disabled it is 409. \`enabled: false\` stops sending; its ` +
            `pending deliveries are not sent. \`url\` and \`event_types\` are checked as at creation (400). A ` +
            `change of \`url\` or \`event_types\`, or re-enabling: ${MAY_READ_SENT} \`description\` and \`enabled: ` +
            `false\` need \`write:company\` alone.`,
          params: v.idParams,
          body: WebhookEndpointUpdate,
          response: {
            200: WebhookEndpoint,
            403: ScopeRefused,
            409: { ...ErrorBody, description: 'Re-enabling an endpoint of a disabled company' },
          },
        },
      },
      async (request) =>
        service.update(v.owner(request.params), (request.params as { id: string }).id, request.body, callerOf(request)),
    )

    app.post(
      `${one}/rotate_secret`,
      {
        config: { access: v.access },
        // Every field has a default, so a missing body is validated as {}.
        preValidation: async (request) => {
          if (request.body === undefined || request.body === null) request.body = {}
        },
        schema: {
          operationId: `rotate${v.name}WebhookEndpointSecret`,
          tags,
          summary: 'Rotate the signing secret of a webhook endpoint',
          description:
            `${v.who} A new \`secret\`, shown in this answer only. The replaced one keeps signing beside it for ` +
            `\`previous_secret_expires_in\` seconds (default a day): each delivery then carries both signatures ` +
            `(\`webhook-signature: v1,<new> v1,<old>\`, as Standard Webhooks allows), so receivers switch without ` +
            `refusing a delivery. A second rotation within that time drops the oldest secret. The body may be left ` +
            `out. ${MAY_READ_SENT}`,
          params: v.idParams,
          body: SecretRotation,
          response: { 200: CreatedWebhookEndpoint, 403: ScopeRefused },
        },
      },
      async (request) =>
        service.rotateSecret(
          v.owner(request.params),
          (request.params as { id: string }).id,
          request.body,
          callerOf(request),
        ),
    )

    app.delete(
      one,
      {
        config: { access: v.access },
        schema: {
          operationId: `delete${v.name}WebhookEndpoint`,
          tags,
          summary: 'Delete a webhook endpoint',
          description: `${v.who} Its pending deliveries are dropped; answers 204. \`write:company\` alone suffices.`,
          params: v.idParams,
          response: { 204: NoContent },
        },
      },
      async (request, reply) => {
        await service.delete(v.owner(request.params), (request.params as { id: string }).id)
        return reply.code(204).send(null)
      },
    )

    app.get(
      `${one}/deliveries`,
      {
        config: { access: v.access },
        schema: {
          operationId: `list${v.name}WebhookDeliveries`,
          tags,
          summary: 'List the delivery attempts of a webhook endpoint',
          description:
            `${v.who} Every attempt, newest first: the event, the outcome, the receiver's status, the duration, ` +
            `the error and the next retry. \`limit\` 1–500 (default 100) and \`cursor\`, with \`Link: rel="next"\` ` +
            `when more remain.`,
          params: v.idParams,
          querystring: DeliveriesQuery,
          response: { 200: listResponse(Type.Array(DeliveryAttempt)) },
        },
      },
      async (request, reply) => {
        const page = readPage(request, ['serial', 'serial'], { defaultLimit: EVENTS_PAGE })
        return answerPage(
          request,
          reply,
          page,
          await service.deliveries(v.owner(request.params), (request.params as { id: string }).id, page),
        )
      },
    )

    app.post(
      `${one}/test`,
      {
        config: { access: v.access },
        schema: {
          operationId: `test${v.name}WebhookEndpoint`,
          tags,
          summary: 'Send a ping event to a webhook endpoint',
          description:
            `${v.who} Sends this endpoint alone a \`ping\` event, signed and retried as any other; answers 202 ` +
            `with the event (its \`id\` is the \`webhook-id\`) and its \`Location\`. A disabled endpoint: 409. ` +
            `${MAY_READ_SENT}`,
          params: v.idParams,
          response: { 202: Event, 403: ScopeRefused },
        },
      },
      async (request, reply) => {
        const owner = v.owner(request.params)
        const event = await service.ping(owner, (request.params as { id: string }).id, callerOf(request))
        reply.header(
          'location',
          owner === null ? `/api/v1/events/${event.id}` : `/api/v1/companies/${owner}/events/${event.id}`,
        )
        return reply.code(202).send(event)
      },
    )
  }
}
