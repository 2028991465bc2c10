import { invoiceView } from '../invoices/index.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'
import type { ChargeBody, ChargeResult } from './charges.schemas.ts'

/** One-off charges (decisions §9.2), for platform clients: invoiced now or at the next renewal. */
export function createChargesService(deps: { subscriptions: Pick<SubscriptionsService, 'oneOffCharge'> }) {
  return {
    async create(companyId: string, body: ChargeBody): Promise<ChargeResult> {
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
