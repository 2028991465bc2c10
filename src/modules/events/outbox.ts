import { sql } from 'kysely'
import type { Executor } from '../../jobs/scheduler.ts'

/**
 * The outbox: triggers write events in the change's transaction, so no change commits without its
 * event or the reverse. writeEvent() serves events no table change stands for (INVOICE_EVENT_TYPES).
 */
export async function writeEvent(
  executor: Executor,
  event: { type: EventType; companyId: string | null; object: unknown; previousAttributes?: Record<string, unknown> },
): Promise<string> {
  const data = {
    object: event.object,
    ...(event.previousAttributes ? { previous_attributes: event.previousAttributes } : {}),
  }
  const { rows } = await sql<{
    id: string
  }>`SELECT write_event(${event.type}, ${event.companyId}, ${JSON.stringify(data)}::jsonb) AS id`.execute(executor)
  return rows[0]!.id
}

const CRUD = ['created', 'updated', 'deleted'] as const
const crud = <R extends string>(resource: R) => CRUD.map((verb) => `${resource}.${verb}` as const)

/** Each verb of subscription_events is an event subscription.<verb>. */
export const SUBSCRIPTION_VERBS = [
  'created',
  'changed',
  'activated',
  'renewed',
  'cancelled',
  'cancellation_scheduled',
  'scheduled_cancellation_removed',
  'reactivated',
  'changes_scheduled',
  'scheduled_changes_removed',
  'pause_scheduled',
  'paused',
  'resumed',
  'payment_source_added',
  // Reported by Chargebee (docs/chargebee.md).
  'started',
  'trial_extended',
  'deleted',
  'payment_source_updated',
  'payment_source_deleted',
  'reconciled',
] as const

/** Written by the invoices' and credit notes' triggers. */
export const INVOICE_EVENT_TYPES = [
  'invoice.created',
  'invoice.paid',
  'invoice.payment_failed',
  'invoice.not_paid',
  'invoice.voided',
  'invoice.updated',
  'invoice.payment_recorded',
  'invoice.written_off',
  'invoice.refunded',
  'credit_note.created',
  'credit_note.updated',
  'credit_note.refunded',
] as const

/** Money operations no table's trigger stands for (decisions §9.2), written by the ledger. */
export const CUSTOMER_CREDIT_EVENT_TYPES = ['customer.promotional_credits_changed', 'charge.created'] as const

/** A provider's ledger copy deleted there (Chargebee deletes invoices and credit notes). */
export const PROVIDER_LEDGER_EVENT_TYPES = ['invoice.deleted', 'credit_note.deleted'] as const

/** The Event shape's enum in the OpenAPI document. */
export const EVENT_TYPES = [
  'company.created',
  'company.updated',
  'company.disabled',
  'company.enabled',
  'company.deleted',
  ...crud('subsidiary'),
  ...crud('contract'),
  ...crud('team'),
  'team.member_added',
  'team.member_updated',
  'team.member_removed',
  ...crud('holiday'),
  ...crud('communication'),
  'communication.occurrence_delivered',
  'message.opened',
  'message.acknowledged',
  ...SUBSCRIPTION_VERBS.map((verb) => `subscription.${verb}` as const),
  ...INVOICE_EVENT_TYPES,
  ...PROVIDER_LEDGER_EVENT_TYPES,
  ...CUSTOMER_CREDIT_EVENT_TYPES,
  'ping',
] as const

export type EventType = (typeof EVENT_TYPES)[number]

export const EVENT_RESOURCES = [...new Set(EVENT_TYPES.map((type) => type.split('.')[0]!))]

export function isEventTypePattern(pattern: string): boolean {
  if (pattern.endsWith('.*')) return EVENT_RESOURCES.includes(pattern.slice(0, -2))
  return (EVENT_TYPES as readonly string[]).includes(pattern)
}
