import type { SubscriptionRow } from '../../db/tables.ts'
import { ProviderError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import type { BillingProvider } from './billing/provider.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'

/** Runs `fn` on the company's subscription, locked in a transaction (subscriptions.steps.ts). */
type Change = <T>(companyId: string, subscriptionId: string | undefined, fn: (trx: Executor, s: SubscriptionRow, provider: BillingProvider) => Promise<T>) => Promise<T>

/**
 * Changes of a subscription held by a remote provider (Chargebee), where this service and the
 * provider must not disagree (docs/chargebee.md, "Writes").
 */
export function createRemoteChanges(deps: { repo: Pick<SubscriptionsRepository, 'findAddons' | 'findCoupon'>; change: Change }) {
  const { repo, change } = deps

  /**
   * A change through a provider that holds the subscription (Chargebee): the service never
   * reports as failed a change the provider applied. `fn` calls `applied()` once the provider
   * answered; if the transaction fails after that (a failed statement, a failed commit), `resave`
   * runs in a new transaction and saves the provider's state read back (docs/chargebee.md).
   */
  async function remoteChange<T>(companyId: string, subscriptionId: string | undefined,
    fn: (trx: Executor, s: SubscriptionRow, provider: BillingProvider, applied: () => void) => Promise<T>,
    resave: (trx: Executor, s: SubscriptionRow, provider: BillingProvider) => Promise<T>): Promise<T> {
    let applied = false
    try {
      return await change(companyId, subscriptionId, (trx, s, provider) => fn(trx, s, provider, () => { applied = !provider.drivesTime }))
    } catch (err) {
      if (!applied) throw err
      try {
        return await change(companyId, subscriptionId, resave)
      } catch (again) {
        throw new ProviderError(`The billing provider applied the change, but it could not be saved here (${(err as Error).message}; then ${(again as Error).message}); it arrives by the provider's webhook`)
      }
    }
  }

  /**
   * The subscription as this catalogue knows it: addons and a coupon that only the provider
   * knows (set at Chargebee) are left out of a change, so they never block it and are never
   * sent back (the provider keeps them). `held` is the subscription with only a known coupon.
   */
  async function known(executor: Executor, s: SubscriptionRow) {
    const rows = await repo.findAddons(executor, s.addons.map((a) => a.id))
    const addonIds = s.addons.map((a) => a.id).filter((id) => rows.some((r) => r.id === id))
    const couponCode = s.coupon_code !== null && (await repo.findCoupon(executor, s.coupon_code)) ? s.coupon_code : null
    return { addonIds, couponCode, held: couponCode === s.coupon_code ? s : { ...s, coupon_code: null } }
  }

  return { remoteChange, known }
}
