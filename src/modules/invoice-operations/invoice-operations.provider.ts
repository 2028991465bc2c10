import { Conflict } from '../../core/errors.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'

/**
 * The one place that decides who performs a money operation: the local engine here; a Chargebee-managed
 * subscription's invoices and credit notes are Chargebee's, so the operation is refused (409).
 * 404 when the company has no subscription.
 */
export function localEngineGate(subscriptions: Pick<SubscriptionsService, 'provider'>) {
  return async (companyId: string): Promise<void> => {
    const provider = await subscriptions.provider(companyId)
    if (provider !== 'local') {
      throw new Conflict(
        `The company's subscription is managed by ${provider}: ` +
          'its invoices are settled there, not through this service',
      )
    }
  }
}
