import { Type, type Static } from 'typebox'
import { Nullable, Uuid } from '../../http/schemas.ts'
import { SecretString } from '../../http/secret-fields.ts'
import { pageFieldsWithDefault } from '../../http/pagination.ts'
import { EVENTS_PAGE } from '../events/events.schemas.ts'
import { ATTEMPT_ERROR_PATTERN } from './attempt-errors.ts'

const EXAMPLE_ID = '3f6c2a1e-8b7d-4e59-a0c4-5d1e9f2b7a63'
const COMPANY_ID = '0f9d3c52-6a7e-4bb1-9a8f-2f4c1d7e9b10'

export const WebhookEndpointInput = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      format: 'uri',
      description:
        'Where events are POSTed: https (http only with WEBHOOK_ALLOW_PRIVATE_TARGETS=true), to a public unicast ' +
        'address. Refused (400 naming url), as a literal address here and as what a name resolves to at each ' +
        'delivery: loopback, private, link-local, multicast, reserved and IPv4 written inside IPv6 ' +
        '(::ffff:0:0/96, ::/96, 64:ff9b::/96, 64:ff9b:1::/48, 2002::/16, 2001::/32), fec0::/10. ' +
        'WEBHOOK_ALLOW_PRIVATE_TARGETS=true lets through loopback and private ranges written plainly ' +
        '(127.0.0.0/8, ::1, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7), never the other forms',
    }),
    event_types: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        maxItems: 100,
        uniqueItems: true,
        description:
          'The types to send: event types (`team.member_added`) or `<resource>.*` (`subscription.*`); empty or ' +
          'left out: every type',
      }),
    ),
    description: Type.Optional(Nullable(Type.String({ maxLength: 500, description: 'A note for people' }))),
    enabled: Type.Optional(Type.Boolean({ description: 'Whether events are sent (default true)' })),
  },
  {
    additionalProperties: false,
    title: 'WebhookEndpointInput',
    examples: [
      {
        url: 'https://hr.example.com/hooks/company-admin',
        event_types: ['subscription.*', 'team.member_added'],
        description: 'HR sync',
      },
    ],
  },
)
export type WebhookEndpointInput = Static<typeof WebhookEndpointInput>

export const WebhookEndpointUpdate = Type.Object(
  {
    url: Type.Optional(WebhookEndpointInput.properties.url),
    event_types: WebhookEndpointInput.properties.event_types,
    description: WebhookEndpointInput.properties.description,
    enabled: Type.Optional(
      Type.Boolean({
        description:
          'true re-enables a disabled endpoint (the reason is cleared; events written while it was disabled are ' +
          'not sent: read them from the event log); false stops sending',
      }),
    ),
  },
  {
    additionalProperties: false,
    title: 'WebhookEndpointUpdate',
    examples: [{ enabled: true }, { event_types: ['subscription.*'] }],
  },
)
export type WebhookEndpointUpdate = Static<typeof WebhookEndpointUpdate>

export const SecretRotation = Type.Object(
  {
    previous_secret_expires_in: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604800,
        description:
          'Seconds the replaced secret keeps signing beside the new one (0 to 604800, 7 days; default 86400): ' +
          'each delivery then carries two signatures, `v1,<new> v1,<old>`. 0: the old secret stops at once',
      }),
    ),
  },
  { additionalProperties: false, title: 'SecretRotation', examples: [{ previous_secret_expires_in: 3600 }] },
)
export type SecretRotation = Static<typeof SecretRotation>

const endpointFields = {
  id: Uuid('The endpoint'),
  company_id: Nullable(
    Uuid("The company whose events it hears; null: a platform endpoint, which hears every company's"),
  ),
  url: Type.String(),
  event_types: Type.Array(Type.String(), { description: 'Empty: every type' }),
  description: Nullable(Type.String()),
  enabled: Type.Boolean({
    description:
      'False once a delivery has failed for three days, once its creator client is revoked or its company ' +
      'disabled (see disabled_reason), or when created or set disabled',
  }),
  disabled_reason: Nullable(
    Type.String({
      description:
        '`client_revoked`: the client in `created_by` was revoked; `company_disabled`: the company was disabled; ' +
        'otherwise a sentence (three days of failed deliveries, or disabled through the API). Null while enabled',
    }),
  ),
  created_by: Nullable(
    Type.String({
      description:
        'The client whose token made the endpoint, or last re-enabled it: it answers for the endpoint, which ' +
        'stops when that client is revoked. Null: made before creators were recorded',
    }),
  ),
  previous_secret_expires_at: Nullable(
    Type.String({
      format: 'date-time',
      description:
        'After a secret rotation: until when the replaced secret still signs beside the new one; null when only ' +
        'one secret signs',
    }),
  ),
  created_at: Type.String({ format: 'date-time' }),
}
const EXAMPLE = {
  id: EXAMPLE_ID,
  company_id: COMPANY_ID,
  url: 'https://hr.example.com/hooks/company-admin',
  event_types: ['subscription.*', 'team.member_added'],
  description: 'HR sync',
  enabled: true,
  disabled_reason: null,
  created_by: 'company_7d1e0c4a-2f6b-4c1d-9e8a-3b5f2a6c9d01',
  previous_secret_expires_at: null,
  created_at: '2026-11-26T09:00:00.000Z',
}

export const WebhookEndpoint = Type.Object(endpointFields, {
  additionalProperties: false,
  title: 'WebhookEndpoint',
  examples: [EXAMPLE],
})
export type WebhookEndpoint = Static<typeof WebhookEndpoint>

export const CreatedWebhookEndpoint = Type.Object(
  {
    ...endpointFields,
    secret: SecretString('The signing secret (`whsec_` + base64)'),
  },
  {
    additionalProperties: false,
    title: 'CreatedWebhookEndpoint',
    examples: [{ ...EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3gkS+fvRvQo=' }],
  },
)

export const DeliveryAttempt = Type.Object(
  {
    id: Type.String({ description: 'The attempt' }),
    delivery_id: Uuid('The delivery (one event to this endpoint) the attempt belongs to'),
    event_id: Uuid('The event; the `webhook-id` header'),
    event_type: Type.String(),
    attempt: Type.Integer({ minimum: 1, description: '1 for the first attempt, 2 for the first retry, ...' }),
    started_at: Type.String({ format: 'date-time' }),
    status: Type.Union(
      [
        Type.Literal('succeeded'),
        Type.Literal('failed'),
        Type.Literal('timeout'),
        Type.Literal('error'),
        Type.Literal('refused'),
        Type.Literal('lost'),
      ],
      {
        description:
          'An attempt is listed once it has ended. succeeded: a 2xx; failed: another status; timeout: no answer ' +
          "in time; error: no connection; refused: the target's address is one webhooks may not reach; lost: its " +
          'instance stopped (the next attempt follows)',
      },
    ),
    status_code: Nullable(Type.Integer({ description: "The receiver's HTTP status" })),
    duration_ms: Nullable(Type.Integer()),
    error: Nullable(
      Type.String({
        pattern: ATTEMPT_ERROR_PATTERN,
        description:
          'Why the attempt did not succeed, as a code (never an address, port or host name): `timeout` (no ' +
          "answer in time), `connection_refused` (no connection could be made, or the target's address is one " +
          'webhooks may not reach: status `refused`), `dns_failure` (the name does not resolve), `tls_error` ' +
          '(the TLS handshake or the certificate failed), `invalid_response` (the connection closed, or what ' +
          'came back is not HTTP), `http_<status>` (the receiver answered a status other than 2xx: `http_500`). ' +
          'Null after a success and for `lost`',
        examples: ['http_500', 'timeout', 'connection_refused'],
      }),
    ),
    next_retry_at: Nullable(
      Type.String({
        format: 'date-time',
        description: 'When the next attempt runs, after a failure; null after a success or the last attempt',
      }),
    ),
  },
  {
    additionalProperties: false,
    title: 'WebhookDeliveryAttempt',
    examples: [
      {
        id: '42',
        delivery_id: 'b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e',
        event_id: '5b0e6f0e-1c7a-4a59-9a51-8d3f7c1e2a44',
        event_type: 'team.member_added',
        attempt: 2,
        started_at: '2026-11-26T09:15:07.300Z',
        status: 'failed',
        status_code: 500,
        duration_ms: 84,
        error: 'http_500',
        next_retry_at: '2026-11-26T09:20:07.384Z',
      },
    ],
  },
)
export type DeliveryAttempt = Static<typeof DeliveryAttempt>

export const EndpointParams = Type.Object({ id: Uuid('The webhook endpoint') })
export const CompanyEndpointParams = Type.Object({ company_id: Uuid('The company'), id: Uuid('The webhook endpoint') })
export const DeliveriesQuery = Type.Object(pageFieldsWithDefault(EVENTS_PAGE), { additionalProperties: false })
