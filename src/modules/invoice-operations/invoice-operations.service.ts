import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import { ValidationError } from '../../core/errors.ts'
import type { CreditNoteRow, DB, InvoiceRow } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import type { InvoicesService } from '../invoices/index.ts'
import { creditNoteView, invoiceView } from '../invoices/index.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'
import { type InvoiceOperationsPort, type Owner, providerGate } from './invoice-operations.provider.ts'
import type {
  CreateCreditNoteBody,
  RecordPaymentBody,
  RefundBody,
  RefundCreditNoteBody,
  VoidBody,
  WriteOffBody,
} from './invoice-operations.schemas.ts'

type LocalWork<T> = (trx: Executor, now: Date) => Promise<T>
type ChargebeeWork<T> = (port: InvoiceOperationsPort, trx: Executor, owner: Owner, now: Date) => Promise<T>

/**
 * Money operations (decisions §9.2) for platform clients: an invoice's offline payment, void, write-off, refund;
 * manual credit notes and their refunds. The local ledger holds their rules; on a Chargebee subscription Chargebee
 * applies them (the port). Each runs in a transaction, checked against the subscription and the business clock.
 */
export function createInvoiceOperationsService(deps: {
  db: Kysely<DB>
  ledger: Pick<
    InvoicesService,
    | 'recordPayment'
    | 'voidInvoice'
    | 'writeOff'
    | 'refundInvoice'
    | 'createCreditNote'
    | 'refundCreditNote'
    | 'invoice'
    | 'findCreditNote'
  >
  subscriptions: Pick<SubscriptionsService, 'billedBy'>
  clock: Clock
  chargebee?: InvoiceOperationsPort
}) {
  const { db, ledger, clock } = deps
  const performer = providerGate(deps.subscriptions, deps.chargebee)

  /**
   * An operation by whichever provider bills the company: the local engine's answer, or, once
   * Chargebee's answer is in the mirror, the mirror's (`read`, given what the port returned).
   */
  async function performed<T, R>(
    companyId: string,
    local: LocalWork<T>,
    remote: ChargebeeWork<R>,
    read: (result: R) => Promise<T>,
  ) {
    const by = await performer(companyId)
    const now = clock.now()
    if (by.kind === 'local') return db.transaction().execute((trx) => local(trx, now))
    return read(await db.transaction().execute((trx) => remote(by.port, trx, by.owner, now)))
  }

  /** An operation on one invoice; the invoice as it now is. */
  const onInvoice = async (
    companyId: string,
    invoiceId: string,
    local: LocalWork<InvoiceRow>,
    remote: ChargebeeWork<unknown>,
  ) => {
    const view = (row: InvoiceRow) => invoiceView(row)
    const read = () => ledger.invoice(companyId, invoiceId)
    return performed(companyId, async (trx, now) => view(await local(trx, now)), remote, read)
  }

  /** An operation making or changing a credit note; the note as it now is. */
  const onNote = (companyId: string, local: LocalWork<CreditNoteRow>, remote: ChargebeeWork<string>) =>
    performed(
      companyId,
      async (trx, now) => creditNoteView(await local(trx, now)),
      remote,
      (id) => ledger.findCreditNote(companyId, id),
    )

  function paymentDate(body: RecordPaymentBody, now: Date) {
    const date = body.date === undefined ? now : new Date(body.date * 1000)
    if (date.getTime() > now.getTime()) {
      throw new ValidationError(`body/date must not be in the future (now is ${Math.floor(now.getTime() / 1000)})`)
    }
    return date
  }

  return {
    /** Partial, full or beyond what is due; the invoice as it now is. */
    recordPayment: (companyId: string, invoiceId: string, body: RecordPaymentBody) =>
      onInvoice(
        companyId,
        invoiceId,
        (trx, now) =>
          ledger.recordPayment(trx, companyId, invoiceId, {
            amount: body.amount,
            paymentMethod: body.payment_method,
            reference: body.reference ?? null,
            date: paymentDate(body, now),
          }),
        (port, trx, owner, now) => {
          const payment = {
            amount: body.amount,
            payment_method: body.payment_method,
            reference: body.reference ?? null,
            date: Math.floor(paymentDate(body, now).getTime() / 1000),
          }
          return port.recordPayment(trx, owner, invoiceId, payment, now)
        },
      ),

    voidInvoice: (companyId: string, invoiceId: string, body: VoidBody) => {
      const input = { reasonCode: body.reason_code ?? null, ...(body.comment ? { comment: body.comment } : {}) }
      return onInvoice(
        companyId,
        invoiceId,
        (trx, now) => ledger.voidInvoice(trx, companyId, invoiceId, input, now),
        (port, trx, owner, now) => port.voidInvoice(trx, owner, invoiceId, input, now),
      )
    },

    writeOff: (companyId: string, invoiceId: string, body: WriteOffBody) => {
      const input = body.comment ? { comment: body.comment } : {}
      return onInvoice(
        companyId,
        invoiceId,
        (trx, now) => ledger.writeOff(trx, companyId, invoiceId, input, now),
        (port, trx, owner, now) => port.writeOff(trx, owner, invoiceId, input, now),
      )
    },

    /** A paid invoice's payment given back, all that is left by default. */
    refund: async (companyId: string, invoiceId: string, body: RefundBody) => {
      const input = {
        reasonCode: body.reason_code,
        ...(body.amount !== undefined ? { amount: body.amount } : {}),
        ...(body.comment ? { comment: body.comment } : {}),
      }
      return onInvoice(
        companyId,
        invoiceId,
        (trx, now) => ledger.refundInvoice(trx, companyId, invoiceId, input, now),
        (port, trx, owner, now) =>
          port.refundInvoice(trx, owner, invoiceId, { ...input, amount: input.amount ?? null }, now),
      )
    },

    /** The new credit note. */
    createCreditNote: (companyId: string, body: CreateCreditNoteBody) => {
      const input = {
        referenceInvoiceId: body.reference_invoice_id.toLowerCase(),
        type: body.type,
        total: body.total,
        reasonCode: body.reason_code,
        description: body.description ?? null,
      }
      return onNote(
        companyId,
        (trx, now) => ledger.createCreditNote(trx, companyId, input, now),
        (port, trx, owner, now) =>
          port.createCreditNote(trx, owner, { ...input, description: input.description ?? undefined }, now),
      )
    },

    refundCreditNote: (companyId: string, creditNoteId: string, body: RefundCreditNoteBody) =>
      onNote(
        companyId,
        (trx, now) => ledger.refundCreditNote(trx, companyId, creditNoteId, body.amount, now),
        async (port, trx, owner, now) => {
          await port.refundCreditNote(trx, owner, creditNoteId, { amount: body.amount ?? null }, now)
          return creditNoteId
        },
      ),
  }
}

export type InvoiceOperationsService = ReturnType<typeof createInvoiceOperationsService>
