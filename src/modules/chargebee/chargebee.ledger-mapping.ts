import { uuidFromName } from '../../core/ids.ts'
import type { CreditNotesTable, InvoiceKind, InvoiceStatus, InvoicesTable } from '../../db/tables.ts'
import type { Insertable } from 'kysely'
import { estimateFrom } from './chargebee.mapping.ts'

// Chargebee's invoices and credit notes (API v2) as rows of our ledger, for a Chargebee-managed subscription.
export interface CbLineItem {
  entity_type: string
  entity_id?: string
  description?: string
  unit_amount?: number
  quantity?: number
  amount?: number
  date_from?: number
  date_to?: number
}
export interface CbInvoice {
  id: string
  customer_id: string
  subscription_id?: string
  status: 'paid' | 'posted' | 'payment_due' | 'not_paid' | 'voided' | 'pending'
  recurring?: boolean
  first_invoice?: boolean
  date?: number
  due_date?: number
  generated_at?: number
  currency_code?: string
  sub_total?: number
  total?: number
  amount_paid?: number
  amount_due?: number
  credits_applied?: number
  amount_adjusted?: number
  write_off_amount?: number
  paid_at?: number
  dunning_status?: 'in_progress' | 'exhausted' | 'stopped' | 'success'
  dunning_attempts?: unknown[]
  next_retry_at?: number
  voided_at?: number
  void_reason_code?: string
  resource_version?: number
  updated_at?: number
  line_items?: CbLineItem[]
  discounts?: { description?: string; amount?: number }[]
  taxes?: { name: string; amount?: number; description?: string }[]
  line_item_taxes?: { tax_name: string; tax_rate?: number }[]
  deleted?: boolean
}
export interface CbCreditNote {
  id: string
  customer_id: string
  subscription_id?: string
  reference_invoice_id?: string
  type: 'adjustment' | 'refundable' | 'store'
  reason_code?: string
  status?: 'adjusted' | 'refunded' | 'refund_due' | 'voided'
  date?: number
  currency_code?: string
  total?: number
  amount_allocated?: number
  amount_refunded?: number
  linked_refunds?: { applied_amount?: number; applied_at?: number }[]
  amount_available?: number
  sub_total?: number
  line_items?: CbLineItem[]
  discounts?: { description?: string; amount?: number }[]
  taxes?: { name: string; amount?: number; description?: string }[]
  line_item_taxes?: { tax_name: string; tax_rate?: number }[]
  resource_version?: number
  updated_at?: number
  deleted?: boolean
}

const INVOICE_STATUSES = ['paid', 'posted', 'payment_due', 'not_paid', 'voided', 'pending']

export function isCbInvoice(value: unknown): value is CbInvoice {
  const i = value as CbInvoice
  return (
    typeof i === 'object' &&
    i !== null &&
    typeof i.id === 'string' &&
    i.id !== '' &&
    typeof i.customer_id === 'string' &&
    INVOICE_STATUSES.includes(i.status)
  )
}

export function isCbCreditNote(value: unknown): value is CbCreditNote {
  const n = value as CbCreditNote
  return (
    typeof n === 'object' &&
    n !== null &&
    typeof n.id === 'string' &&
    n.id !== '' &&
    typeof n.customer_id === 'string' &&
    ['adjustment', 'refundable', 'store'].includes(n.type)
  )
}

/** A UUID derived from the type and Chargebee's id, so every copy of an object is one row. */
export function ledgerId(
  type: 'invoice' | 'credit_note' | 'payment_source' | 'transaction',
  chargebeeId: string,
): string {
  return uuidFromName(`chargebee/${type}/${chargebeeId}`)
}

/** Its resource_version, else its updated_at (ms), else 0 (applied once). */
export function versionOf(object: { resource_version?: number; updated_at?: number }): bigint {
  if (Number.isSafeInteger(object.resource_version)) return BigInt(object.resource_version!)
  return BigInt(Math.trunc((object.updated_at ?? 0) * 1000))
}

const date = (seconds: number | undefined, fallback: Date): Date =>
  typeof seconds === 'number' ? new Date(seconds * 1000) : fallback

// `posted` waits for payment like `payment_due`; `pending` (metered lines may still come) is not in the ledger yet.
function statusOf(status: CbInvoice['status']): InvoiceStatus | null {
  if (status === 'pending') return null
  return status === 'posted' ? 'payment_due' : status
}

function kindOf(i: CbInvoice): InvoiceKind {
  if (i.first_invoice) return 'activation'
  return i.recurring ? 'renewal' : 'change'
}

/**
 * The ledger row of a Chargebee invoice (null when pending). Each amount is Chargebee's, capped by
 * what the total leaves (our CHECK), with amount_due the rest. `attempts` is what the ledger already
 * counted: a payment_failed webhook may count one more than Chargebee's copy.
 */
export function invoiceRowFrom(
  i: CbInvoice,
  ids: { companyId: string; subscriptionId: string },
  at: Date,
  attempts = 0,
): Insertable<InvoicesTable> | null {
  const status = statusOf(i.status)
  if (!status) return null
  const issued = date(i.date ?? i.generated_at, at)
  const priced = estimateFrom(
    { invoice_estimate: i },
    { status: 'active', currency: i.currency_code ?? 'EUR' },
  ).invoice_estimate
  const total = Math.max(0, i.total ?? priced.total)
  let left = total
  const settled = (amount: number | undefined) => {
    const part = Math.min(left, Math.max(0, amount ?? 0))
    left -= part
    return part
  }
  const [amountPaid, creditsApplied, amountAdjusted, writtenOff] = [
    settled(i.amount_paid),
    settled(i.credits_applied),
    settled(i.amount_adjusted),
    settled(i.write_off_amount),
  ]
  const amountDue = status === 'voided' ? 0 : left
  const froms = (i.line_items ?? []).map((l) => l.date_from).filter((d): d is number => typeof d === 'number')
  const tos = (i.line_items ?? []).map((l) => l.date_to).filter((d): d is number => typeof d === 'number')
  const dunning = i.dunning_status === 'stopped' ? 'exhausted' : (i.dunning_status ?? null)
  return {
    company_id: ids.companyId,
    id: ledgerId('invoice', i.id),
    subscription_id: ids.subscriptionId,
    kind: kindOf(i),
    status,
    date: issued,
    due_date: date(i.due_date, issued),
    period_start: froms.length ? new Date(Math.min(...froms) * 1000) : issued,
    period_end: tos.length ? new Date(Math.max(...tos) * 1000) : issued,
    line_items: JSON.stringify(priced.line_items),
    discounts: JSON.stringify(priced.discounts),
    taxes: JSON.stringify(priced.taxes),
    sub_total: priced.sub_total,
    total,
    credits_applied: creditsApplied,
    amount_paid: amountPaid,
    amount_adjusted: amountAdjusted,
    write_off_amount: writtenOff,
    amount_due: amountDue,
    currency_code: priced.currency_code,
    paid_at: status === 'paid' ? date(i.paid_at, issued) : null,
    dunning_status: dunning,
    attempt_count: Math.max(attempts, i.dunning_attempts?.length ?? 0),
    next_retry_at:
      status === 'payment_due' && typeof i.next_retry_at === 'number' ? new Date(i.next_retry_at * 1000) : null,
    voided_at: status === 'voided' && typeof i.voided_at === 'number' ? new Date(i.voided_at * 1000) : null,
    void_reason_code: status === 'voided' ? (i.void_reason_code ?? null) : null,
  }
}

/**
 * The ledger row of a Chargebee credit note (null when it credits nothing). A `store` note is
 * credit like a refundable one; what is no longer available and not refunded counts as allocated.
 */
export function creditNoteRowFrom(
  n: CbCreditNote,
  ids: { companyId: string; subscriptionId: string; referenceInvoiceId: string | null },
  at: Date,
): Insertable<CreditNotesTable> | null {
  const total = n.total ?? 0
  if (total <= 0) return null
  const available =
    n.status === 'voided'
      ? 0
      : Math.min(total, Math.max(0, n.amount_available ?? total - (n.amount_allocated ?? 0) - (n.amount_refunded ?? 0)))
  const refunded = Math.min(total - available, Math.max(0, n.amount_refunded ?? 0))
  const priced = estimateFrom(
    { invoice_estimate: n },
    { status: 'active', currency: n.currency_code ?? 'EUR' },
  ).invoice_estimate
  return {
    company_id: ids.companyId,
    id: ledgerId('credit_note', n.id),
    subscription_id: ids.subscriptionId,
    reference_invoice_id: ids.referenceInvoiceId,
    type: n.type === 'adjustment' ? 'adjustment' : 'refundable',
    reason_code: n.reason_code ?? 'other',
    line_items: JSON.stringify(priced.line_items),
    discounts: JSON.stringify(priced.discounts),
    taxes: JSON.stringify(priced.taxes),
    sub_total: n.sub_total ?? total,
    total,
    amount_allocated: total - available - refunded,
    amount_refunded: refunded,
    refunds: JSON.stringify(
      n.linked_refunds?.length
        ? n.linked_refunds.map((r) => ({ amount: r.applied_amount ?? 0, date: date(r.applied_at, at).toISOString() }))
        : refunded > 0
          ? [{ amount: refunded, date: date(n.updated_at ?? n.date, at).toISOString() }]
          : [],
    ),
    currency_code: n.currency_code ?? 'EUR',
    date: date(n.date, at),
  }
}
