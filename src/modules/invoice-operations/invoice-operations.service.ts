import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import { Conflict, ValidationError } from '../../core/errors.ts'
import type { DB, InvoiceRow } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import type { InvoicesService } from '../invoices/index.ts'
import { invoiceView } from '../invoices/index.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'
import type { RecordPaymentBody, VoidBody, WriteOffBody } from './invoice-operations.schemas.ts'

/**
 * Money operations on one invoice (decisions §9.2), for platform clients: an offline payment, a
 * void, a write-off. The ledger holds the rules of each; this service checks what the request
 * says against the company's subscription and the business clock, and runs each in a transaction.
 */
export function createInvoiceOperationsService(deps: {
  db: Kysely<DB>
  ledger: Pick<InvoicesService, 'recordPayment' | 'voidInvoice' | 'writeOff'>
  subscriptions: Pick<SubscriptionsService, 'details'>
  clock: Clock
}) {
  const { db, ledger, clock } = deps

  /** 404 without a subscription; Chargebee's invoices are settled at Chargebee (docs/billing.md). */
  async function onLocalEngine(companyId: string) {
    const { subscription } = await deps.subscriptions.details(companyId)
    if (subscription.provider !== 'local') {
      throw new Conflict(
        `The company's subscription is managed by ${subscription.provider}: ` +
          'its invoices are settled there, not through this service',
      )
    }
  }

  async function run(companyId: string, work: (trx: Executor, now: Date) => Promise<InvoiceRow>) {
    await onLocalEngine(companyId)
    const now = clock.now()
    return invoiceView(await db.transaction().execute((trx) => work(trx, now)))
  }

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
  }
}

export type InvoiceOperationsService = ReturnType<typeof createInvoiceOperationsService>
