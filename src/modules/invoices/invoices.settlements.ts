import { randomUUID } from 'node:crypto'
import type { InvoiceComment, InvoiceRow, OfflinePaymentMethod, RecordedPayment } from '../../db/tables.ts'
import { Conflict, NotFound, ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import type { InvoicesRepository } from './invoices.repository.ts'
import type { CustomerCreditsLedger } from './invoices.customer-credits.ts'

/**
 * An unpaid invoice settled by hand (decisions §9.2): an offline payment, a void, a write-off.
 * Each ends dunning, since a retry acts only on a payment_due invoice still waiting for it
 * (docs/adr/0030-offline-payments-voids-and-write-offs.md).
 */

export interface OfflinePayment {
  amount: number
  paymentMethod: OfflinePaymentMethod
  reference: string | null
  date: Date
}

export interface VoidInput {
  reasonCode: string | null
  comment?: string
}

const UNPAID = new Set(['payment_due', 'not_paid'])

/** Chargebee's `stopped` is shown as `exhausted`, as a Chargebee copy shows it. */
export const dunningEnded = (invoice: InvoiceRow, paid: boolean) =>
  invoice.dunning_status === 'in_progress' ? (paid ? 'success' : 'exhausted') : invoice.dunning_status

export function withComment(
  invoice: InvoiceRow,
  operation: InvoiceComment['operation'],
  text: string | undefined,
  at: Date,
) {
  const added = text ? [{ operation, comment: text, date: at.toISOString() }] : []
  return JSON.stringify([...invoice.comments, ...added])
}

export function createSettlements(deps: {
  repo: InvoicesRepository
  promotional: Pick<CustomerCreditsLedger, 'releasePromotionalCredits'>
}) {
  const { repo } = deps

  async function unpaid(trx: Executor, companyId: string, invoiceId: string, operation: string): Promise<InvoiceRow> {
    const invoice = await repo.lockInvoice(trx, companyId, invoiceId)
    if (!invoice) throw new NotFound('Invoice')
    if (!UNPAID.has(invoice.status)) {
      throw new Conflict(`The invoice is ${invoice.status}: only a payment_due or not_paid invoice can be ${operation}`)
    }
    return invoice
  }

  const reread = async (trx: Executor, invoice: InvoiceRow) =>
    (await repo.findInvoice(trx, invoice.company_id, invoice.id))!

  return {
    /** What exceeds the amount due becomes the customer's excess payment. */
    async recordPayment(trx: Executor, companyId: string, invoiceId: string, payment: OfflinePayment) {
      const invoice = await unpaid(trx, companyId, invoiceId, 'paid')
      // Compared in whole seconds, as the API shows the invoice's date.
      const invoiceDate = Math.floor(invoice.date.getTime() / 1000)
      if (Math.floor(payment.date.getTime() / 1000) < invoiceDate) {
        throw new ValidationError(`body/date must not be before the invoice's date (${invoiceDate})`)
      }
      const applied = Math.min(payment.amount, invoice.amount_due)
      const excess = payment.amount - applied
      const settled = applied === invoice.amount_due
      const entry: RecordedPayment = {
        amount: payment.amount,
        applied_amount: applied,
        payment_method: payment.paymentMethod,
        reference: payment.reference,
        date: payment.date.toISOString(),
      }
      await repo.updateInvoice(trx, companyId, invoiceId, {
        amount_paid: invoice.amount_paid + applied,
        amount_due: invoice.amount_due - applied,
        recorded_payments: JSON.stringify([...invoice.recorded_payments, entry]),
        ...(settled
          ? {
              status: 'paid',
              paid_at: payment.date,
              next_retry_at: null,
              dunning_status: dunningEnded(invoice, true),
            }
          : {}),
      })
      if (excess > 0) {
        await repo.insertExcessPayment(trx, {
          company_id: companyId,
          id: randomUUID(),
          subscription_id: invoice.subscription_id,
          invoice_id: invoiceId,
          total: excess,
          currency_code: invoice.currency_code,
          date: payment.date,
        })
      }
      return reread(trx, invoice)
    },

    /** Only with nothing paid; the credits applied to it go back to the customer. */
    async voidInvoice(trx: Executor, companyId: string, invoiceId: string, input: VoidInput, at: Date) {
      const invoice = await unpaid(trx, companyId, invoiceId, 'voided')
      if (invoice.amount_paid > 0 || invoice.write_off_amount > 0 || invoice.amount_adjusted > 0) {
        throw new Conflict(
          `The invoice has ${invoice.amount_paid} paid: only an invoice with nothing paid can be voided`,
        )
      }
      await repo.releaseCredits(trx, companyId, invoiceId)
      await deps.promotional.releasePromotionalCredits(trx, invoice, at)
      await repo.updateInvoice(trx, companyId, invoiceId, {
        status: 'voided',
        credits_applied: 0,
        amount_due: 0,
        voided_at: at,
        void_reason_code: input.reasonCode,
        next_retry_at: null,
        dunning_status: dunningEnded(invoice, false),
        comments: withComment(invoice, 'void', input.comment, at),
      })
      return reread(trx, invoice)
    },

    /** What is due is written off: the invoice becomes paid with write_off_amount. */
    async writeOff(trx: Executor, companyId: string, invoiceId: string, input: { comment?: string }, at: Date) {
      const invoice = await unpaid(trx, companyId, invoiceId, 'written off')
      await repo.updateInvoice(trx, companyId, invoiceId, {
        status: 'paid',
        write_off_amount: invoice.write_off_amount + invoice.amount_due,
        amount_due: 0,
        paid_at: at,
        next_retry_at: null,
        dunning_status: dunningEnded(invoice, false),
        comments: withComment(invoice, 'write_off', input.comment, at),
      })
      return reread(trx, invoice)
    },
  }
}

export type Settlements = ReturnType<typeof createSettlements>
