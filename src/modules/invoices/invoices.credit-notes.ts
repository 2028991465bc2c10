import { randomUUID } from 'node:crypto'
import type { CreditNoteRow, InvoiceRow } from '../../db/tables.ts'
import { NotFound, ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { creditShare, type LineItem } from '../billing/index.ts'
import type { InvoicesRepository } from './invoices.repository.ts'
import { dunningEnded, withComment } from './invoices.settlements.ts'
import { checkCreditNote, noteRefundAmount, refundAmount } from './invoices.credit-rules.ts'

/**
 * Refunds and manual credit notes as Chargebee makes them (decisions §9.2): a refund is a refundable note paid out
 * at once; an adjustment note lowers what an unpaid invoice owes; a refundable note credits what was paid, to use or
 * refund. One invoice's notes never sum beyond its total (docs/adr/0031-refunds-and-manual-credit-notes.md).
 */

export interface RefundInput {
  amount?: number
  reasonCode: string
  comment?: string
}

export interface ManualCreditNote {
  referenceInvoiceId: string
  type: 'adjustment' | 'refundable'
  total: number
  reasonCode: string
  description: string | null
}

const sum = (notes: CreditNoteRow[]) => notes.reduce((total, n) => total + n.total, 0)
const credited = (notes: CreditNoteRow[]) => ({
  total: sum(notes),
  refundable: sum(notes.filter((n) => n.type === 'refundable')),
})

export function createCreditNoteOperations(deps: { repo: InvoicesRepository }) {
  const { repo } = deps

  async function issue(
    trx: Executor,
    invoice: InvoiceRow,
    note: Omit<ManualCreditNote, 'referenceInvoiceId'>,
    at: Date,
    refunded: boolean,
  ) {
    const figures = creditShare(
      { ...invoice, line_items: invoice.line_items as LineItem[], taxes: invoice.taxes as LineTaxes },
      note.total,
    )
    return repo.insertCreditNote(trx, {
      company_id: invoice.company_id,
      id: randomUUID(),
      subscription_id: invoice.subscription_id,
      reference_invoice_id: invoice.id,
      type: note.type,
      reason_code: note.reasonCode,
      description: note.description,
      line_items: JSON.stringify(figures.line_items),
      discounts: JSON.stringify(figures.discounts),
      sub_total: figures.sub_total,
      taxes: JSON.stringify(figures.taxes),
      total: figures.total,
      amount_allocated: note.type === 'adjustment' ? note.total : 0,
      amount_refunded: refunded ? note.total : 0,
      refunds: JSON.stringify(refunded ? [{ amount: note.total, date: at.toISOString() }] : []),
      currency_code: invoice.currency_code,
      date: at,
    })
  }

  const reread = async (trx: Executor, invoice: InvoiceRow) =>
    (await repo.findInvoice(trx, invoice.company_id, invoice.id))!

  return {
    /** A paid invoice's payment given back: a refundable credit note, refunded at once. */
    async refundInvoice(trx: Executor, companyId: string, invoiceId: string, input: RefundInput, at: Date) {
      const invoice = await repo.lockInvoice(trx, companyId, invoiceId)
      if (!invoice) throw new NotFound('Invoice')
      const notes = invoice.status === 'paid' ? await repo.creditNotesFor(trx, companyId, invoiceId) : []
      const amount = refundAmount(invoice, credited(notes), input.amount)
      await issue(
        trx,
        invoice,
        { type: 'refundable', total: amount, reasonCode: input.reasonCode, description: null },
        at,
        true,
      )
      await repo.updateInvoice(trx, companyId, invoiceId, {
        amount_refunded: invoice.amount_refunded + amount,
        comments: withComment(invoice, 'refund', input.comment, at),
      })
      return reread(trx, invoice)
    },

    /**
     * An adjustment lowers an unpaid invoice's amount_due (settling it ends dunning); a refundable
     * note credits what was paid of it (payments and credits applied) to the customer.
     */
    async createCreditNote(trx: Executor, companyId: string, input: ManualCreditNote, at: Date) {
      const invoice = await repo.lockInvoice(trx, companyId, input.referenceInvoiceId)
      if (!invoice) throw new ValidationError('body/reference_invoice_id must be an invoice of the company')
      checkCreditNote(invoice, credited(await repo.creditNotesFor(trx, companyId, invoice.id)), input)
      const note = await issue(trx, invoice, input, at, false)
      if (input.type === 'adjustment') {
        const due = invoice.amount_due - input.total
        await repo.updateInvoice(trx, companyId, invoice.id, {
          amount_adjusted: invoice.amount_adjusted + input.total,
          amount_due: due,
          ...(due === 0
            ? { status: 'paid', paid_at: at, next_retry_at: null, dunning_status: dunningEnded(invoice, false) }
            : {}),
        })
      }
      return note
    },

    /** Pays out what a refundable credit note still holds; its invoice shows the refund. */
    async refundCreditNote(
      trx: Executor,
      companyId: string,
      creditNoteId: string,
      amount: number | undefined,
      at: Date,
    ) {
      const note = await repo.lockCreditNote(trx, companyId, creditNoteId)
      if (!note) throw new NotFound('Credit note')
      const refund = noteRefundAmount(note, amount)
      await repo.updateCreditNote(trx, companyId, note.id, {
        amount_refunded: note.amount_refunded + refund,
        refunds: JSON.stringify([...note.refunds, { amount: refund, date: at.toISOString() }]),
      })
      const invoice = note.reference_invoice_id && (await repo.lockInvoice(trx, companyId, note.reference_invoice_id))
      if (invoice) {
        await repo.updateInvoice(trx, companyId, invoice.id, { amount_refunded: invoice.amount_refunded + refund })
      }
      return (await repo.findCreditNote(trx, companyId, note.id))!
    },
  }
}

type LineTaxes = { name: string; rate: number; amount: number }[]

export type CreditNoteOperations = ReturnType<typeof createCreditNoteOperations>
