import { Type, type Static } from 'typebox'
import { Name } from '../../http/schemas.ts'

const Minor = (description: string) => Type.Integer({ description: `${description}, in minor units` })

export const PromotionalCreditsBody = Type.Object(
  {
    amount: Type.Integer({
      minimum: 1,
      maximum: 100_000_000_000,
      description: "How much to add or deduct, in minor units of the subscription plan's currency",
    }),
    description: Name(250, 'Why (a referral bonus, a goodwill gesture); kept with the change'),
    type: Type.Union([Type.Literal('add'), Type.Literal('deduct')]),
  },
  {
    additionalProperties: false,
    title: 'PromotionalCreditsChange',
    examples: [{ amount: 5000, description: 'Referral bonus', type: 'add' }],
  },
)
export type PromotionalCreditsBody = Static<typeof PromotionalCreditsBody>

export const CustomerCreditsBody = Type.Object(
  {
    promotional_credits: Minor('Promotional credits, taken first by the next invoices, off the total after tax'),
    refundable_credits: Minor("Refundable credit notes' amounts not yet used, taken next"),
    excess_payments: Minor('Payments beyond what invoices asked, taken last'),
    currency_code: Type.String({ description: "The subscription plan's: credits in another currency are not shown" }),
  },
  {
    additionalProperties: false,
    title: 'CustomerCredits',
    examples: [{ promotional_credits: 5000, refundable_credits: 0, excess_payments: 2800, currency_code: 'EUR' }],
  },
)
export type CustomerCreditsBody = Static<typeof CustomerCreditsBody>
