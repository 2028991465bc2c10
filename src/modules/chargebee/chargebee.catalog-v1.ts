import type { CbSubscription, CbSubscriptionItem } from './chargebee.mapping.ts'

/**
 * Product Catalog 1.0 subscriptions (`plan_id`, `addons`, `coupon`) mapped onto the 2.0 items the
 * rest of the service reads, so such a payload keeps the addons instead of clearing them.
 */
interface CbSubscriptionV1 {
  plan_id?: unknown
  plan_quantity?: unknown
  addons?: unknown
  coupon?: unknown
}

export function fromCatalogV1<S extends CbSubscription>(s: S): S {
  const v1 = s as S & CbSubscriptionV1
  if (s.subscription_items !== undefined || typeof v1.plan_id !== 'string') return s
  const addons = Array.isArray(v1.addons) ? (v1.addons as { id?: unknown; quantity?: unknown }[]) : []
  const items: CbSubscriptionItem[] = [
    {
      item_price_id: v1.plan_id,
      item_type: 'plan',
      quantity: typeof v1.plan_quantity === 'number' ? v1.plan_quantity : 1,
    },
    ...addons
      .filter((a) => typeof a?.id === 'string')
      .map((a) => ({
        item_price_id: a.id as string,
        item_type: 'addon' as const,
        quantity: typeof a.quantity === 'number' ? a.quantity : 1,
      })),
  ]
  const coupons = s.coupons ?? (typeof v1.coupon === 'string' ? [{ coupon_id: v1.coupon }] : undefined)
  return { ...s, subscription_items: items, ...(coupons ? { coupons } : {}) }
}

/** Whether the payload says which items the subscription has (2.0 items or a 1.0 plan); else the stored ones stay. */
export function itemsKnown(s: CbSubscription): boolean {
  return s.subscription_items !== undefined
}
