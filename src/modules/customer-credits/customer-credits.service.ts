import type { SubscriptionsService } from '../subscriptions/index.ts'
import type { CustomerCreditsBody, PromotionalCreditsBody } from './customer-credits.schemas.ts'

/** A customer's promotional credits up or down (decisions §9.2), for platform clients. */
export function createCustomerCreditsService(deps: {
  subscriptions: Pick<SubscriptionsService, 'promotionalCredits'>
}) {
  return {
    async changePromotionalCredits(companyId: string, body: PromotionalCreditsBody): Promise<CustomerCreditsBody> {
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
