import type { App } from '../../http/app-types.ts'
import { CompanyParams } from '../../http/schemas.ts'
import type { ChargesService } from './charges.service.ts'
import { ChargeBody, ChargeResult } from './charges.schemas.ts'

const DESCRIPTION = [
  "A one-off charge (onboarding, training days) in the subscription plan's currency, as a line of entity_type",
  "adhoc whose description is the body's, taxed as any line and never discounted by the coupon.",
  "invoice_immediately true: an invoice of that line now, taking the customer's credits as any invoice, the rest",
  "charged to the card (a failed charge starts dunning, as a renewal's); answers {invoice}. false: added to the",
  'next renewal (or trial-end) invoice; answers {invoice: null}. Event charge.created (its object: id,',
  'subscription_id, amount, description, currency_code, invoice_id, date). 400 naming the field for an amount that',
  'is not a whole number of minor units above 0. Platform tokens only (a company token is 403). 404 when the',
  'company has no subscription. 409 when the subscription is cancelled, or when a deferred charge has no renewal',
  'to wait for (non_renewing). On a Chargebee subscription Chargebee applies it (invoice.create or',
  'add_charge_at_term_end), checked here first; the invoice is answered as mirrored, without charge.created;',
  "Chargebee's refusal is a provider_error. Takes Idempotency-Key.",
].join(' ')

/** POST .../charges: platform clients only (decisions §9.2). */
export async function chargesRoutes(app: App, { service }: { service: ChargesService }) {
  app.post(
    '/api/v1/subscription/:company_id/charges',
    {
      config: { access: 'platform', billingProvider: true },
      schema: {
        operationId: 'createOneOffCharge',
        tags: ['Invoices'],
        summary: 'Charge a one-off amount now or at the next renewal',
        description: DESCRIPTION,
        params: CompanyParams,
        body: ChargeBody,
        response: { 200: ChargeResult },
      },
    },
    async (request) => service.create(request.params.company_id, request.body),
  )
}
