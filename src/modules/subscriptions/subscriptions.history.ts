import type { SubscriptionRow } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'

/**
 * Told of every change of a company's subscriptions in the change's transaction, after the row is
 * written (the revenue analytics keep their table so).
 */
export interface SubscriptionChangeListener {
  subscriptionChanged(trx: Executor, companyId: string, at: Date): Promise<void>
}

const TRACKED = [
  'status',
  'plan_sku',
  'plan_quantity',
  'addons',
  'coupon_code',
  'trial_start',
  'trial_end',
  'current_term_start',
  'current_term_end',
  'cancelled_at',
  'cancel_scheduled_at',
  'payment_source',
  'billing_anchor_day',
  'cancellation_reason',
  'cancellation_message',
  'coupon_applied_at',
  'coupon_applied_count',
  'coupon_apply_till',
  'coupon_period_start',
  'coupon_period_discounts',
  'scheduled_change',
  'pause_date',
  'resume_date',
] as const satisfies readonly (keyof SubscriptionRow)[]

// jsonb returns keys in its own order, so objects compare with sorted keys.
function plain(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value)) return value.map(plain)
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, plain((value as Record<string, unknown>)[k])]),
    )
  return value ?? null
}

export function changesBetween(before: SubscriptionRow, after: SubscriptionRow): Record<string, [unknown, unknown]> {
  const changes: Record<string, [unknown, unknown]> = {}
  for (const column of TRACKED) {
    const [a, b] = [plain(before[column]), plain(after[column])]
    if (JSON.stringify(a) !== JSON.stringify(b)) changes[column] = [a, b]
  }
  return changes
}

/** Writes the new state and its event with each moved field; nothing moved: nothing written, false. */
export async function recordChange(
  trx: Executor,
  repo: Pick<SubscriptionsRepository, 'update' | 'insertEvent'>,
  before: SubscriptionRow,
  after: SubscriptionRow,
  what: { event: string; actor: string; at: Date; now: Date; details?: Record<string, unknown> },
  listener?: SubscriptionChangeListener,
): Promise<boolean> {
  const changes = changesBetween(before, after)
  if (Object.keys(changes).length === 0) return false
  await repo.update(trx, before.company_id, before.id, {
    status: after.status,
    plan_sku: after.plan_sku,
    plan_quantity: after.plan_quantity,
    addons: JSON.stringify(after.addons),
    coupon_code: after.coupon_code,
    trial_start: after.trial_start,
    trial_end: after.trial_end,
    current_term_start: after.current_term_start,
    current_term_end: after.current_term_end,
    cancelled_at: after.cancelled_at,
    cancel_scheduled_at: after.cancel_scheduled_at,
    payment_source: JSON.stringify(after.payment_source),
    billing_anchor_day: after.billing_anchor_day,
    cancellation_reason: after.cancellation_reason,
    cancellation_message: after.cancellation_message,
    coupon_applied_at: after.coupon_applied_at,
    coupon_applied_count: after.coupon_applied_count,
    coupon_apply_till: after.coupon_apply_till,
    coupon_period_start: after.coupon_period_start,
    coupon_period_discounts: JSON.stringify(after.coupon_period_discounts ?? {}),
    scheduled_change: after.scheduled_change ? JSON.stringify(after.scheduled_change) : null,
    pause_date: after.pause_date ?? null,
    resume_date: after.resume_date ?? null,
    updated_at: what.now,
  })
  await repo.insertEvent(trx, {
    company_id: before.company_id,
    subscription_id: before.id,
    event_type: what.event,
    from_status: before.status,
    to_status: after.status,
    actor: what.actor,
    occurred_at: what.at,
    details: JSON.stringify({ changes, ...what.details }),
  })
  await listener?.subscriptionChanged(trx, before.company_id, what.at)
  return true
}
