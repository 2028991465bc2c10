import type { ColumnType, Generated } from 'kysely'
import type { Timestamp, CreatedAt, Json, JsonWithDefault } from './columns.ts'

export type InvoiceStatus = 'paid' | 'payment_due' | 'not_paid' | 'voided'
export type InvoiceKind = 'activation' | 'renewal' | 'change' | 'charge'
export type DunningStatus = 'in_progress' | 'exhausted' | 'success'

/** The local engine's invoices (migration 0014); money in minor units. */
export interface InvoicesTable {
  company_id: string
  id: string
  seq: Generated<number>
  subscription_id: string
  kind: InvoiceKind
  status: InvoiceStatus
  date: Timestamp
  due_date: Timestamp
  period_start: Timestamp
  period_end: Timestamp
  line_items: Json<unknown[]>
  discounts: Json<unknown[]>
  taxes: Json<unknown[]>
  sub_total: number
  total: number
  credits_applied: number
  amount_paid: number
  /** Settled by adjustment credit notes and written off (a provider's; 0 for the local engine's). */
  amount_adjusted: ColumnType<number, number | undefined, number>
  write_off_amount: ColumnType<number, number | undefined, number>
  amount_due: number
  currency_code: string
  paid_at: Timestamp | null
  dunning_status: DunningStatus | null
  attempt_count: ColumnType<number, number | undefined, number>
  next_retry_at: Timestamp | null
  /** Offline payments (record_payment), oldest first. */
  recorded_payments: JsonWithDefault<RecordedPayment[]>
  voided_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>
  void_reason_code: ColumnType<string | null, string | null | undefined, string | null>
  comments: JsonWithDefault<InvoiceComment[]>
  /** Paid back by its credit notes' refunds. */
  amount_refunded: ColumnType<number, number | undefined, number>
  created_at: CreatedAt
}

export type OfflinePaymentMethod = 'bank_transfer' | 'cash' | 'check' | 'other'

/** `date` in ISO form; `applied_amount` is what settled the invoice, the rest became an excess payment. */
export interface RecordedPayment {
  amount: number
  applied_amount: number
  payment_method: OfflinePaymentMethod
  reference: string | null
  date: string
}

export interface InvoiceComment {
  operation: 'void' | 'write_off' | 'refund'
  comment: string
  date: string
}

/** A payment's part beyond its invoice: the customer's excess_payments. */
export interface ExcessPaymentsTable {
  company_id: string
  id: string
  seq: Generated<number>
  subscription_id: string
  invoice_id: string
  total: number
  amount_allocated: ColumnType<number, number | undefined, number>
  currency_code: string
  date: Timestamp
  created_at: CreatedAt
}

export interface ExcessPaymentAllocationsTable {
  company_id: string
  excess_payment_id: string
  invoice_id: string
  amount: number
}

export interface CreditNotesTable {
  company_id: string
  id: string
  seq: Generated<number>
  subscription_id: string
  reference_invoice_id: string | null
  type: 'adjustment' | 'refundable'
  reason_code: string
  /** What it credits, line by line, and its tax (older rows: none, sub_total = total). */
  line_items: JsonWithDefault<unknown[]>
  discounts: JsonWithDefault<unknown[]>
  taxes: JsonWithDefault<unknown[]>
  sub_total: number
  total: number
  amount_allocated: number
  /** Paid out to the customer (refunds, oldest first); available: total − allocated − refunded. */
  amount_refunded: ColumnType<number, number | undefined, number>
  refunds: JsonWithDefault<CreditNoteRefund[]>
  description: ColumnType<string | null, string | null | undefined, string | null>
  currency_code: string
  date: Timestamp
  created_at: CreatedAt
}

/** `date` in ISO form. */
export interface CreditNoteRefund {
  amount: number
  date: string
}

export interface CreditAllocationsTable {
  company_id: string
  credit_note_id: string
  invoice_id: string
  amount: number
}

/** A change of the customer's promotional credits (migration 0052); `invoice_id` when an invoice took or gave back. */
export interface PromotionalCreditsTable {
  company_id: string
  id: string
  seq: Generated<number>
  type: 'increment' | 'decrement'
  amount: number
  currency_code: string
  description: string
  invoice_id: string | null
  date: Timestamp
  created_at: CreatedAt
}

/** A one-off charge; `invoice_id` null while it waits for the next renewal invoice. */
export interface ChargesTable {
  company_id: string
  id: string
  seq: Generated<number>
  subscription_id: string
  amount: number
  description: string
  currency_code: string
  invoice_id: string | null
  date: Timestamp
  created_at: CreatedAt
}

/** Each FatturaPA document's progressive, given once (migration 0057). */
export interface FatturapaProgressivesTable {
  company_id: string
  document_type: 'invoice' | 'credit_note'
  document_id: string
  progressive: ColumnType<string | number, never, never>
  created_at: CreatedAt
}
