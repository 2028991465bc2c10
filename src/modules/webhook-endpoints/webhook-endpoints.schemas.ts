import { Type, type Static } from 'typebox'
import { Nullable, Uuid } from '../../http/schemas.ts'
import { pageFieldsWithDefault } from '../../http/pagination.ts'
import { EVENTS_PAGE } from '../events/events.schemas.ts'

const EXAMPLE_ID = '3f6c2a1e-8b7d-4e59-a0c4-5d1e9f2b7a63'
const COMPANY_ID = '0f9d3c52-6a7e-4bb1-9a8f-2f4c1d7e9b10'

export const WebhookEndpointInput = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048, format: 'uri', description: 'Where events are POSTed: https (http only with WEBHOOK_ALLOW_PRIVATE_TARGETS=true); never a loopback, private or link-local address' }),
  event_types: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
    maxItems: 100, uniqueItems: true, description: 'The types to send: event types (`team.member_added`) or `<resource>.*` (`subscription.*`); empty or left out: every type',
  })),
  description: Type.Optional(Nullable(Type.String({ maxLength: 500, description: 'A note for people' }))),
  enabled: Type.Optional(Type.Boolean({ description: 'Whether events are sent (default true)' })),
}, { additionalProperties: false, title: 'WebhookEndpointInput', examples: [{ url: 'https://hr.example.com/hooks/company-admin', event_types: ['subscription.*', 'team.member_added'], description: 'HR sync' }] })
export type WebhookEndpointInput = Static<typeof WebhookEndpointInput>

export const WebhookEndpointUpdate = Type.Object({
  url: Type.Optional(WebhookEndpointInput.properties.url),
  event_types: WebhookEndpointInput.properties.event_types,
  description: WebhookEndpointInput.properties.description,
  enabled: Type.Optional(Type.Boolean({ description: 'true re-enables a disabled endpoint (the reason is cleared; events written while it was disabled are not sent: read them from the event log); false stops sending' })),
}, { additionalProperties: false, title: 'WebhookEndpointUpdate', examples: [{ enabled: true }, { event_types: ['subscription.*'] }] })
export type WebhookEndpointUpdate = Static<typeof WebhookEndpointUpdate>

export const SecretRotation = Type.Object({
  previous_secret_expires_in: Type.Optional(Type.Integer({
    minimum: 0, maximum: 604800,
    description: 'Seconds the replaced secret keeps signing beside the new one (0 to 604800, 7 days; default 86400): each delivery then carries two signatures, `v1,<new> v1,<old>`. 0: the old secret stops at once',
  })),
}, { additionalProperties: false, title: 'SecretRotation', examples: [{ previous_secret_expires_in: 3600 }] })
export type SecretRotation = Static<typeof SecretRotation>

const endpointFields = {
  id: Uuid('The endpoint'),
  company_id: Nullable(Uuid('The company whose events it hears; null: a platform endpoint, which hears every company\'s')),
  url: Type.String(),
  event_types: Type.Array(Type.String(), { description: 'Empty: every type' }),
  description: Nullable(Type.String()),
  enabled: Type.Boolean({ description: 'False once a delivery has failed for three days, once its creator client is revoked or its company disabled (see disabled_reason), or when created or set disabled' }),
  disabled_reason: Nullable(Type.String({ description: '`client_revoked`: the client in `created_by` was revoked; `company_disabled`: the company was disabled; otherwise a sentence (three days of failed deliveries, or disabled through the API). Null while enabled' })),
  created_by: Nullable(Type.String({ description: 'The client whose token made the endpoint, or last re-enabled it: it answers for the endpoint, which stops when that client is revoked. Null: made before creators were recorded' })),
  previous_secret_expires_at: Nullable(Type.String({ format: 'date-time', description: 'After a secret rotation: until when the replaced secret still signs beside the new one; null when only one secret signs' })),
  created_at: Type.String({ format: 'date-time' }),
}
const EXAMPLE = {
  id: EXAMPLE_ID, company_id: COMPANY_ID, url: 'https://hr.example.com/hooks/company-admin', event_types: ['subscription.*', 'team.member_added'],
  description: 'HR sync', enabled: true, disabled_reason: null, created_by: 'company_7d1e0c4a-2f6b-4c1d-9e8a-3b5f2a6c9d01', previous_secret_expires_at: null, created_at: '2026-11-26T09:00:00.000Z',
}

export const WebhookEndpoint = Type.Object(endpointFields, { additionalProperties: false, title: 'WebhookEndpoint', examples: [EXAMPLE] })
export type WebhookEndpoint = Static<typeof WebhookEndpoint>

export const CreatedWebhookEndpoint = Type.Object({
  ...endpointFields,
  secret: Type.String({ description: 'The signing secret (`whsec_` + base64): shown once, in this answer only' }),
}, { additionalProperties: false, title: 'CreatedWebhookEndpoint', examples: [{ ...EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3gkS+fvRvQo=' }] })

export const DeliveryAttempt = Type.Object({
  id: Type.String({ description: 'The attempt' }),
  delivery_id: Uuid('The delivery (one event to this endpoint) the attempt belongs to'),
  event_id: Uuid('The event; the `webhook-id` header'),
  event_type: Type.String(),
  attempt: Type.Integer({ minimum: 1, description: '1 for the first attempt, 2 for the first retry, ...' }),
  started_at: Type.String({ format: 'date-time' }),
  status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('timeout'), Type.Literal('error'), Type.Literal('refused'), Type.Literal('lost')], {
    description: 'An attempt is listed once it has ended. succeeded: a 2xx; failed: another status; timeout: no answer in time; error: no connection; refused: the target resolves to a private address; lost: its instance stopped (the next attempt follows)',
  }),
  status_code: Nullable(Type.Integer({ description: 'The receiver\'s HTTP status' })),
  duration_ms: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  next_retry_at: Nullable(Type.String({ format: 'date-time', description: 'When the next attempt runs, after a failure; null after a success or the last attempt' })),
}, {
  additionalProperties: false, title: 'WebhookDeliveryAttempt', examples: [{
    id: '42', delivery_id: 'b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e', event_id: '5b0e6f0e-1c7a-4a59-9a51-8d3f7c1e2a44', event_type: 'team.member_added',
    attempt: 2, started_at: '2026-11-26T09:15:07.300Z', status: 'failed', status_code: 500, duration_ms: 84, error: 'The receiver answered 500',
    next_retry_at: '2026-11-26T09:20:07.384Z',
  }],
})
export type DeliveryAttempt = Static<typeof DeliveryAttempt>

export const EndpointParams = Type.Object({ id: Uuid('The webhook endpoint') })
export const CompanyEndpointParams = Type.Object({ company_id: Uuid('The company'), id: Uuid('The webhook endpoint') })
export const DeliveriesQuery = Type.Object(pageFieldsWithDefault(EVENTS_PAGE), { additionalProperties: false })
