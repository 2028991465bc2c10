import type { SUBSCRIPTION_VERBS } from '../events/outbox.ts'

type Verb = (typeof SUBSCRIPTION_VERBS)[number]

/**
 * Chargebee's event types this service follows and the subscription.<verb> each records. The
 * `*_with_backdating` variants record the plain verb; scheduling events (pause, resumption) move
 * nothing kept here and record `changed`.
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

/** Both the payment source API's events and the older `card_*` ones; an expiring card is an update. */
export const PAYMENT_SOURCE_EVENTS: Record<
  string,
  'payment_source_added' | 'payment_source_updated' | 'payment_source_deleted'
> = {
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

/** Content carries invoices or credit notes, maybe the subscription (`changed`); `payment_failed` counts an attempt. */
export const LEDGER_EVENTS = new Set([
  'invoice_generated',
  'invoice_generated_with_backdating',
  'invoice_updated',
  'invoice_deleted',
  'pending_invoice_created',
  'pending_invoice_updated',
  'credit_note_created',
  'credit_note_created_with_backdating',
  'credit_note_updated',
  'credit_note_deleted',
  'payment_succeeded',
  'payment_failed',
  'payment_refunded',
  'payment_initiated',
])

export function isFollowed(type: string): boolean {
  return type in SUBSCRIPTION_EVENTS || type in PAYMENT_SOURCE_EVENTS || LEDGER_EVENTS.has(type)
}
