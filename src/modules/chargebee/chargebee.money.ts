import { randomUUID } from 'node:crypto'
import type Chargebee from 'chargebee'
import type { CbCreditNote, CbInvoice } from './chargebee.ledger-mapping.ts'
import type { CbCustomerBalances, ReadBack } from './chargebee.read-back.ts'
import type { Writer } from './chargebee.writes.ts'

// Chargebee's money operations (decisions §9.2) through the SDK. Each write carries an idempotency key and
// is retried under it (chargebee.writes.ts); when every attempt left the outcome uncertain, Chargebee is read
// back and the change counts as made when the object shows it, compared with what was read before the call.
export interface CbTransaction {
  id: string
  amount?: number
  payment_method?: string
  reference_number?: string
  date?: number
  type?: string
  status?: string
}

export interface CbLinkedPayment {
  txn_id: string
  applied_amount?: number
  txn_amount?: number
  txn_date?: number
}

/** Chargebee's invoice with what the read-backs compare. */
export type CbMoneyInvoice = CbInvoice & {
  linked_payments?: CbLinkedPayment[]
  issued_credit_notes?: { cn_id: string }[]
  adjustment_credit_notes?: { cn_id: string }[]
}

export interface PaymentInput {
  amount: number
  payment_method: 'bank_transfer' | 'cash' | 'check' | 'other'
  reference: string | null
  /** Unix seconds. */
  date: number
}

export interface ChargeInput {
  amount: number
  description: string
  currency_code: string
}

type ReasonCode =
  | 'product_unsatisfactory'
  | 'service_unsatisfactory'
  | 'order_change'
  | 'order_cancellation'
  | 'waiver'
  | 'other'

const notesOf = (i: CbMoneyInvoice) =>
  new Set([...(i.issued_credit_notes ?? []), ...(i.adjustment_credit_notes ?? [])].map((n) => n.cn_id))

export function createMoneyCalls(cb: Chargebee, write: Writer, readBack: ReadBack) {
  const as = <T>(a: unknown) => a as T

  /** The note the invoice gained since `before`, read whole. */
  async function newNoteOf(invoiceId: string, before: CbMoneyInvoice): Promise<CbCreditNote | null> {
    const now = (await readBack.invoice(invoiceId)) as CbMoneyInvoice | null
    if (!now) return null
    const known = notesOf(before)
    const added = [...notesOf(now)].find((id) => !known.has(id))
    return added ? readBack.creditNote(added) : null
  }

  return {
    /** invoice.record_payment: beyond amount_due, Chargebee keeps the rest as the customer's excess_payments. */
    async recordPayment(before: CbMoneyInvoice, payment: PaymentInput) {
      const known = new Set((before.linked_payments ?? []).map((p) => p.txn_id))
      return write(
        'record the payment',
        randomUUID(),
        (headers) =>
          cb.invoice
            .recordPayment(
              before.id,
              {
                transaction: {
                  amount: payment.amount,
                  payment_method: payment.payment_method,
                  ...(payment.reference ? { reference_number: payment.reference } : {}),
                  date: payment.date,
                  status: 'success',
                },
              },
              headers,
            )
            .then(as<{ invoice: CbMoneyInvoice; transaction: CbTransaction }>),
        async () => {
          const now = (await readBack.invoice(before.id)) as CbMoneyInvoice | null
          const made = now?.linked_payments?.find((p) => !known.has(p.txn_id))
          if (!now || !made) return null
          const transaction: CbTransaction = {
            id: made.txn_id,
            amount: made.txn_amount ?? payment.amount,
            payment_method: payment.payment_method,
            ...(payment.reference ? { reference_number: payment.reference } : {}),
            date: made.txn_date ?? payment.date,
          }
          return { invoice: now, transaction }
        },
      )
    },

    /** invoice.void_invoice: the credits applied go back to the customer. */
    async voidInvoice(before: CbMoneyInvoice, input: { reason_code: ReasonCode | null; comment?: string }) {
      return write(
        'void the invoice',
        randomUUID(),
        (headers) =>
          cb.invoice
            .voidInvoice(
              before.id,
              {
                ...(input.reason_code ? { void_reason_code: input.reason_code } : {}),
                ...(input.comment ? { comment: input.comment } : {}),
              },
              headers,
            )
            .then(as<{ invoice: CbMoneyInvoice; credit_note?: CbCreditNote }>),
        async () => {
          const now = await readBack.invoice(before.id)
          return now?.status === 'voided' ? { invoice: now as CbMoneyInvoice, credit_note: undefined } : null
        },
      )
    },

    /** invoice.write_off: paid, with write_off_amount what was due, and an adjustment credit note of it. */
    async writeOff(before: CbMoneyInvoice, input: { comment?: string }) {
      return write(
        'write off the invoice',
        randomUUID(),
        (headers) =>
          cb.invoice
            .writeOff(before.id, input.comment ? { comment: input.comment } : {}, headers)
            .then(as<{ invoice: CbMoneyInvoice; credit_note?: CbCreditNote }>),
        async () => {
          const now = await readBack.invoice(before.id)
          const done = now?.status === 'paid' && (now.write_off_amount ?? 0) > (before.write_off_amount ?? 0)
          if (!done) return null
          return { invoice: now as CbMoneyInvoice, credit_note: (await newNoteOf(before.id, before)) ?? undefined }
        },
      )
    },

    /** invoice.refund: a refundable credit note of the amount (all refundable by default), refunded. */
    async refundInvoice(
      before: CbMoneyInvoice,
      input: { amount: number | null; reason_code: ReasonCode; comment?: string },
    ) {
      return write(
        'refund the invoice',
        randomUUID(),
        (headers) =>
          cb.invoice
            .refund(
              before.id,
              {
                ...(input.amount !== null ? { refund_amount: input.amount } : {}),
                ...(input.comment ? { comment: input.comment } : {}),
                credit_note: { reason_code: input.reason_code },
              },
              headers,
            )
            .then(as<{ invoice: CbMoneyInvoice; transaction?: CbTransaction; credit_note?: CbCreditNote }>),
        async () => {
          const note = await newNoteOf(before.id, before)
          const invoice = note && (await readBack.invoice(before.id))
          return invoice && note ? { invoice, credit_note: note } : null
        },
      )
    },

    /** credit_note.create on the invoice `before`: an adjustment lowers what it owes, a refundable one is credit. */
    async createCreditNote(
      before: CbMoneyInvoice,
      input: { type: 'adjustment' | 'refundable'; total: number; reason_code: ReasonCode; description?: string },
    ) {
      return write(
        'create the credit note',
        randomUUID(),
        (headers) =>
          cb.creditNote
            .create(
              {
                reference_invoice_id: before.id,
                type: input.type,
                total: input.total,
                reason_code: input.reason_code,
                ...(input.description ? { customer_notes: input.description } : {}),
              },
              headers,
            )
            .then(as<{ credit_note: CbCreditNote; invoice?: CbMoneyInvoice }>),
        async () => {
          const note = await newNoteOf(before.id, before)
          return note ? { credit_note: note, invoice: (await readBack.invoice(before.id)) ?? undefined } : null
        },
      )
    },

    /** credit_note.refund: pays out what the note has available (all by default). */
    async refundCreditNote(before: CbCreditNote, input: { amount: number | null }) {
      return write(
        'refund the credit note',
        randomUUID(),
        (headers) =>
          cb.creditNote
            .refund(before.id, input.amount !== null ? { refund_amount: input.amount } : {}, headers)
            .then(as<{ credit_note: CbCreditNote; transaction?: CbTransaction }>),
        async () => {
          const now = await readBack.creditNote(before.id)
          return now && (now.amount_refunded ?? 0) > (before.amount_refunded ?? 0) ? { credit_note: now } : null
        },
      )
    },

    /** promotional_credit.add / deduct on the customer (our company id); Chargebee refuses going below 0. */
    async promotionalCredits(
      before: CbCustomerBalances,
      input: { type: 'add' | 'deduct'; amount: number; description: string; currency_code: string },
    ) {
      const params = {
        customer_id: before.id,
        amount: input.amount,
        description: input.description,
        currency_code: input.currency_code,
      }
      const was = before.promotional_credits ?? 0
      const expected = input.type === 'add' ? was + input.amount : was - input.amount
      return write(
        `${input.type === 'add' ? 'add' : 'deduct'} promotional credits`,
        randomUUID(),
        (headers) =>
          (input.type === 'add'
            ? cb.promotionalCredit.add(params, headers)
            : cb.promotionalCredit.deduct(params, headers)
          ).then(as<{ customer: CbCustomerBalances }>),
        async () => {
          const now = await readBack.customerBalances(before.id)
          return now && (now.promotional_credits ?? 0) === expected ? { customer: now } : null
        },
      )
    },

    /** invoice.create: a one-off charge invoiced (and collected) now on the subscription. */
    async chargeNow(customerId: string, subscriptionId: string, charge: ChargeInput) {
      const since = Math.floor(Date.now() / 1000) - 60
      const isOurs = (i: CbInvoice) =>
        (i.date ?? 0) >= since &&
        (i.line_items ?? []).some((l) => l.description === charge.description && l.amount === charge.amount)
      const earlier = new Set((await readBack.latestInvoices(subscriptionId)).filter(isOurs).map((i) => i.id))
      return write(
        'invoice the charge',
        randomUUID(),
        (headers) =>
          cb.invoice
            .create(
              {
                customer_id: customerId,
                subscription_id: subscriptionId,
                currency_code: charge.currency_code,
                charges: [{ amount: charge.amount, description: charge.description }],
              },
              headers,
            )
            .then(as<{ invoice: CbMoneyInvoice }>),
        async () => {
          const made = (await readBack.latestInvoices(subscriptionId)).find((i) => isOurs(i) && !earlier.has(i.id))
          return made ? { invoice: made } : null
        },
      )
    },

    /** subscription.add_charge_at_term_end: a line of the next renewal invoice. */
    async chargeAtTermEnd(subscriptionId: string, charge: Omit<ChargeInput, 'currency_code'>) {
      const matching = async () =>
        (await readBack.renewalLines(subscriptionId)).filter(
          (l) => l.description === charge.description && l.amount === charge.amount,
        ).length
      const before = await matching()
      return write(
        'add the charge to the next renewal',
        randomUUID(),
        (headers) =>
          cb.subscription
            .addChargeAtTermEnd(subscriptionId, { amount: charge.amount, description: charge.description }, headers)
            .then(as<{ estimate: unknown }>),
        async () => ((await matching()) > before ? { estimate: null } : null),
      )
    },
  }
}

export type MoneyCalls = ReturnType<typeof createMoneyCalls>
