import { Type, type Static } from 'typebox'
import { Name, Uuid } from '../../http/schemas.ts'

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

const ReasonCode = Type.Union(
  REASON_CODES.map((code) => Type.Literal(code)),
  { description: "Chargebee's credit-note reason code" },
)
const Amount = (description: string) =>
  Type.Integer({ minimum: 1, maximum: 100_000_000_000, description: `${description}, in minor units` })

export const RefundBody = Type.Object(
  {
    amount: Type.Optional(Amount('What to pay back; default all that was paid and is not yet refunded or credited')),
    reason_code: ReasonCode,
    comment: Type.Optional(Comment),
  },
  {
    additionalProperties: false,
    title: 'RefundInvoice',
    examples: [{ amount: 3000, reason_code: 'product_unsatisfactory', comment: 'Training day cancelled' }],
  },
)
export type RefundBody = Static<typeof RefundBody>

export const CreateCreditNoteBody = Type.Object(
  {
    reference_invoice_id: Uuid('The invoice it credits: one of the company'),
    type: Type.Union([Type.Literal('adjustment'), Type.Literal('refundable')], {
      description:
        "adjustment: lowers what the unpaid invoice owes; refundable: credits what was paid of it to the customer's " +
        'refundable_credits',
    }),
    total: Amount("The credit, tax included (its tax is the invoice's, prorated)"),
    reason_code: ReasonCode,
    description: Type.Optional(Name(1000, 'Shown on the credit note')),
  },
  {
    additionalProperties: false,
    title: 'CreateCreditNote',
    examples: [
      {
        reference_invoice_id: '6f1c2f0e-7a51-4d55-9b1e-0c2a3e4b5d6f',
        type: 'adjustment',
        total: 2200,
        reason_code: 'waiver',
        description: 'Goodwill for the outage',
      },
    ],
  },
)
export type CreateCreditNoteBody = Static<typeof CreateCreditNoteBody>

export const RefundCreditNoteBody = Type.Object(
  { amount: Type.Optional(Amount("What to pay out; default the credit note's whole amount_available")) },
  { additionalProperties: false, title: 'RefundCreditNote', examples: [{ amount: 1000 }] },
)
export type RefundCreditNoteBody = Static<typeof RefundCreditNoteBody>
