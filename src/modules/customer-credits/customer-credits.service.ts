import { Conflict } from '../../core/errors.ts'
import type { ChargebeeMoneyPort } from '../chargebee/index.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'
import type { CustomerCreditsBody, PromotionalCreditsBody } from './customer-credits.schemas.ts'

/**
 * A customer's promotional credits up or down (decisions §9.2), for platform clients: by the local
 * engine, or by Chargebee on its subscriptions (the port), whose balances answer.
 */
export function createCustomerCreditsService(deps: {
  subscriptions: Pick<SubscriptionsService, 'promotionalCredits' | 'billedBy'>
  chargebee?: Pick<ChargebeeMoneyPort, 'promotionalCredits'>
}) {
  return {
    async changePromotionalCredits(companyId: string, body: PromotionalCreditsBody): Promise<CustomerCreditsBody> {
      const billed = await deps.subscriptions.billedBy(companyId)
      if (billed.provider === 'chargebee' && deps.chargebee) {
        if (!billed.currencyCode) throw new Conflict("The subscription's plan is not in the catalogue")
        const owner = { companyId, subscriptionId: billed.subscriptionId }
        const input = { ...body, currencyCode: billed.currencyCode }
        return { ...(await deps.chargebee.promotionalCredits(owner, input)), currency_code: billed.currencyCode }
      }
      const credits = await deps.subscriptions.promotionalCredits(companyId, body)
      return {
        promotional_credits: credits.promotional_credits,
        refundable_credits: credits.refundable_credits,
        excess_payments: credits.excess_payments,
        currency_code: credits.currency_code,
      }
    },
  }
}

export type CustomerCreditsService = ReturnType<typeof createCustomerCreditsService>
