import { Conflict, NotFound, ProviderError, ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { checkCreditNote, noteRefundAmount, refundAmount } from '../invoices/index.ts'
import { ledgerId, type CbCreditNote } from './chargebee.ledger-mapping.ts'
import type { MoneyCalls, PaymentInput } from './chargebee.money.ts'
import type { LedgerOwner, ProviderLedger } from './chargebee-ledger.service.ts'
import type { ChargebeeProvider } from './chargebee.provider.ts'

// The money operations of decisions §9.2 on a Chargebee subscription, for the services that own their
// routes: each locks the mirrored row and checks it as the local engine would, then Chargebee's copy, calls
// Chargebee (chargebee.money.ts) and lays its answer over the mirror in the caller's transaction, whose row
// triggers write the local engine's events. Ids in and out are ours; Chargebee's come from the mirror.
export type ReasonCode = Parameters<MoneyCalls['refundInvoice']>[1]['reason_code']

const UNPAID = new Set(['payment_due', 'not_paid'])
const CHARGEBEE_UNPAID = new Set(['payment_due', 'not_paid', 'posted'])

export function createChargebeeMoneyPort(deps: { money: ChargebeeProvider['money']; ledger: ProviderLedger }) {
  const { money, ledger } = deps

  /** The mirrored row, locked; 404 when not mirrored. */
  async function mirrored(trx: Executor, owner: LedgerOwner, invoiceId: string) {
    const row = await ledger.lockInvoice(trx, owner.companyId, invoiceId)
    const chargebeeId = row && (await ledger.providerIdOf(trx, owner.companyId, invoiceId))
    if (!row || !chargebeeId) throw new NotFound('Invoice')
    return { row, chargebeeId }
  }

  async function chargebeeCopy(chargebeeId: string) {
    const copy = await money.invoice(chargebeeId)
    if (!copy) throw new ProviderError(`Chargebee does not know the invoice ${chargebeeId}`)
    return copy
  }

  /** Unpaid here, then at Chargebee (where `posted` waits for payment too); else 409 naming the status. */
  async function unpaid(trx: Executor, owner: LedgerOwner, invoiceId: string, operation: string) {
    const { row, chargebeeId } = await mirrored(trx, owner, invoiceId)
    const refuse = (status: string) =>
      new Conflict(`The invoice is ${status}: only a payment_due or not_paid invoice can be ${operation}`)
    if (!UNPAID.has(row.status)) throw refuse(row.status)
    const copy = await chargebeeCopy(chargebeeId)
    if (!CHARGEBEE_UNPAID.has(copy.status)) throw refuse(copy.status)
    return { row, copy }
  }

  async function applyNote(trx: Executor, owner: LedgerOwner, note: CbCreditNote | undefined, at: Date) {
    if (note) await ledger.applyCreditNote(trx, owner, note, at)
  }

  const comment = (operation: 'void' | 'write_off', text: string | undefined, at: Date) =>
    text ? { comment: { operation, comment: text, date: at.toISOString() } } : {}

  return {
    /** Beyond amount_due, Chargebee keeps the rest as the customer's excess_payments. */
    async recordPayment(trx: Executor, owner: LedgerOwner, invoiceId: string, payment: PaymentInput, at: Date) {
      const { row, copy } = await unpaid(trx, owner, invoiceId, 'paid')
      const invoiceDate = Math.floor(row.date.getTime() / 1000)
      if (payment.date < invoiceDate) {
        throw new ValidationError(`body/date must not be before the invoice's date (${invoiceDate})`)
      }
      const { invoice, transaction } = await money.recordPayment(copy, payment)
      const linked = invoice.linked_payments?.find((p) => p.txn_id === transaction.id)
      const entry = {
        amount: transaction.amount ?? payment.amount,
        applied_amount: linked?.applied_amount ?? Math.min(payment.amount, row.amount_due),
        payment_method: payment.payment_method,
        reference: payment.reference,
        date: new Date((transaction.date ?? payment.date) * 1000).toISOString(),
      }
      await ledger.applyInvoice(trx, owner, invoice, at, { payment: { transactionId: transaction.id, entry } })
    },

    async voidInvoice(
      trx: Executor,
      owner: LedgerOwner,
      invoiceId: string,
      input: { reasonCode: ReasonCode | null; comment?: string },
      at: Date,
    ) {
      const { row, copy } = await unpaid(trx, owner, invoiceId, 'voided')
      if (row.amount_paid > 0 || row.write_off_amount > 0 || row.amount_adjusted > 0 || (copy.amount_paid ?? 0) > 0) {
        throw new Conflict(
          `The invoice has ${Math.max(row.amount_paid, copy.amount_paid ?? 0)} paid: ` +
            'only an invoice with nothing paid can be voided',
        )
      }
      const answer = await money.voidInvoice(copy, { reason_code: input.reasonCode, comment: input.comment })
      await ledger.applyInvoice(trx, owner, answer.invoice, at, comment('void', input.comment, at))
      await applyNote(trx, owner, answer.credit_note, at)
    },

    /** Chargebee also makes an adjustment credit note of what it wrote off, mirrored with it. */
    async writeOff(trx: Executor, owner: LedgerOwner, invoiceId: string, input: { comment?: string }, at: Date) {
      const { copy } = await unpaid(trx, owner, invoiceId, 'written off')
      const answer = await money.writeOff(copy, input)
      await ledger.applyInvoice(trx, owner, answer.invoice, at, comment('write_off', input.comment, at))
      await applyNote(trx, owner, answer.credit_note, at)
    },

    /** A paid invoice refunded (all not yet refunded when `amount` is null); the refundable credit note's id. */
    async refundInvoice(
      trx: Executor,
      owner: LedgerOwner,
      invoiceId: string,
      input: { amount: number | null; reasonCode: ReasonCode; comment?: string },
      at: Date,
    ): Promise<string | null> {
      const { row, chargebeeId } = await mirrored(trx, owner, invoiceId)
      refundAmount(row, await ledger.creditedOn(trx, owner.companyId, invoiceId), input.amount ?? undefined)
      const copy = await chargebeeCopy(chargebeeId)
      if (copy.status !== 'paid')
        throw new Conflict(`The invoice is ${copy.status}: only a paid invoice can be refunded`)
      const answer = await money.refundInvoice(copy, {
        amount: input.amount,
        reason_code: input.reasonCode,
        ...(input.comment ? { comment: input.comment } : {}),
      })
      await ledger.applyInvoice(trx, owner, answer.invoice, at)
      await applyNote(trx, owner, answer.credit_note, at)
      return answer.credit_note ? noteId(answer.credit_note) : null
    },

    /** A manual credit note on one of the subscription's invoices; its id (ours). */
    async createCreditNote(
      trx: Executor,
      owner: LedgerOwner,
      input: {
        referenceInvoiceId: string
        type: 'adjustment' | 'refundable'
        total: number
        reasonCode: ReasonCode
        description?: string
      },
      at: Date,
    ): Promise<string> {
      const row = await ledger.lockInvoice(trx, owner.companyId, input.referenceInvoiceId)
      const chargebeeId = row && (await ledger.providerIdOf(trx, owner.companyId, input.referenceInvoiceId))
      if (!row || !chargebeeId) throw new ValidationError('body/reference_invoice_id must be an invoice of the company')
      checkCreditNote(row, await ledger.creditedOn(trx, owner.companyId, row.id), input)
      const copy = await chargebeeCopy(chargebeeId)
      const answer = await money.createCreditNote(copy, {
        type: input.type,
        total: input.total,
        reason_code: input.reasonCode,
        ...(input.description ? { description: input.description } : {}),
      })
      if (answer.invoice) await ledger.applyInvoice(trx, owner, answer.invoice, at)
      await ledger.applyCreditNote(trx, owner, answer.credit_note, at)
      return noteId(answer.credit_note)
    },

    /** Pays out a refundable credit note's available amount (all when `amount` is null). */
    async refundCreditNote(
      trx: Executor,
      owner: LedgerOwner,
      creditNoteId: string,
      input: { amount: number | null },
      at: Date,
    ) {
      const row = await ledger.lockCreditNote(trx, owner.companyId, creditNoteId)
      const chargebeeId = row && (await ledger.providerIdOf(trx, owner.companyId, creditNoteId))
      if (!row || !chargebeeId) throw new NotFound('Credit note')
      noteRefundAmount(row, input.amount ?? undefined)
      const copy = await money.creditNote(chargebeeId)
      if (!copy) throw new ProviderError(`Chargebee does not know the credit note ${chargebeeId}`)
      if (copy.type === 'adjustment' || (copy.amount_available ?? 0) <= 0 || copy.status === 'voided') {
        throw new Conflict('Only a refundable credit note with an amount available can be refunded')
      }
      const answer = await money.refundCreditNote(copy, input)
      await ledger.applyCreditNote(trx, owner, answer.credit_note, at)
    },

    /** The customer's promotional credits up or down; its balances as Chargebee now has them. */
    async promotionalCredits(
      owner: LedgerOwner,
      input: { type: 'add' | 'deduct'; amount: number; description: string; currencyCode: string },
    ) {
      const before = await money.customerBalances(owner.companyId)
      if (!before) throw new ProviderError(`Chargebee does not know the customer ${owner.companyId}`)
      if (input.type === 'deduct' && input.amount > (before.promotional_credits ?? 0)) {
        throw new ValidationError(
          `body/amount must not exceed the customer's promotional_credits (${before.promotional_credits ?? 0})`,
        )
      }
      const { customer } = await money.promotionalCredits(before, {
        type: input.type,
        amount: input.amount,
        description: input.description,
        currency_code: input.currencyCode,
      })
      return {
        promotional_credits: customer.promotional_credits ?? 0,
        refundable_credits: customer.refundable_credits ?? 0,
        excess_payments: customer.excess_payments ?? 0,
      }
    },

    /** A one-off charge: invoiced now (its invoice's id, ours) or added to the next renewal (null). */
    async charge(
      trx: Executor,
      owner: LedgerOwner,
      input: { amount: number; description: string; currencyCode: string; invoiceImmediately: boolean },
      at: Date,
    ): Promise<string | null> {
      const charge = { amount: input.amount, description: input.description }
      if (!input.invoiceImmediately) {
        await money.chargeAtTermEnd(owner.subscriptionId, charge)
        return null
      }
      const { invoice } = await money.chargeNow(owner.companyId, owner.subscriptionId, {
        ...charge,
        currency_code: input.currencyCode,
      })
      await ledger.applyInvoice(trx, owner, invoice, at)
      return invoiceId(invoice)
    },
  }
}

export type ChargebeeMoneyPort = ReturnType<typeof createChargebeeMoneyPort>

const noteId = (note: CbCreditNote) => ledgerId('credit_note', note.id)
const invoiceId = (invoice: { id: string }) => ledgerId('invoice', invoice.id)
