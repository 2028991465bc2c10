import type { PaymentSource, SubscriptionRow } from '../../db/tables.ts'
import { ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { fromCatalogV1, itemsKnown } from './chargebee.catalog-v1.ts'
import { stateFrom, type CbSubscription } from './chargebee.mapping.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'

export const CHARGEBEE_ACTOR = 'chargebee'

/**
 * Our stored subscription laid over by Chargebee's copy: a Product Catalog 1.0 copy is read as 2.0,
 * one naming no items keeps the stored addons, and a deletion at Chargebee cancels here (the row
 * stays, with its history and invoices).
 */
export function chargebeeState(
  before: SubscriptionRow,
  copy: CbSubscription,
  card: PaymentSource | null | undefined,
  options: { deletedAt?: Date } = {},
): SubscriptionRow {
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
 * Saves Chargebee's state with its event; false when nothing moved. A plan this catalogue lacks is
 * refused whole (400), so Chargebee's retry applies it once the plan exists here.
 */
export async function saveChargebeeState(
  trx: Executor,
  subscriptions: Pick<SubscriptionsService, 'planExists' | 'recordProviderChange'>,
  before: SubscriptionRow,
  after: SubscriptionRow,
  what: { event: string; at: Date; now: Date; details: Record<string, unknown> },
): Promise<boolean> {
  if (after.plan_sku !== before.plan_sku && !(await subscriptions.planExists(trx, after.plan_sku))) {
    throw new ValidationError(
      `body/content/subscription/subscription_items names the plan ${after.plan_sku}, ` +
        `which is not in this service's catalogue`,
    )
  }
  return subscriptions.recordProviderChange(trx, before, after, { ...what, actor: CHARGEBEE_ACTOR })
}
