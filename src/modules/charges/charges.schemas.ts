import { Type, type Static } from 'typebox'
import { Name, Nullable } from '../../http/schemas.ts'
import { InvoiceBody } from '../invoices/index.ts'

export const ChargeBody = Type.Object(
  {
    amount: Type.Integer({
      minimum: 1,
      maximum: 100_000_000_000,
      description: "Before tax, in minor units of the subscription plan's currency",
    }),
    description: Name(250, "The invoice line's description"),
    invoice_immediately: Type.Boolean({
      description: 'true: invoiced and charged now; false: added to the next renewal invoice',
    }),
  },
  {
    additionalProperties: false,
    title: 'OneOffCharge',
    examples: [{ amount: 25000, description: 'Onboarding day', invoice_immediately: true }],
  },
)
export type ChargeBody = Static<typeof ChargeBody>

export const ChargeResult = Type.Object(
  { invoice: Nullable(InvoiceBody) },
  { additionalProperties: false, title: 'OneOffChargeResult', examples: [{ invoice: null }] },
)
export type ChargeResult = Static<typeof ChargeResult>
