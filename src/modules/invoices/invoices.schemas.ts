import { Type, type Static } from 'typebox'
import { Nullable, Uuid } from '../../http/schemas.ts'
import { pageQuery } from '../../http/pagination.ts'
import { InvoiceEstimate } from '../billing/index.ts'

const Unix = (description: string) => Type.Integer({ description: `${description} (Unix seconds)` })
const Minor = (description: string) => Type.Integer({ description: `${description}, in minor units (cents)` })

export const InvoiceParams = Type.Object({ company_id: Uuid('The company'), invoice_id: Uuid('The invoice') })
export const CreditNoteParams = Type.Object({
  company_id: Uuid('The company'),
  credit_note_id: Uuid('The credit note'),
})

export const ListQuery = pageQuery()
export type ListQuery = Static<typeof ListQuery>

const INVOICE_EXAMPLE = {
  id: '6f1c2f0e-7a51-4d55-9b1e-0c2a3e4b5d6f',
  subscription_id: '0b8f6c1a-3d2e-4f5a-8b9c-1d2e3f4a5b6c',
  status: 'paid',
  date: 1801440000,
  due_date: 1801440000,
  period_start: 1801440000,
  period_end: 1804118400,
  line_items: [
    {
      entity_type: 'plan',
      entity_id: 'silver-monthly',
      description: 'Silver',
      unit_amount: 1500,
      quantity: 1,
      amount: 1500,
    },
  ],
  discounts: [],
  sub_total: 1500,
  taxes: [],
  total: 1500,
  credits_applied: 1300,
  amount_paid: 200,
  amount_adjusted: 0,
  write_off_amount: 0,
  amount_due: 0,
  currency_code: 'EUR',
  paid_at: 1801440000,
  dunning_status: null,
  attempt_count: 1,
  next_retry_at: null,
  recorded_payments: [],
  voided_at: null,
  void_reason_code: null,
  comments: [],
  amount_refunded: 0,
}

const RecordedPayment = Type.Object(
  {
    amount: Minor('What was paid'),
    applied_amount: Minor("What of it settled this invoice; the rest became the customer's excess_payments"),
    payment_method: Type.Union([
      Type.Literal('bank_transfer'),
      Type.Literal('cash'),
      Type.Literal('check'),
      Type.Literal('other'),
    ]),
    reference: Nullable(Type.String({ description: "Its reference (a bank transfer's CRO, a check's number)" })),
    date: Unix('When it was paid'),
  },
  { additionalProperties: false },
)

const InvoiceComment = Type.Object(
  {
    operation: Type.Union([Type.Literal('void'), Type.Literal('write_off'), Type.Literal('refund')]),
    comment: Type.String(),
    date: Unix('When it was given'),
  },
  { additionalProperties: false },
)

export const InvoiceBody = Type.Object(
  {
    id: Uuid(),
    subscription_id: Uuid(),
    status: Type.Union(
      [Type.Literal('paid'), Type.Literal('payment_due'), Type.Literal('not_paid'), Type.Literal('voided')],
      {
        description:
          'paid; payment_due (a charge failed, retries are scheduled: see next_retry_at); not_paid (every ' +
          'retry failed: the subscription was cancelled); voided',
      },
    ),
    date: Unix("When it was issued: the trial's or term's end, or the moment of the change"),
    due_date: Unix('When it is due: at once, the date itself'),
    period_start: Unix('Start of the period it bills'),
    period_end: Unix('End of the period it bills'),
    line_items: InvoiceEstimate.properties.line_items,
    discounts: InvoiceEstimate.properties.discounts,
    sub_total: Minor('Sum of the line items'),
    taxes: InvoiceEstimate.properties.taxes,
    total: Minor('sub_total − discounts + taxes'),
    credits_applied: Minor("Paid from the customer's credits (credit notes)"),
    amount_paid: Minor('Charged to the card, or recorded as paid offline (record_payment)'),
    amount_adjusted: Minor('Settled by adjustment credit notes'),
    write_off_amount: Minor('Written off as not collectable (write_off)'),
    amount_due: Minor(
      'Still owed: total − credits_applied − amount_paid − amount_adjusted − write_off_amount; 0 for ' +
        'a voided invoice, whose unsettled rest was voided',
    ),
    currency_code: Type.String(),
    paid_at: Nullable(Unix('When it was paid in full')),
    dunning_status: Nullable(
      Type.Union([Type.Literal('in_progress'), Type.Literal('exhausted'), Type.Literal('success')], {
        description:
          "Chargebee's: in_progress while retries remain, exhausted after the last one failed, success " +
          'when a retry or a new card paid it; null when no charge failed',
      }),
    ),
    attempt_count: Type.Integer({
      description:
        "Charges attempted (Stripe's attempt_count): the first, the scheduled retries and the ones a new card made",
    }),
    next_retry_at: Nullable(
      Unix("When the card is charged again (DUNNING_RETRY_DAYS after the invoice's date); null when none is scheduled"),
    ),
    recorded_payments: Type.Array(RecordedPayment, {
      description: 'Offline payments recorded (record_payment), oldest first',
    }),
    voided_at: Nullable(Unix('When it was voided')),
    void_reason_code: Nullable(Type.String({ description: 'The reason_code given when it was voided' })),
    comments: Type.Array(InvoiceComment, {
      description: 'Comments given with a void, a write-off or a refund, oldest first',
    }),
    amount_refunded: Minor('Paid back to the customer by refunds of its credit notes (refund)'),
  },
  { additionalProperties: false, title: 'Invoice', examples: [INVOICE_EXAMPLE] },
)
export type InvoiceBody = Static<typeof InvoiceBody>

export const InvoiceList = Type.Array(InvoiceBody, {
  title: 'InvoiceList',
  description: 'Newest first',
  examples: [[INVOICE_EXAMPLE]],
})

const CREDIT_NOTE_EXAMPLE = {
  id: '2a4c6e80-1b3d-4f5a-9c7e-8d6b4a2c0e1f',
  subscription_id: '0b8f6c1a-3d2e-4f5a-8b9c-1d2e3f4a5b6c',
  reference_invoice_id: '6f1c2f0e-7a51-4d55-9b1e-0c2a3e4b5d6f',
  type: 'refundable',
  status: 'refund_due',
  reason_code: 'subscription_change',
  description: null,
  line_items: [
    {
      entity_type: 'plan',
      entity_id: 'gold-monthly',
      description: 'Gold',
      unit_amount: 3000,
      quantity: 1,
      amount: 2600,
    },
  ],
  discounts: [],
  sub_total: 2600,
  taxes: [],
  total: 2600,
  amount_allocated: 1300,
  amount_refunded: 0,
  amount_available: 1300,
  refunds: [],
  currency_code: 'EUR',
  date: 1800835200,
}

export const CreditNoteBody = Type.Object(
  {
    id: Uuid(),
    subscription_id: Uuid(),
    reference_invoice_id: Nullable(Uuid('The invoice of the term whose unused part it credits')),
    type: Type.Union([Type.Literal('adjustment'), Type.Literal('refundable')], {
      description:
        "refundable: the customer's credit, applied to the next invoices or refunded; adjustment: " +
        'lowered what its unpaid reference invoice owed',
    }),
    status: Type.Union([Type.Literal('adjusted'), Type.Literal('refund_due'), Type.Literal('refunded')], {
      description:
        "Chargebee's: adjusted (an adjustment note); refund_due while a refundable note has credit left; " +
        'refunded once all of it was applied to invoices or refunded',
    }),
    reason_code: Type.String({
      description:
        "Chargebee's reason codes: subscription_change for the unused part of a changed term, " +
        'subscription_cancellation for the unused part of a term cancelled now; a refund or a manual note ' +
        'carries the one it was given (order_change, order_cancellation, product_unsatisfactory, ' +
        'service_unsatisfactory, waiver, other)',
    }),
    description: Nullable(Type.String({ description: 'Given with a manual credit note' })),
    line_items: Type.Array(InvoiceEstimate.properties.line_items.items, {
      description:
        "What it credits of each line of its reference invoice: amount the line's unused share, " +
        'discount_amount the part of it that was discounted (not paid, not credited); empty for a note ' +
        'issued before lines were recorded',
    }),
    discounts: Type.Array(InvoiceEstimate.properties.discounts.items, {
      description: "The reference invoice's discounts, in the unused share: not credited",
    }),
    sub_total: Minor('Sum of the line items'),
    taxes: Type.Array(InvoiceEstimate.properties.taxes.items, {
      description:
        "The tax of what is credited, at the reference invoice's rate, computed and rounded per line as " +
        'on invoices; empty for an export or a note issued before tax was recorded apart',
    }),
    total: Minor('The credit: sub_total − discounts + taxes; at most what the reference invoice charged'),
    amount_allocated: Minor('Already applied to invoices'),
    amount_refunded: Minor('Paid out to the customer (refund)'),
    amount_available: Minor('Still to apply or refund: total − amount_allocated − amount_refunded'),
    refunds: Type.Array(
      Type.Object({ amount: Minor('What was paid out'), date: Unix('When') }, { additionalProperties: false }),
      { description: 'Refunds paid out of it, oldest first' },
    ),
    currency_code: Type.String(),
    date: Unix('When it was issued'),
  },
  { additionalProperties: false, title: 'CreditNote', examples: [CREDIT_NOTE_EXAMPLE] },
)
export type CreditNoteBody = Static<typeof CreditNoteBody>

export const CreditNoteList = Type.Array(CreditNoteBody, {
  title: 'CreditNoteList',
  description: 'Newest first',
  examples: [[CREDIT_NOTE_EXAMPLE]],
})
