import { ProviderError } from '../../core/errors.ts'
import { providerErrorFrom } from './chargebee.errors.ts'
import { cardOf, stateFrom, type CbSubscription } from './chargebee.mapping.ts'
import type { SubscriptionAnswer } from './chargebee.read-back.ts'
import { RetriesFailed, withRetries, type RetryPolicy } from './chargebee.retry.ts'
import type { BillingState, ChangeRequest } from '../billing/index.ts'

/** Chargebee's header that makes a POST idempotent. */
export const IDEMPOTENCY_HEADER = 'chargebee-idempotency-key'

/**
 * Every Chargebee write carries an idempotency key, is retried with that key on temporary failures,
 * and an uncertain outcome is settled by reading Chargebee back. So a write reported as failed was
 * not applied, unless Chargebee cannot even be read (then the 502 says the outcome is unknown).
 */
export function createWriter(policy: RetryPolicy) {
  return async function write<T>(
    action: string,
    key: string,
    call: (headers: Record<string, string>) => Promise<T>,
    settle: () => Promise<T | null>,
  ): Promise<T> {
    try {
      return await withRetries(policy, () => call({ [IDEMPOTENCY_HEADER]: key }))
    } catch (err) {
      if (!(err instanceof RetriesFailed)) throw providerErrorFrom(err, action)
      if (!err.uncertain) throw providerErrorFrom(err.last, action)
      let settled: T | null
      try {
        settled = await settle()
      } catch (readFailure) {
        throw new ProviderError(
          `Chargebee did not answer whether it applied the request to ${action} ` +
            `(${(err.last as Error)?.message ?? 'no answer'}), and could not be read back ` +
            `(${(readFailure as Error).message}); the outcome arrives by Chargebee's webhook`,
        )
      }
      if (settled === null) throw providerErrorFrom(err.last, action)
      return settled
    }
  }
}

export type Writer = ReturnType<typeof createWriter>

const date = (seconds: number | undefined | null): Date | null =>
  typeof seconds === 'number' ? new Date(seconds * 1000) : null

/** Chargebee may hold extra coupons; ours is `prefer` while Chargebee holds it, else Chargebee's first. */
export function stateOf(
  stored: BillingState,
  answer: SubscriptionAnswer,
  prefer: string | null = stored.coupon_code,
): BillingState {
  const next = stateFrom(stored, answer.subscription, cardOf(answer.card))
  const coupons = answer.subscription.coupons ?? []
  const chosen =
    coupons.find((c) => c.coupon_id === prefer) ?? coupons.find((c) => c.coupon_id === stored.coupon_code) ?? coupons[0]
  if (!chosen) return next
  return {
    ...next,
    coupon_code: chosen.coupon_id,
    coupon_applied_count: chosen.applied_count ?? 0,
    coupon_apply_till: date(chosen.apply_till),
  }
}

function removedAddons(change: Pick<ChangeRequest, 'selection' | 'current'>): string[] {
  const wanted = new Set(change.selection.addons.map((a) => a.id))
  return change.current.addons.filter((a) => !wanted.has(a.id)).map((a) => a.id)
}

/**
 * Chargebee removes an item or coupon only when the whole list is sent (`replace_items_list`,
 * `replace_coupon_list`), so its current lists are read first and sent back without it.
 */
export function needsChargebeeLists(s: BillingState, change: Pick<ChangeRequest, 'selection' | 'current'>): boolean {
  return (
    removedAddons(change).length > 0 ||
    (s.coupon_code !== null && s.coupon_code !== (change.selection.coupon?.code ?? null))
  )
}

/**
 * The parameters of a change, the same for the estimate and the update: only what changed. Addons
 * and coupons this catalogue does not know stay as Chargebee has them. A change is prorated and
 * billed at once (docs/chargebee.md).
 */
export function changeParams(
  s: BillingState,
  change: Pick<ChangeRequest, 'selection' | 'current'>,
  lists: CbSubscription | null,
) {
  const { selection } = change
  const planItem = { item_price_id: selection.plan.sku, quantity: selection.quantity }
  const planChanged = selection.plan.sku !== s.plan_sku || selection.quantity !== s.plan_quantity
  const held = new Map(s.addons.map((a) => [a.id, a.quantity]))
  // New addons and held ones at another quantity: Chargebee updates an item sent again.
  const added = selection.addons
    .filter((a) => held.get(a.id) !== a.quantity)
    .map((a) => ({ item_price_id: a.id, quantity: a.quantity }))
  const sent = new Set(added.map((a) => a.item_price_id))
  const removed = new Set(removedAddons(change))
  let items: Record<string, unknown> = {}
  if (removed.size > 0) {
    if (!lists) throw new Error("changeParams: Chargebee's lists are needed to take an addon off")
    const kept = (lists.subscription_items ?? [])
      .filter((i) => i.item_type !== 'plan' && !removed.has(i.item_price_id) && !sent.has(i.item_price_id))
      .map((i) => ({ item_price_id: i.item_price_id, ...(i.quantity !== undefined ? { quantity: i.quantity } : {}) }))
    items = { subscription_items: [planItem, ...kept, ...added], replace_items_list: true }
  } else if (planChanged || added.length > 0) {
    items = { subscription_items: [...(planChanged ? [planItem] : []), ...added] }
  }
  const oldCode = s.coupon_code
  const newCode = selection.coupon?.code ?? null
  let coupons: Record<string, unknown> = {}
  if (newCode !== oldCode) {
    if (oldCode === null) coupons = { coupon_ids: [newCode] }
    else {
      if (!lists) throw new Error("changeParams: Chargebee's coupons are needed to take a coupon off")
      const kept = (lists.coupons ?? []).map((c) => c.coupon_id).filter((id) => id !== oldCode && id !== newCode)
      coupons = { coupon_ids: [...kept, ...(newCode ? [newCode] : [])], replace_coupon_list: true }
    }
  }
  return { ...items, ...coupons, prorate: true, invoice_immediately: true }
}

/** Settles an update whose outcome was uncertain. */
export function holdsChange(
  cb: CbSubscription,
  s: BillingState,
  change: Pick<ChangeRequest, 'selection' | 'current'>,
): boolean {
  const items = cb.subscription_items ?? []
  const plan = items.find((i) => i.item_type === 'plan')
  if (plan?.item_price_id !== change.selection.plan.sku || (plan.quantity ?? 1) !== change.selection.quantity)
    return false
  const ids = new Map(items.map((i) => [i.item_price_id, i.quantity ?? 1]))
  if (
    !change.selection.addons.every((a) => ids.get(a.id) === a.quantity) ||
    removedAddons(change).some((id) => ids.has(id))
  )
    return false
  const coupons = new Set((cb.coupons ?? []).map((c) => c.coupon_id))
  const newCode = change.selection.coupon?.code ?? null
  // A one_time coupon leaves once an invoice used it: absent, it may have been applied and spent.
  if (newCode !== null && !coupons.has(newCode) && change.selection.coupon?.duration_type !== 'one_time') return false
  return !(s.coupon_code !== null && s.coupon_code !== newCode && coupons.has(s.coupon_code))
}
