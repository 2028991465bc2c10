import type { Kysely } from 'kysely'
import type { Clock } from '../../clock.ts'
import type { DB, PaymentSource, WebhookOutcome } from '../../db/tables.ts'
import { ValidationError } from '../../http/errors.ts'
import { cardOf, isCbSubscription, stateFrom, type CbCard, type CbPaymentSource, type CbSubscription } from './billing/chargebee-mapping.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import { recordChange } from './subscriptions.events.ts'
import type { WebhooksRepository } from './webhooks.repository.ts'
import type { ChargebeeProvider } from './billing/chargebee-provider.ts'

/** A Chargebee webhook event, as far as this service reads it (its other fields are ignored). */
export interface ChargebeeEvent { id: string; event_type: string; occurred_at: number; content: Record<string, unknown> }

/** Chargebee's event types this service applies, and the subscription event each records. */
const SUBSCRIPTION_EVENTS: Record<string, string> = {
  subscription_created: 'created',
  subscription_changed: 'changed',
  subscription_activated: 'activated',
  subscription_renewed: 'renewed',
  subscription_cancelled: 'cancelled',
  subscription_cancellation_scheduled: 'cancellation_scheduled',
  subscription_scheduled_cancellation_removed: 'scheduled_cancellation_removed',
  subscription_reactivated: 'reactivated',
  subscription_paused: 'paused',
  subscription_resumed: 'resumed',
}
const PAYMENT_SOURCE_EVENTS = new Set(['payment_source_added', 'payment_source_updated'])

/** Whose actor the events recorded from Chargebee's webhooks name. */
export const CHARGEBEE_ACTOR = 'chargebee'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Changes reported by Chargebee (decisions §6): each event is applied at most once (its id is
 * kept in the same transaction as the change), and a subscription's state only moves forward
 * (an event whose subscription `resource_version` is not newer than the last applied one is
 * stale). The state is the event's subscription mapped as the provider maps its answers, saved
 * with a subscription event; the company's mirror fields are joined from that row.
 *
 * The versions kept are those of webhooks; a change made through this API is saved from
 * Chargebee's answer, whose version is not kept. So an event that occurred before the row's
 * last change (say a late `subscription_created` after an update) is not trusted: the
 * subscription is read from Chargebee and that current state is applied instead.
 */
export function createWebhooksService(deps: {
  db: Kysely<DB>; repo: WebhooksRepository; subscriptions: SubscriptionsRepository; clock: Clock
  /** Chargebee's current view of a subscription, read when an event predates this service's last change of it. */
  chargebee?: Pick<ChargebeeProvider, 'fetchSubscription'>
}) {
  const { db, repo, clock } = deps

  /** The event's subscription, checked: a malformed one is the sender's error (400). */
  function subscriptionOf(event: ChargebeeEvent): CbSubscription {
    const s = event.content.subscription
    if (!isCbSubscription(s)) throw new ValidationError('body/content/subscription must be a Chargebee subscription with id, customer_id, status and subscription_items')
    return s
  }

  function cardIn(event: ChargebeeEvent): PaymentSource | null {
    const source = event.content.payment_source as CbPaymentSource | undefined
    return cardOf(source?.card ?? (event.content.card as CbCard | undefined))
  }

  /** A version to order states by: Chargebee's resource_version, else its updated_at or the event's time, in ms. */
  function versionOf(s: CbSubscription, event: ChargebeeEvent): bigint {
    if (Number.isSafeInteger(s.resource_version)) return BigInt(s.resource_version!)
    return BigInt(Math.trunc((s.updated_at ?? event.occurred_at) * 1000))
  }

  return {
    /** Applies one Chargebee event; answers what it did (a repeated event: `duplicate`, nothing changed). */
    async chargebee(event: ChargebeeEvent): Promise<{ event_id: string; outcome: WebhookOutcome | 'duplicate' }> {
      const subscriptionEvent = SUBSCRIPTION_EVENTS[event.event_type]
      const cbSubscription = subscriptionEvent ? subscriptionOf(event) : undefined
      const card = PAYMENT_SOURCE_EVENTS.has(event.event_type) ? cardIn(event) : undefined
      if (PAYMENT_SOURCE_EVENTS.has(event.event_type) && !card) {
        throw new ValidationError('body/content/payment_source must carry a card with last4, expiry_month and expiry_year')
      }
      const occurredAt = new Date(event.occurred_at * 1000)

      return db.transaction().execute(async (trx) => {
        const fresh = await repo.recordEvent(trx, { provider: 'chargebee', event_id: event.id, event_type: event.event_type, occurred_at: occurredAt, received_at: clock.now() })
        if (!fresh) return { event_id: event.id, outcome: 'duplicate' as const }
        const finish = async (outcome: WebhookOutcome, subscriptionId: string | null = null) => {
          await repo.setOutcome(trx, 'chargebee', event.id, outcome, subscriptionId)
          return { event_id: event.id, outcome }
        }
        if (!subscriptionEvent && card === undefined) return finish('ignored')

        // Only a subscription this service made on Chargebee (our UUID, our company as the customer).
        const customerId = cbSubscription?.customer_id ?? (event.content.customer as { id?: unknown } | undefined)?.id
        const ref = cbSubscription ? (UUID.test(cbSubscription.id) ? { id: cbSubscription.id } : null) : typeof customerId === 'string' ? { customerId } : null
        const found = ref && await repo.findSubscription(trx, ref)
        if (!found || found.provider !== 'chargebee') return finish('ignored')
        const before = await deps.subscriptions.lockByCompany(trx, found.company_id)
        if (!before || before.id !== found.id) return finish('ignored')

        let after
        if (cbSubscription) {
          if (!(await repo.advanceVersion(trx, before.id, versionOf(cbSubscription, event), occurredAt))) return finish('stale', before.id)
          let current: { subscription: CbSubscription; card?: PaymentSource | null } = { subscription: cbSubscription, card }
          if (deps.chargebee && occurredAt.getTime() < before.updated_at.getTime()) {
            current = await deps.chargebee.fetchSubscription(before.id)
            await repo.advanceVersion(trx, before.id, versionOf(current.subscription, event), occurredAt)
          }
          after = stateFrom(before, current.subscription, current.card)
          // A subscription refers to a plan of this catalogue (its foreign key): a plan made only
          // on Chargebee is the sender's mismatch, refused whole so that a retry, once the plan
          // exists here, applies the event.
          if (after.plan_sku !== before.plan_sku && !(await deps.subscriptions.findPlan(trx, after.plan_sku))) {
            throw new ValidationError(`body/content/subscription/subscription_items names the plan ${after.plan_sku}, which is not in this service's catalogue`)
          }
        } else {
          after = { ...before, payment_source: card! }
        }
        const changed = await recordChange(trx, deps.subscriptions, before, after, {
          event: subscriptionEvent ?? 'payment_source_added', actor: CHARGEBEE_ACTOR, at: occurredAt, now: clock.now(),
          details: { provider_event: { id: event.id, type: event.event_type } },
        })
        return finish(changed ? 'applied' : 'unchanged', before.id)
      })
    },
  }
}

export type WebhooksService = ReturnType<typeof createWebhooksService>
