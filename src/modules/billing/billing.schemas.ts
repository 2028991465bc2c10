import { Type } from 'typebox'
import type { InvoiceEstimate as ComputedInvoice } from './billing.estimate.ts'

/** Both: the schema, and the type the engine computes (billing.estimate.ts). */
export type InvoiceEstimate = ComputedInvoice

/** An invoice as the engine computes it: the wire shape of estimates and of the ledger's lines. */
export const InvoiceEstimate = Type.Object(
  {
    line_items: Type.Array(
      Type.Object(
        {
          entity_type: Type.Union([Type.Literal('plan'), Type.Literal('addon'), Type.Literal('adhoc')], {
            description: "adhoc: a one-off charge (POST .../charges), its description the line's",
          }),
          entity_id: Type.String({ description: "The plan's sku, the addon's id or the one-off charge's id" }),
          description: Type.String(),
          pricing_model: Type.Optional(
            Type.Union(
              [
                Type.Literal('flat_fee'),
                Type.Literal('per_unit'),
                Type.Literal('tiered'),
                Type.Literal('volume'),
                Type.Literal('stairstep'),
              ],
              {
                description:
                  "The item's pricing model (docs/billing.md); absent on a line priced before pricing models " +
                  'existed, which was per_unit, or on a Chargebee invoice line of an item this catalogue lacks',
              },
            ),
          ),
          unit_amount: Type.Integer({
            description:
              'Minor units of currency_code (cents of EUR, yen of JPY) for a whole term: per unit for per_unit, ' +
              "and for volume the price of the quantity's tier; for flat_fee, tiered and stairstep the line's " +
              'whole-term amount',
          }),
          quantity: Type.Integer({ description: "The plan's or addon's quantity, for every pricing model" }),
          amount: Type.Integer({
            description:
              'Minor units: the whole term by the pricing model (per_unit: unit_amount × quantity), prorated, ' +
              'rounded half-up',
          }),
          tax_exempt_reason: Type.Optional(
            Type.Union([Type.Literal('reverse_charge'), Type.Literal('export'), Type.Literal('tax_not_configured')], {
              description:
                'Only on a line that bears no tax, as Chargebee names why: reverse_charge (a business with a ' +
                "VAT number marked valid in another country than the seller's), export (a country without VAT " +
                "in the table), tax_not_configured (the seller's own country has no rate)",
            }),
          ),
          discount_amount: Type.Optional(
            Type.Integer({
              description:
                'Only on a discounted line: its part of the discounts, in minor units; the line is taxed on ' +
                'amount − discount_amount',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    discounts: Type.Array(
      Type.Object(
        {
          description: Type.String(),
          amount: Type.Integer(),
          entity_type: Type.Optional(
            Type.Literal('promotional_credits', {
              description:
                "Only on the customer's promotional credits the invoice took: taken off the total after tax, " +
                'before refundable credits and excess payments',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    sub_total: Type.Integer({ description: 'Sum of the line items' }),
    taxes: Type.Array(
      Type.Object(
        {
          name: Type.String({ description: '"IT VAT", or "Reverse charge" (rate 0)' }),
          rate: Type.Number({ description: 'Percent' }),
          amount: Type.Integer({ description: "Sum of each line's tax, each rounded half-up" }),
        },
        { additionalProperties: false },
      ),
      { description: 'One line per tax; none for an export' },
    ),
    total: Type.Integer({ description: 'sub_total − discounts + taxes (promotional credits after tax)' }),
    credits_applied: Type.Integer({
      description: "The customer's refundable credits, then excess payments, in the invoice's currency, up to total",
    }),
    amount_due: Type.Integer({ description: 'total − credits_applied' }),
    currency_code: Type.String(),
  },
  { additionalProperties: false },
)
