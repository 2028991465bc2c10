import { sql } from 'kysely'
import type { Executor } from '../../jobs/scheduler.ts'

/**
 * The outbox. Events are written by triggers on the tables that hold the resources (migration
 * 0019), through the SQL function write_event(): the event, and its fan-out row when a webhook
 * endpoint wants it (migration 0034), in the transaction of the change. No code path
 * can commit a change without its event, or an event without its change: a batched write
 * (src/db/write-batches.ts) gets one event per row it writes, a job's change rides the job's
 * transaction, and a kill -9 rolls back both. So the repositories have nothing to call.
 *
 * writeEvent() is the same outbox for an event no table change stands for, inside the
 * caller's transaction: the invoices' engine calls it (`invoice.payment_failed`, ...) with
 * the invoice as it now is, or adds a trigger of its own on its table as migration 0019 does;
 * either way its types go into INVOICE_EVENT_TYPES below, which the OpenAPI document lists.
 */
export async function writeEvent(executor: Executor, event: { type: EventType; companyId: string | null; object: unknown; previousAttributes?: Record<string, unknown> }): Promise<string> {
  const data = { object: event.object, ...(event.previousAttributes ? { previous_attributes: event.previousAttributes } : {}) }
  const { rows } = await sql<{ id: string }>`SELECT write_event(${event.type}, ${event.companyId}, ${JSON.stringify(data)}::jsonb) AS id`.execute(executor)
  return rows[0]!.id
}

const CRUD = ['created', 'updated', 'deleted'] as const
const crud = <R extends string>(resource: R) => CRUD.map((verb) => `${resource}.${verb}` as const)

/** The verbs of subscription_events (subscriptions.service.ts, .changes.ts, .jobs.ts, chargebee-webhooks.service.ts), each an event subscription.<verb>. */
export const SUBSCRIPTION_VERBS = [
  'created', 'changed', 'activated', 'renewed', 'cancelled', 'cancellation_scheduled', 'scheduled_cancellation_removed',
  'reactivated', 'paused', 'resumed', 'payment_source_added',
  // Reported by Chargebee (docs/chargebee.md): a future subscription started, a trial extended, a
  // subscription deleted there, a card changed or removed, and a drift the reconciliation corrected.
  'started', 'trial_extended', 'deleted', 'payment_source_updated', 'payment_source_deleted', 'reconciled',
] as const

/** The ledger's types, written by the invoices' and credit notes' triggers (migration 0020). */
export const INVOICE_EVENT_TYPES = [
  'invoice.created', 'invoice.paid', 'invoice.payment_failed', 'invoice.not_paid', 'invoice.voided', 'invoice.updated',
  'credit_note.created', 'credit_note.updated',
] as const

/** A provider's ledger copy deleted there (Chargebee deletes invoices and credit notes): written by invoices/provider-ledger.service.ts. */
export const PROVIDER_LEDGER_EVENT_TYPES = ['invoice.deleted', 'credit_note.deleted'] as const

/** Every type an event can have; the Event shape's enum in the OpenAPI document. */
export const EVENT_TYPES = [
  'company.created', 'company.updated', 'company.disabled', 'company.enabled', 'company.deleted',
  ...crud('subsidiary'),
  ...crud('contract'),
  ...crud('team'), 'team.member_added', 'team.member_updated', 'team.member_removed',
  ...crud('holiday'),
  ...crud('communication'), 'communication.occurrence_delivered',
  'message.opened', 'message.acknowledged',
  ...SUBSCRIPTION_VERBS.map((verb) => `subscription.${verb}` as const),
  ...INVOICE_EVENT_TYPES,
  ...PROVIDER_LEDGER_EVENT_TYPES,
  'ping',
] as const

export type EventType = typeof EVENT_TYPES[number]

/** The resources, for a `<resource>.*` filter. */
export const EVENT_RESOURCES = [...new Set(EVENT_TYPES.map((type) => type.split('.')[0]!))]

/** Whether `pattern` is an event type or `<resource>.*`. */
export function isEventTypePattern(pattern: string): boolean {
  if (pattern.endsWith('.*')) return EVENT_RESOURCES.includes(pattern.slice(0, -2))
  return (EVENT_TYPES as readonly string[]).includes(pattern)
}
