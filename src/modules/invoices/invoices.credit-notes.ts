import { randomUUID } from 'node:crypto'
import type { CreditNoteRow, InvoiceRow } from '../../db/tables.ts'
import { Conflict, NotFound, ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { creditShare, type LineItem } from '../billing/index.ts'
import type { InvoicesRepository } from './invoices.repository.ts'
import { dunningEnded, withComment } from './invoices.settlements.ts'

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

const UNPAID = new Set(['payment_due', 'not_paid'])

export const creditNoteAvailable = (note: Pick<CreditNoteRow, 'total' | 'amount_allocated' | 'amount_refunded'>) =>
  note.total - note.amount_allocated - note.amount_refunded

const sum = (notes: CreditNoteRow[]) => notes.reduce((total, n) => total + n.total, 0)

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
      if (invoice.status !== 'paid') {
        throw new Conflict(`The invoice is ${invoice.status}: only a paid invoice can be refunded`)
      }
      const issued = sum(await repo.creditNotesFor(trx, companyId, invoiceId))
      const refundable = Math.max(0, Math.min(invoice.amount_paid - invoice.amount_refunded, invoice.total - issued))
      if (input.amount !== undefined && input.amount > refundable) {
        throw new ValidationError(
          `body/amount must be at most ${refundable}, what was paid of the invoice and is not yet refunded or credited`,
        )
      }
      const amount = input.amount ?? refundable
      if (amount === 0) throw new Conflict('Nothing paid of the invoice is left to refund')
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
      if (invoice.status === 'voided') throw new Conflict('The invoice is voided: it takes no credit note')
      const notes = await repo.creditNotesFor(trx, companyId, invoice.id)
      const credited = sum(notes)
      if (credited + input.total > invoice.total) {
        throw new ValidationError(
          `body/total must be at most ${invoice.total - credited}: the invoice's credit notes would sum to ` +
            `${credited + input.total}, beyond its total ${invoice.total}`,
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
      } else {
        const paid = invoice.amount_paid + invoice.credits_applied - sum(notes.filter((n) => n.type === 'refundable'))
        if (input.total > paid) {
          throw new ValidationError(
            `body/total must be at most ${Math.max(0, paid)}, what was paid of the invoice and is not yet credited ` +
              '(an unpaid part takes an adjustment credit note)',
          )
        }
      }
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
      if (note.type !== 'refundable') {
        throw new Conflict('The credit note is an adjustment: only a refundable credit note can be refunded')
      }
      const available = creditNoteAvailable(note)
      if (amount !== undefined && amount > available) {
        throw new ValidationError(`body/amount must be at most ${available}, the credit note's amount_available`)
      }
      const refund = amount ?? available
      if (refund === 0) throw new Conflict('The credit note has nothing left to refund (amount_available 0)')
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
