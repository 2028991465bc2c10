import type Chargebee from 'chargebee'
import { providerErrorFrom } from './chargebee.errors.ts'
import { RetriesFailed, withRetries, type RetryPolicy } from './chargebee.retry.ts'
import type { CbCard, CbSubscription } from './chargebee.mapping.ts'
import type { CbCreditNote, CbInvoice } from './chargebee.ledger-mapping.ts'

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
    /** null when Chargebee has no such invoice. */
    async invoice(id: string): Promise<CbInvoice | null> {
      const found = await read('read the invoice', async () => (await cb.invoice.retrieve(id)) as unknown)
      return (found as { invoice: CbInvoice } | null)?.invoice ?? null
    },
    async creditNote(id: string): Promise<CbCreditNote | null> {
      const found = await read('read the credit note', async () => (await cb.creditNote.retrieve(id)) as unknown)
      return (found as { credit_note: CbCreditNote } | null)?.credit_note ?? null
    },
    /** The customer's balances (promotional_credits, refundable_credits, excess_payments). */
    async customerBalances(id: string): Promise<CbCustomerBalances | null> {
      const found = await read('read the customer', async () => (await cb.customer.retrieve(id)) as unknown)
      return (found as { customer: CbCustomerBalances } | null)?.customer ?? null
    },
    /** The subscription's newest invoices (at most 10). */
    async latestInvoices(subscriptionId: string): Promise<CbInvoice[]> {
      const found = await read('list the invoices', async () =>
        cb.invoice.list({ subscription_id: { is: subscriptionId }, limit: 10 } as never),
      )
      return ((found as { list?: { invoice: CbInvoice }[] } | null)?.list ?? []).map((e) => e.invoice)
    },
    /** The lines of the subscription's next renewal invoice, as Chargebee estimates it now. */
    async renewalLines(subscriptionId: string): Promise<{ description?: string; amount?: number }[]> {
      const found = await read('estimate the renewal', async () =>
        cb.estimate.renewalEstimate(subscriptionId, {} as never),
      )
      const estimate = (found as { estimate?: { invoice_estimate?: { line_items?: [] } } } | null)?.estimate
      return estimate?.invoice_estimate?.line_items ?? []
    },
  }
}

export interface CbCustomerBalances {
  id: string
  promotional_credits?: number
  refundable_credits?: number
  excess_payments?: number
}

export type ReadBack = ReturnType<typeof createReadBack>
