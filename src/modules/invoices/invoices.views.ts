import type { CreditNoteRow, InvoiceRow } from '../../db/tables.ts'
import { unixSeconds } from '../billing/index.ts'
import type { CreditNoteBody, InvoiceBody } from './invoices.schemas.ts'

/** An invoice as clients read it: amounts in minor units, times in Unix seconds (as the estimate). */
export function invoiceView(row: InvoiceRow): InvoiceBody {
  return {
    id: row.id,
    subscription_id: row.subscription_id,
    status: row.status,
    date: unixSeconds(row.date)!,
    due_date: unixSeconds(row.due_date)!,
    period_start: unixSeconds(row.period_start)!,
    period_end: unixSeconds(row.period_end)!,
    line_items: row.line_items as InvoiceBody['line_items'],
    discounts: row.discounts as InvoiceBody['discounts'],
    sub_total: row.sub_total,
    taxes: row.taxes as InvoiceBody['taxes'],
    total: row.total,
    credits_applied: row.credits_applied,
    amount_paid: row.amount_paid,
    amount_adjusted: row.amount_adjusted,
    write_off_amount: row.write_off_amount,
    amount_due: row.amount_due,
    currency_code: row.currency_code,
    paid_at: unixSeconds(row.paid_at),
    dunning_status: row.dunning_status,
    attempt_count: row.attempt_count,
    next_retry_at: unixSeconds(row.next_retry_at),
    recorded_payments: row.recorded_payments.map((p) => ({ ...p, date: unixSeconds(new Date(p.date))! })),
    voided_at: unixSeconds(row.voided_at),
    void_reason_code: row.void_reason_code,
    comments: row.comments.map((c) => ({ ...c, date: unixSeconds(new Date(c.date))! })),
    amount_refunded: row.amount_refunded,
  }
}

/** Chargebee's: adjusted, or refunded once nothing is left to use, else refund_due. */
const creditNoteStatus = (row: CreditNoteRow, available: number): CreditNoteBody['status'] =>
  row.type === 'adjustment' ? 'adjusted' : available === 0 ? 'refunded' : 'refund_due'

export function creditNoteView(row: CreditNoteRow): CreditNoteBody {
  const available = row.total - row.amount_allocated - row.amount_refunded
  return {
    id: row.id,
    subscription_id: row.subscription_id,
    reference_invoice_id: row.reference_invoice_id,
    type: row.type,
    status: creditNoteStatus(row, available),
    reason_code: row.reason_code,
    description: row.description,
    line_items: row.line_items as CreditNoteBody['line_items'],
    discounts: row.discounts as CreditNoteBody['discounts'],
    sub_total: row.sub_total,
    taxes: row.taxes as CreditNoteBody['taxes'],
    total: row.total,
    amount_allocated: row.amount_allocated,
    amount_refunded: row.amount_refunded,
    amount_available: available,
    refunds: row.refunds.map((r) => ({ amount: r.amount, date: unixSeconds(new Date(r.date))! })),
    currency_code: row.currency_code,
    date: unixSeconds(row.date)!,
  }
}
