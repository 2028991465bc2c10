import type { PaymentSource, SubscriptionRow } from '../../db/tables.ts'
import { ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { fromCatalogV1, itemsKnown } from './billing/chargebee-catalog-v1.ts'
import { stateFrom, type CbSubscription } from './billing/chargebee-mapping.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import { recordChange } from './subscriptions.events.ts'

/** Whose actor the events recorded from Chargebee (webhooks, reconciliation) name. */
export const CHARGEBEE_ACTOR = 'chargebee'

/**
 * Our stored subscription laid over by Chargebee's (a webhook's copy or one read back), as the
 * provider maps its answers (chargebee-mapping.ts), with what the webhooks and the
 * reconciliation add: a Product Catalog 1.0 copy is read as 2.0 (plan_id, addons), a copy that
 * names no items keeps the stored addons, and a subscription deleted at Chargebee is cancelled
 * here (at its cancelled_at, else `deletedAt`): the row stays, with its history and invoices.
 */
export function chargebeeState(before: SubscriptionRow, copy: CbSubscription, card: PaymentSource | null | undefined, options: { deletedAt?: Date } = {}): SubscriptionRow {
  const s = fromCatalogV1(copy)
  let after: SubscriptionRow = { ...before, ...stateFrom(before, s, card) }
  if (!itemsKnown(s)) after = { ...after, addons: before.addons }
  if (options.deletedAt) {
    const at = after.cancelled_at ?? before.cancelled_at ?? options.deletedAt
    after = { ...after, status: 'cancelled', cancelled_at: at, cancel_scheduled_at: null, current_term_end: at }
  }
  return after
}

/**
 * Saves Chargebee's state of a locked subscription with its subscription event; false when
 * nothing moved. A plan this catalogue lacks is refused whole (400 naming it), nothing saved:
 * a subscription refers to a plan of this catalogue (its foreign key), so Chargebee's retry,
 * once the plan exists here, applies it.
 */
export async function saveChargebeeState(
  trx: Executor, subscriptions: Pick<SubscriptionsRepository, 'findPlan' | 'update' | 'insertEvent'>, before: SubscriptionRow, after: SubscriptionRow,
  what: { event: string; at: Date; now: Date; details: Record<string, unknown> },
): Promise<boolean> {
  if (after.plan_sku !== before.plan_sku && !(await subscriptions.findPlan(trx, after.plan_sku))) {
    throw new ValidationError(`body/content/subscription/subscription_items names the plan ${after.plan_sku}, which is not in this service's catalogue`)
  }
  return recordChange(trx, subscriptions, before, after, { ...what, actor: CHARGEBEE_ACTOR })
}
