import type { SUBSCRIPTION_VERBS } from '../events/outbox.ts'

type Verb = typeof SUBSCRIPTION_VERBS[number]

/**
 * Chargebee's event types this service follows (https://apidocs.chargebee.com/docs/api/events#event_types;
 * the names are those of the `chargebee` SDK's WebhookEventType) and the subscription event
 * (subscription.<verb>) each records when it moves the subscription.
 *
 * The `*_with_backdating` variants are the same changes dated in the past (their occurred_at is
 * now; the subscription's own dates say when): they record the plain verb. The scheduling events
 * (pause, resumption and changes scheduled or removed) move nothing this service keeps today;
 * their subscription is applied all the same (a later state, as any other) and records `changed`.
 */
export const SUBSCRIPTION_EVENTS: Record<string, Verb> = {
  subscription_created: 'created',
  subscription_created_with_backdating: 'created',
  subscription_started: 'started',
  subscription_trial_extended: 'trial_extended',
  subscription_changed: 'changed',
  subscription_changed_with_backdating: 'changed',
  subscription_changes_scheduled: 'changed',
  subscription_scheduled_changes_removed: 'changed',
  subscription_activated: 'activated',
  subscription_activated_with_backdating: 'activated',
  subscription_renewed: 'renewed',
  subscription_cancelled: 'cancelled',
  subscription_canceled_with_backdating: 'cancelled',
  subscription_cancellation_scheduled: 'cancellation_scheduled',
  subscription_scheduled_cancellation_removed: 'scheduled_cancellation_removed',
  subscription_reactivated: 'reactivated',
  subscription_reactivated_with_backdating: 'reactivated',
  subscription_paused: 'paused',
  subscription_resumed: 'resumed',
  subscription_pause_scheduled: 'changed',
  subscription_scheduled_pause_removed: 'changed',
  subscription_resumption_scheduled: 'changed',
  subscription_scheduled_resumption_removed: 'changed',
  subscription_deleted: 'deleted',
}

/**
 * Card events: the payment source API's and the older card API's (`card_*`, content.card). An
 * expired or expiring card is an update of the card (its data as Chargebee now has it).
 */
export const PAYMENT_SOURCE_EVENTS: Record<string, 'payment_source_added' | 'payment_source_updated' | 'payment_source_deleted'> = {
  payment_source_added: 'payment_source_added',
  card_added: 'payment_source_added',
  payment_source_updated: 'payment_source_updated',
  payment_source_expired: 'payment_source_updated',
  payment_source_expiring: 'payment_source_updated',
  card_updated: 'payment_source_updated',
  card_expired: 'payment_source_updated',
  card_expiry_reminder: 'payment_source_updated',
  payment_source_deleted: 'payment_source_deleted',
  payment_source_locally_deleted: 'payment_source_deleted',
  card_deleted: 'payment_source_deleted',
}

/**
 * Events whose content carries invoices or credit notes (content.invoice, content.credit_note,
 * one or a list) and maybe the subscription as it now is: the ledger copies are applied, and the
 * subscription as `changed`. `payment_failed` counts an attempt on its invoice.
 */
export const LEDGER_EVENTS = new Set([
  'invoice_generated', 'invoice_generated_with_backdating', 'invoice_updated', 'invoice_deleted',
  'pending_invoice_created', 'pending_invoice_updated',
  'credit_note_created', 'credit_note_created_with_backdating', 'credit_note_updated', 'credit_note_deleted',
  'payment_succeeded', 'payment_failed', 'payment_refunded', 'payment_initiated',
])

/** Whether an event of this type is followed at all (the others answer `ignored`). */
export function isFollowed(type: string): boolean {
  return type in SUBSCRIPTION_EVENTS || type in PAYMENT_SOURCE_EVENTS || LEDGER_EVENTS.has(type)
}
