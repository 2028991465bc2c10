import type Chargebee from 'chargebee'
import { providerErrorFrom } from './chargebee-errors.ts'
import { RetriesFailed, withRetries, type RetryPolicy } from './chargebee-retry.ts'
import type { CbCard, CbSubscription } from './chargebee-mapping.ts'

/** What Chargebee answers for a subscription (`card` only when the customer has one). */
export interface SubscriptionAnswer { subscription: CbSubscription; card?: CbCard }

/**
 * Reading Chargebee back: what settles a write whose outcome is uncertain (a timeout, a 5xx),
 * and what the reconciliation of the two sides reads. A read is safe to repeat, so it is retried
 * on every temporary failure; a 404 is an answer (the object does not exist), not a failure.
 */
export function createReadBack(cb: Chargebee, policy: RetryPolicy) {
  async function read<T>(action: string, call: () => Promise<T>): Promise<T | null> {
    try {
      return await withRetries(policy, call)
    } catch (err) {
      const last = err instanceof RetriesFailed ? err.last : err
      if ((last as { http_status_code?: number } | null)?.http_status_code === 404) return null
      throw providerErrorFrom(last, action)
    }
  }

  return {
    /** The subscription as Chargebee holds it now, with the customer's card; null when Chargebee has no such subscription. */
    async subscription(id: string): Promise<SubscriptionAnswer | null> {
      return read('read the subscription', async () => (await cb.subscription.retrieve(id)) as unknown as SubscriptionAnswer)
    },
    /** True when Chargebee has a (not deleted) customer of this id. */
    async customerExists(id: string): Promise<boolean> {
      const found = await read('read the customer', async () => (await cb.customer.retrieve(id)) as unknown as { customer: { deleted?: boolean } })
      return found !== null && found.customer.deleted !== true
    },
  }
}

export type ReadBack = ReturnType<typeof createReadBack>
