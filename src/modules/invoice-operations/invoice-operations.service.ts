import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import { ValidationError } from '../../core/errors.ts'
import type { CreditNoteRow, DB, InvoiceRow } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import type { InvoicesService } from '../invoices/index.ts'
import { creditNoteView, invoiceView } from '../invoices/index.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'
import { localEngineGate } from './invoice-operations.provider.ts'
import type {
  CreateCreditNoteBody,
  RecordPaymentBody,
  RefundBody,
  RefundCreditNoteBody,
  VoidBody,
  WriteOffBody,
} from './invoice-operations.schemas.ts'

/**
 * Money operations (decisions §9.2), for platform clients: on one invoice an offline payment, a
 * void, a write-off, a refund; manual credit notes and their refunds. The ledger holds the rules of
 * each; this service checks what the request says against the company's subscription and the
 * business clock, and runs each in a transaction.
 */
export function createInvoiceOperationsService(deps: {
  db: Kysely<DB>
  ledger: Pick<
    InvoicesService,
    'recordPayment' | 'voidInvoice' | 'writeOff' | 'refundInvoice' | 'createCreditNote' | 'refundCreditNote'
  >
  subscriptions: Pick<SubscriptionsService, 'provider'>
  clock: Clock
}) {
  const { db, ledger, clock } = deps
  const onLocalEngine = localEngineGate(deps.subscriptions)

  async function transact<T>(companyId: string, work: (trx: Executor, now: Date) => Promise<T>) {
    await onLocalEngine(companyId)
    const now = clock.now()
    return db.transaction().execute((trx) => work(trx, now))
  }

  const run = async (companyId: string, work: (trx: Executor, now: Date) => Promise<InvoiceRow>) =>
    invoiceView(await transact(companyId, work))
  const runOnNote = async (companyId: string, work: (trx: Executor, now: Date) => Promise<CreditNoteRow>) =>
    creditNoteView(await transact(companyId, work))

  return {
    /** Partial, full or beyond what is due; the invoice as it now is. */
    recordPayment: (companyId: string, invoiceId: string, body: RecordPaymentBody) =>
      run(companyId, (trx, now) => {
        const date = body.date === undefined ? now : new Date(body.date * 1000)
        if (date.getTime() > now.getTime()) {
          throw new ValidationError(`body/date must not be in the future (now is ${Math.floor(now.getTime() / 1000)})`)
        }
        return ledger.recordPayment(trx, companyId, invoiceId, {
          amount: body.amount,
          paymentMethod: body.payment_method,
          reference: body.reference ?? null,
          date,
        })
      }),

    voidInvoice: (companyId: string, invoiceId: string, body: VoidBody) =>
      run(companyId, (trx, now) => {
        const input = { reasonCode: body.reason_code ?? null, ...(body.comment ? { comment: body.comment } : {}) }
        return ledger.voidInvoice(trx, companyId, invoiceId, input, now)
      }),

    writeOff: (companyId: string, invoiceId: string, body: WriteOffBody) =>
      run(companyId, (trx, now) =>
        ledger.writeOff(trx, companyId, invoiceId, body.comment ? { comment: body.comment } : {}, now),
      ),

    /** A paid invoice's payment given back, all that is left by default. */
    refund: (companyId: string, invoiceId: string, body: RefundBody) =>
      run(companyId, (trx, now) =>
        ledger.refundInvoice(
          trx,
          companyId,
          invoiceId,
          {
            reasonCode: body.reason_code,
            ...(body.amount !== undefined ? { amount: body.amount } : {}),
            ...(body.comment ? { comment: body.comment } : {}),
          },
          now,
        ),
      ),

    /** The new credit note. */
    createCreditNote: (companyId: string, body: CreateCreditNoteBody) =>
      runOnNote(companyId, (trx, now) =>
        ledger.createCreditNote(
          trx,
          companyId,
          {
            referenceInvoiceId: body.reference_invoice_id.toLowerCase(),
            type: body.type,
            total: body.total,
            reasonCode: body.reason_code,
            description: body.description ?? null,
          },
          now,
        ),
      ),

    refundCreditNote: (companyId: string, creditNoteId: string, body: RefundCreditNoteBody) =>
      runOnNote(companyId, (trx, now) => ledger.refundCreditNote(trx, companyId, creditNoteId, body.amount, now)),
  }
}

export type InvoiceOperationsService = ReturnType<typeof createInvoiceOperationsService>
