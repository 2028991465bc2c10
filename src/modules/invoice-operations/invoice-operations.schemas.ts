import { Type, type Static } from 'typebox'
import { Name } from '../../http/schemas.ts'

/** Chargebee's credit-note reason codes (decisions §9.2), also a void's. */
export const REASON_CODES = [
  'order_change',
  'order_cancellation',
  'product_unsatisfactory',
  'service_unsatisfactory',
  'waiver',
  'other',
] as const

const Comment = Name(1000, 'Kept with the invoice (its comments)')

export const RecordPaymentBody = Type.Object(
  {
    amount: Type.Integer({
      minimum: 1,
      maximum: 100_000_000_000,
      description:
        "What was paid, in minor units of the invoice's currency; beyond amount_due it becomes " +
        "the customer's excess_payments",
    }),
    payment_method: Type.Union([
      Type.Literal('bank_transfer'),
      Type.Literal('cash'),
      Type.Literal('check'),
      Type.Literal('other'),
    ]),
    reference: Type.Optional(Name(200, "The payment's reference: a bank transfer's CRO, a check's number")),
    date: Type.Optional(
      Type.Integer({
        minimum: 0,
        // The last second of the year 9999: a later one is no date.
        maximum: 253402300799,
        description: "When it was paid (Unix seconds): not before the invoice's date, not in the future; default now",
      }),
    ),
  },
  {
    additionalProperties: false,
    title: 'RecordPayment',
    examples: [{ amount: 12200, payment_method: 'bank_transfer', reference: 'CRO 0123456789', date: 1801526400 }],
  },
)
export type RecordPaymentBody = Static<typeof RecordPaymentBody>

export const VoidBody = Type.Object(
  {
    reason_code: Type.Optional(Type.Union(REASON_CODES.map((code) => Type.Literal(code)))),
    comment: Type.Optional(Comment),
  },
  {
    additionalProperties: false,
    title: 'VoidInvoice',
    examples: [{ reason_code: 'order_change', comment: 'Billed twice' }],
  },
)
export type VoidBody = Static<typeof VoidBody>

export const WriteOffBody = Type.Object(
  {
    comment: Type.Optional(Comment),
  },
  { additionalProperties: false, title: 'WriteOffInvoice', examples: [{ comment: 'The customer went bankrupt' }] },
)
export type WriteOffBody = Static<typeof WriteOffBody>
