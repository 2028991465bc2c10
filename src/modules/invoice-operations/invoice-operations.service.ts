import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import { Conflict, ValidationError } from '../../core/errors.ts'
import type { DB, InvoiceRow } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import type { InvoicesService } from '../invoices/index.ts'
import { invoiceView } from '../invoices/index.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'
import type { ChargebeeMoneyPort } from '../chargebee/index.ts'
import type { RecordPaymentBody, VoidBody, WriteOffBody } from './invoice-operations.schemas.ts'

type Owner = { companyId: string; subscriptionId: string }
type ChargebeeWork = (port: InvoiceOperationsPort, trx: Executor, owner: Owner, now: Date) => Promise<void>
type InvoiceOperationsPort = Pick<ChargebeeMoneyPort, 'recordPayment' | 'voidInvoice' | 'writeOff'>

/**
 * Money operations on one invoice (decisions §9.2), for platform clients: an offline payment, a void, a
 * write-off, each in a transaction, checked against the subscription and the business clock. The local
 * engine's ledger holds their rules; on a Chargebee subscription Chargebee applies them (the port).
 */
export function createInvoiceOperationsService(deps: {
  db: Kysely<DB>
  ledger: Pick<InvoicesService, 'recordPayment' | 'voidInvoice' | 'writeOff' | 'invoice'>
  subscriptions: Pick<SubscriptionsService, 'details'>
  clock: Clock
  chargebee?: InvoiceOperationsPort
}) {
  const { db, ledger, clock } = deps

  /** 404 without a subscription; 409 on a provider this service cannot reach. */
  async function run(
    companyId: string,
    invoiceId: string,
    local: (trx: Executor, now: Date) => Promise<InvoiceRow>,
    chargebee: ChargebeeWork,
  ) {
    const { subscription } = await deps.subscriptions.details(companyId)
    const now = clock.now()
    if (subscription.provider === 'local') {
      return invoiceView(await db.transaction().execute((trx) => local(trx, now)))
    }
    const port = subscription.provider === 'chargebee' ? deps.chargebee : undefined
    if (!port) {
      throw new Conflict(
        `The company's subscription is managed by ${subscription.provider}, which is not configured here`,
      )
    }
    const owner = { companyId, subscriptionId: subscription.id }
    await db.transaction().execute((trx) => chargebee(port, trx, owner, now))
    return ledger.invoice(companyId, invoiceId)
  }

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
      run(
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
      return run(
        companyId,
        invoiceId,
        (trx, now) => ledger.voidInvoice(trx, companyId, invoiceId, input, now),
        (port, trx, owner, now) => port.voidInvoice(trx, owner, invoiceId, input, now),
      )
    },

    writeOff: (companyId: string, invoiceId: string, body: WriteOffBody) => {
      const input = body.comment ? { comment: body.comment } : {}
      return run(
        companyId,
        invoiceId,
        (trx, now) => ledger.writeOff(trx, companyId, invoiceId, input, now),
        (port, trx, owner, now) => port.writeOff(trx, owner, invoiceId, input, now),
      )
    },
  }
}

export type InvoiceOperationsService = ReturnType<typeof createInvoiceOperationsService>
