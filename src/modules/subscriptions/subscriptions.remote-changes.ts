import type { SubscriptionRow } from '../../db/tables.ts'
import { ProviderError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import type { BillingProvider } from '../billing/index.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'

type Change = <T>(
  companyId: string,
  subscriptionId: string | undefined,
  fn: (trx: Executor, s: SubscriptionRow, provider: BillingProvider) => Promise<T>,
) => Promise<T>

/** Changes of a subscription held by a remote provider, where this service and the provider must not disagree. */
export function createRemoteChanges(deps: {
  repo: Pick<SubscriptionsRepository, 'findAddons' | 'findCoupon'>
  change: Change
}) {
  const { repo, change } = deps

  /**
   * A change the provider applied is never reported as failed: `fn` calls `applied()` once it answered;
   * if our transaction fails after that, `resave` saves the provider's state read back.
   */
  async function remoteChange<T>(
    companyId: string,
    subscriptionId: string | undefined,
    fn: (trx: Executor, s: SubscriptionRow, provider: BillingProvider, applied: () => void) => Promise<T>,
    resave: (trx: Executor, s: SubscriptionRow, provider: BillingProvider) => Promise<T>,
  ): Promise<T> {
    let applied = false
    try {
      return await change(companyId, subscriptionId, (trx, s, provider) =>
        fn(trx, s, provider, () => {
          applied = !provider.drivesTime
        }),
      )
    } catch (err) {
      if (!applied) throw err
      try {
        return await change(companyId, subscriptionId, resave)
      } catch (again) {
        throw new ProviderError(
          `The billing provider applied the change, but it could not be saved here (${(err as Error).message}; ` +
            `then ${(again as Error).message}); it arrives by the provider's webhook`,
        )
      }
    }
  }

  /** Addons and a coupon only the provider knows are left out of a change, so they never block it and stay there. */
  async function known(executor: Executor, s: SubscriptionRow) {
    const rows = await repo.findAddons(
      executor,
      s.addons.map((a) => a.id),
    )
    const addons = s.addons.filter((a) => rows.some((r) => r.id === a.id))
    const couponCode = s.coupon_code !== null && (await repo.findCoupon(executor, s.coupon_code)) ? s.coupon_code : null
    return { addons, couponCode, held: couponCode === s.coupon_code ? s : { ...s, coupon_code: null } }
  }

  return { remoteChange, known }
}
