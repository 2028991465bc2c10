import type Chargebee from 'chargebee'
import { providerErrorFrom } from './chargebee.errors.ts'
import { RetriesFailed, withRetries, type RetryPolicy } from './chargebee.retry.ts'
import type { CbCard, CbSubscription } from './chargebee.mapping.ts'

export interface SubscriptionAnswer {
  subscription: CbSubscription
  card?: CbCard
}

/**
 * Reads Chargebee back, to settle an uncertain write and for the reconciliation. Reads are retried
 * on every temporary failure; a 404 is an answer, not a failure.
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
    /** null when Chargebee has no such subscription. */
    async subscription(id: string): Promise<SubscriptionAnswer | null> {
      return read(
        'read the subscription',
        async () => (await cb.subscription.retrieve(id)) as unknown as SubscriptionAnswer,
      )
    },
    /** A deleted customer does not count. */
    async customerExists(id: string): Promise<boolean> {
      const found = await read(
        'read the customer',
        async () => (await cb.customer.retrieve(id)) as unknown as { customer: { deleted?: boolean } },
      )
      return found !== null && found.customer.deleted !== true
    },
  }
}

export type ReadBack = ReturnType<typeof createReadBack>
