import type { CbSubscription, CbSubscriptionItem } from './chargebee-mapping.ts'

/**
 * Product Catalog 1.0 subscriptions (https://apidocs.chargebee.com/docs/api/subscriptions?prod_cat_ver=1):
 * a site still on the old catalogue, or an event whose api_version/catalogue predates the
 * migration, sends `plan_id`, `plan_quantity`, `addons: [{id, quantity}]` and `coupon` (or
 * `coupons`) instead of `subscription_items`. Mapped here onto the 2.0 shape the rest of the
 * service reads: the plan as the item of type plan, each addon as an item of type addon, so that
 * such a payload keeps the subscription's addons instead of clearing them. A payload with items
 * is left as it is; one with neither items nor a plan_id says nothing of them (see `itemsKnown`).
 */
interface CbSubscriptionV1 { plan_id?: unknown; plan_quantity?: unknown; addons?: unknown; coupon?: unknown }

export function fromCatalogV1<S extends CbSubscription>(s: S): S {
  const v1 = s as S & CbSubscriptionV1
  if (s.subscription_items !== undefined || typeof v1.plan_id !== 'string') return s
  const addons = Array.isArray(v1.addons) ? v1.addons as { id?: unknown; quantity?: unknown }[] : []
  const items: CbSubscriptionItem[] = [
    { item_price_id: v1.plan_id, item_type: 'plan', quantity: typeof v1.plan_quantity === 'number' ? v1.plan_quantity : 1 },
    ...addons.filter((a) => typeof a?.id === 'string').map((a) => ({ item_price_id: a.id as string, item_type: 'addon' as const, quantity: typeof a.quantity === 'number' ? a.quantity : 1 })),
  ]
  const coupons = s.coupons ?? (typeof v1.coupon === 'string' ? [{ coupon_id: v1.coupon }] : undefined)
  return { ...s, subscription_items: items, ...(coupons ? { coupons } : {}) }
}

/** Whether the payload says which items the subscription has (2.0 items or a 1.0 plan); else the stored ones stay. */
export function itemsKnown(s: CbSubscription): boolean {
  return s.subscription_items !== undefined
}
