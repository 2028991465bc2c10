import type { App } from '../../http/app-types.ts'
import { CompanyParams } from '../../http/schemas.ts'
import type { CustomerCreditsService } from './customer-credits.service.ts'
import { CustomerCreditsBody, PromotionalCreditsBody } from './customer-credits.schemas.ts'

const DESCRIPTION = [
  "Adds to or deducts from the customer's promotional credits, in the subscription plan's currency. The next",
  'invoices (renewals, changes, one-off charges) take them first, as a discounts entry with entity_type',
  'promotional_credits off the total after tax, then refundable credits and excess payments in credits_applied;',
  "a void gives back what its invoice took. Answers the customer's credits after the change. Event",
  'customer.promotional_credits_changed. 400 naming body/amount for a deduction beyond the balance (it never goes',
  'below 0) or an amount that is not a whole number of minor units above 0. Platform tokens only (a company token is',
  '403). 404 when the company has no subscription. On a Chargebee subscription Chargebee applies it',
  "(promotional_credit.add or deduct), checked here first, and its balances answer, without an event; Chargebee's",
  'refusal is a provider_error. Takes Idempotency-Key.',
].join(' ')

/** POST .../promotional_credits: platform clients only (decisions §9.2). */
export async function customerCreditsRoutes(app: App, { service }: { service: CustomerCreditsService }) {
  app.post(
    '/api/v1/subscription/:company_id/promotional_credits',
    {
      config: { access: 'platform', billingProvider: true },
      schema: {
        operationId: 'changePromotionalCredits',
        tags: ['Invoices'],
        summary: "Add or deduct the customer's promotional credits",
        description: DESCRIPTION,
        params: CompanyParams,
        body: PromotionalCreditsBody,
        response: { 200: CustomerCreditsBody },
      },
    },
    async (request) => service.changePromotionalCredits(request.params.company_id, request.body),
  )
}
