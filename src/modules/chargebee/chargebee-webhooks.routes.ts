import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { App } from '../../http/app-types.ts'
import { Unauthorized } from '../../core/errors.ts'
import { ErrorBody } from '../../http/schemas.ts'
import type { ChargebeeWebhooksService } from './chargebee-webhooks.service.ts'

// Not strict, unlike our bodies: Chargebee adds fields as it sees fit, and refusing one would
// make it retry the delivery forever.
const ChargebeeEventBody = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      maxLength: 200,
      description: "Chargebee's event id: a repeated id changes nothing",
    }),
    event_type: Type.String({ minLength: 1, maxLength: 100 }),
    occurred_at: Type.Integer({ minimum: 0, description: 'Unix seconds' }),
    content: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The objects of the event: subscription, customer, card, payment_source, ...',
    }),
  },
  {
    additionalProperties: true,
    title: 'ChargebeeEvent',
    examples: [
      {
        id: 'ev_16BcLNTd4x0Y2',
        event_type: 'subscription_renewed',
        occurred_at: 1764149400,
        api_version: 'v2',
        content: {
          subscription: {
            id: '6d4b8f2a-1c7e-4a93-b6d5-8e2f4a1c9b57',
            status: 'active',
            resource_version: 1764149400123,
          },
        },
      },
    ],
  },
)

const WebhookAnswer = Type.Object(
  {
    event_id: Type.String(),
    outcome: Type.Union(
      [
        Type.Literal('applied'),
        Type.Literal('unchanged'),
        Type.Literal('stale'),
        Type.Literal('ignored'),
        Type.Literal('duplicate'),
      ],
      {
        description:
          'applied: the subscription, card or ledger changed; unchanged: it already was so; stale: an older ' +
          'state than the one applied; ignored: a type or subscription this service does not follow; duplicate: ' +
          'the event id was received before',
      },
    ),
  },
  {
    additionalProperties: false,
    title: 'ChargebeeWebhookOutcome',
    examples: [{ event_id: 'ev_16BcLNTd4x0Y2', outcome: 'applied' }],
  },
)

const digest = (value: string) => createHash('sha256').update(value).digest()

function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected))
}

class BasicUnauthorized extends Unauthorized {
  constructor() {
    super('Chargebee webhooks need the configured HTTP Basic credentials', 'chargebee-webhooks')
  }
}

/** With no credentials configured, every request is refused. */
export function basicAuthCheck(credentials: { user?: string; password?: string }) {
  return async (request: FastifyRequest) => {
    const { user, password } = credentials
    const header = request.headers.authorization ?? ''
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)
    if (!user || !password || !match) throw new BasicUnauthorized()
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon < 0) throw new BasicUnauthorized()
    // Both compared, always: the time does not tell which one was wrong.
    const userOk = sameSecret(decoded.slice(0, colon), user)
    const passwordOk = sameSecret(decoded.slice(colon + 1), password)
    if (!userOk || !passwordOk) throw new BasicUnauthorized()
  }
}

export async function chargebeeWebhooksRoutes(
  app: App,
  { service, credentials }: { service: ChargebeeWebhooksService; credentials: { user?: string; password?: string } },
) {
  app.post(
    '/api/v1/subscription/webhooks/chargebee',
    {
      config: { access: 'none', billingProvider: true },
      // Before the body is parsed: an unauthenticated request gets 401 whatever it sends.
      onRequest: basicAuthCheck(credentials),
      schema: {
        operationId: 'receiveChargebeeWebhook',
        tags: ['Subscription'],
        security: [{ chargebeeBasic: [] }],
        summary: 'Receive a Chargebee webhook event (HTTP Basic)',
        description:
          'Authenticated with HTTP Basic (CHARGEBEE_WEBHOOK_USER/PASSWORD), not a bearer token. Idempotent by ' +
          'event id: a repeated event answers 200 and changes nothing. Applies the subscription events ' +
          '(subscription_created, _started, _trial_extended, _changed, _activated, _renewed, _cancelled, ' +
          '_cancellation_scheduled, _scheduled_cancellation_removed, _reactivated, _paused, _resumed, _deleted, ' +
          'the *_with_backdating variants, the pause/resumption/changes scheduling ones) to the subscription and ' +
          "the company's mirror fields; payment_source_* and card_* events record or clear the card (brand, last " +
          "4, expiry); invoice_*, credit_note_* and payment_* events copy Chargebee's invoices and credit notes " +
          'into the ledger (GET .../invoices, .../credit_notes). Each object is applied only when its ' +
          'resource_version is newer than the last applied (else stale). Product Catalog 1.0 payloads (plan_id, ' +
          'addons) are accepted. Other event types (subscription_trial_end_reminder, ...) answer 200 and are ' +
          'ignored, as are subscriptions this service did not make. 400 for a malformed event.',
        body: ChargebeeEventBody,
        response: { 200: WebhookAnswer, 401: { ...ErrorBody, description: 'Missing or wrong HTTP Basic credentials' } },
      },
    },
    async (request) => service.chargebee(request.body),
  )
}
