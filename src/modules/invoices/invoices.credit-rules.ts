import type { CreditNoteRow, InvoiceRow } from '../../db/tables.ts'
import { Conflict, ValidationError } from '../../core/errors.ts'

/**
 * The limits of refunds and manual credit notes (docs/adr/0031-refunds-and-manual-credit-notes.md),
 * checked on a locked invoice or note whoever then performs the operation: the local engine or Chargebee.
 */

const UNPAID = new Set(['payment_due', 'not_paid'])

/** What an invoice's credit notes sum to, and the refundable ones' part. */
export interface Credited {
  total: number
  refundable: number
}

type Invoice = Pick<
  InvoiceRow,
  'status' | 'total' | 'amount_paid' | 'amount_refunded' | 'amount_due' | 'credits_applied'
>

/** The amount a refund gives back: `amount`, or all that is left when it is absent. */
export function refundAmount(invoice: Invoice, credited: Credited, amount: number | undefined) {
  if (invoice.status !== 'paid') {
    throw new Conflict(`The invoice is ${invoice.status}: only a paid invoice can be refunded`)
  }
  const refundable = Math.max(
    0,
    Math.min(invoice.amount_paid - invoice.amount_refunded, invoice.total - credited.total),
  )
  if (amount !== undefined && amount > refundable) {
    throw new ValidationError(
      `body/amount must be at most ${refundable}, what was paid of the invoice and is not yet refunded or credited`,
    )
  }
  const refund = amount ?? refundable
  if (refund === 0) throw new Conflict('Nothing paid of the invoice is left to refund')
  return refund
}

/** An adjustment only on what an unpaid invoice owes; a refundable note only on what was paid of it. */
export function checkCreditNote(
  invoice: Invoice,
  credited: Credited,
  input: { type: 'adjustment' | 'refundable'; total: number },
) {
  if (invoice.status === 'voided') throw new Conflict('The invoice is voided: it takes no credit note')
  if (credited.total + input.total > invoice.total) {
    throw new ValidationError(
      `body/total must be at most ${invoice.total - credited.total}: the invoice's credit notes would sum to ` +
        `${credited.total + input.total}, beyond its total ${invoice.total}`,
    )
  }
  if (input.type === 'adjustment') {
    if (!UNPAID.has(invoice.status)) {
      throw new Conflict(
        `The invoice is ${invoice.status}: only a payment_due or not_paid invoice can be adjusted ` +
          '(a paid one takes a refundable credit note)',
      )
    }
    if (input.total > invoice.amount_due) {
      throw new ValidationError(`body/total must be at most ${invoice.amount_due}, what the invoice still owes`)
    }
    return
  }
  const paid = invoice.amount_paid + invoice.credits_applied - credited.refundable
  if (input.total > paid) {
    throw new ValidationError(
      `body/total must be at most ${Math.max(0, paid)}, what was paid of the invoice and is not yet credited ` +
        '(an unpaid part takes an adjustment credit note)',
    )
  }
}

export const creditNoteAvailable = (note: Pick<CreditNoteRow, 'total' | 'amount_allocated' | 'amount_refunded'>) =>
  note.total - note.amount_allocated - note.amount_refunded

/** What a credit note's refund pays out: `amount`, or all it still holds when absent. */
export function noteRefundAmount(
  note: Pick<CreditNoteRow, 'type' | 'total' | 'amount_allocated' | 'amount_refunded'>,
  amount: number | undefined,
) {
  if (note.type !== 'refundable') {
    throw new Conflict('The credit note is an adjustment: only a refundable credit note can be refunded')
  }
  const available = creditNoteAvailable(note)
  if (amount !== undefined && amount > available) {
    throw new ValidationError(`body/amount must be at most ${available}, the credit note's amount_available`)
  }
  const refund = amount ?? available
  if (refund === 0) throw new Conflict('The credit note has nothing left to refund (amount_available 0)')
  return refund
}
