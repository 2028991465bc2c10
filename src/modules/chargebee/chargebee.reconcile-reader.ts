import type { PaymentSource } from '../../db/tables.ts'
import type { ChargebeeSettings } from './chargebee.provider.ts'
import { chargebeeSdk, timedFetchClient } from './chargebee.sdk.ts'
import { cardOf, type CbCard, type CbSubscription } from './chargebee.mapping.ts'
import type { CbCreditNote, CbInvoice } from './chargebee.ledger-mapping.ts'

/** Pages of 100 (Chargebee's largest) read per list at most: the newest 1,000 invoices of a subscription. */
const MAX_PAGES = 10

/** Chargebee's answer is "no such subscription" (deleted there, or another site). */
export class MissingAtChargebee extends Error {}

/**
 * What the reconciliation reads at Chargebee: the subscription with its card, its invoices and credit
 * notes, newest first. Its own SDK client: reads only, outside any request.
 */
export function createChargebeeReconcileReader(settings: ChargebeeSettings) {
  const Chargebee = chargebeeSdk()
  const cb = new Chargebee({
    site: settings.site,
    apiKey: settings.apiKey,
    protocol: settings.protocol ?? 'https',
    hostSuffix: settings.hostSuffix ?? '.chargebee.com',
    port: settings.port ?? 443,
    timeout: settings.timeoutMs ?? 15_000,
    retryConfig: { enabled: false },
    sdkTelemetryEnabled: false,
    httpClient: timedFetchClient,
  })

  async function all<T>(
    page: (offset: string | undefined) => Promise<{ list: T[]; next_offset?: string }>,
  ): Promise<T[]> {
    const out: T[] = []
    let offset: string | undefined
    for (let i = 0; i < MAX_PAGES; i++) {
      const answer = await page(offset)
      out.push(...answer.list)
      offset = answer.next_offset
      if (!offset) break
    }
    return out
  }

  return {
    async subscription(id: string): Promise<{ subscription: CbSubscription; card: PaymentSource | null }> {
      try {
        const a = (await cb.subscription.retrieve(id)) as unknown as { subscription: CbSubscription; card?: CbCard }
        return { subscription: a.subscription, card: cardOf(a.card) }
      } catch (err) {
        if ((err as { http_status_code?: number }).http_status_code === 404)
          throw new MissingAtChargebee(`Chargebee has no subscription ${id}`)
        throw err
      }
    },
    invoices: (subscriptionId: string) =>
      all(async (offset) => {
        const a = (await cb.invoice.list({
          subscription_id: { is: subscriptionId },
          limit: 100,
          ...(offset ? { offset } : {}),
        })) as unknown as { list: { invoice: CbInvoice }[]; next_offset?: string }
        return { list: a.list.map((e) => e.invoice), next_offset: a.next_offset }
      }),
    creditNotes: (subscriptionId: string) =>
      all(async (offset) => {
        const a = (await cb.creditNote.list({
          subscription_id: { is: subscriptionId },
          limit: 100,
          ...(offset ? { offset } : {}),
        })) as unknown as { list: { credit_note: CbCreditNote }[]; next_offset?: string }
        return { list: a.list.map((e) => e.credit_note), next_offset: a.next_offset }
      }),
  }
}

export type ChargebeeReconcileReader = ReturnType<typeof createChargebeeReconcileReader>
