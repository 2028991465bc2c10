import { Conflict } from '../../core/errors.ts'
import type { ChargebeeMoneyPort } from '../chargebee/index.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'

export type Owner = { companyId: string; subscriptionId: string }
export type InvoiceOperationsPort = Pick<
  ChargebeeMoneyPort,
  'recordPayment' | 'voidInvoice' | 'writeOff' | 'refundInvoice' | 'createCreditNote' | 'refundCreditNote'
>

/** Who performs a money operation: the local engine (`local`), or Chargebee through its port. */
export type Performer = { kind: 'local' } | { kind: 'chargebee'; port: InvoiceOperationsPort; owner: Owner }

/**
 * The one place that decides who performs a money operation. 404 when the company has no
 * subscription; 409 when its provider is not configured here.
 */
export function providerGate(
  subscriptions: Pick<SubscriptionsService, 'billedBy'>,
  chargebee: InvoiceOperationsPort | undefined,
) {
  return async (companyId: string): Promise<Performer> => {
    const { provider, subscriptionId } = await subscriptions.billedBy(companyId)
    if (provider === 'local') return { kind: 'local' }
    if (provider === 'chargebee' && chargebee) {
      return { kind: 'chargebee', port: chargebee, owner: { companyId, subscriptionId } }
    }
    throw new Conflict(
      `The company's subscription is managed by ${provider}: ` +
        'its invoices are settled there, not through this service',
    )
  }
}
