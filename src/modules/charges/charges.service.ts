import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import { Conflict } from '../../core/errors.ts'
import type { DB } from '../../db/tables.ts'
import type { ChargebeeMoneyPort } from '../chargebee/index.ts'
import { type InvoicesService, invoiceView } from '../invoices/index.ts'
import { checkCharge, type SubscriptionsService } from '../subscriptions/index.ts'
import type { ChargeBody, ChargeResult } from './charges.schemas.ts'

/**
 * One-off charges (decisions §9.2), for platform clients: invoiced now or at the next renewal, by
 * the local engine or by Chargebee on its subscriptions (the port); an invoice made is answered as mirrored.
 */
export function createChargesService(deps: {
  subscriptions: Pick<SubscriptionsService, 'oneOffCharge' | 'billedBy'>
  invoices: Pick<InvoicesService, 'invoice'>
  db: Kysely<DB>
  clock: Clock
  chargebee?: Pick<ChargebeeMoneyPort, 'charge'>
}) {
  return {
    async create(companyId: string, body: ChargeBody): Promise<ChargeResult> {
      const billed = await deps.subscriptions.billedBy(companyId)
      const port = deps.chargebee
      if (billed.provider === 'chargebee' && port) {
        checkCharge(billed, body.invoice_immediately)
        const currencyCode = billed.currencyCode
        if (!currencyCode) throw new Conflict("The subscription's plan is not in the catalogue")
        const owner = { companyId, subscriptionId: billed.subscriptionId }
        const input = {
          amount: body.amount,
          description: body.description,
          currencyCode,
          invoiceImmediately: body.invoice_immediately,
        }
        const id = await deps.db.transaction().execute((trx) => port.charge(trx, owner, input, deps.clock.now()))
        return { invoice: id ? await deps.invoices.invoice(companyId, id) : null }
      }
      const invoice = await deps.subscriptions.oneOffCharge(companyId, {
        amount: body.amount,
        description: body.description,
        invoiceImmediately: body.invoice_immediately,
      })
      return { invoice: invoice ? invoiceView(invoice) : null }
    },
  }
}

export type ChargesService = ReturnType<typeof createChargesService>
