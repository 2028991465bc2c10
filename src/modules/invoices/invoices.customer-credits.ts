import { randomUUID } from 'node:crypto'
import type { ChargeRow, InvoiceRow } from '../../db/tables.ts'
import { ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { promotionalCreditsTaken, unixSeconds, type Discount } from '../billing/index.ts'
import { writeEvent } from '../events/outbox.ts'
import type { InvoicesRepository } from './invoices.repository.ts'

/** A customer's credits in one currency, in minor units (the details' `customer` and POST .../promotional_credits). */
export interface CustomerCredits {
  promotional_credits: number
  refundable_credits: number
  excess_payments: number
  currency_code: string
}

export interface PromotionalCreditChange {
  type: 'add' | 'deduct'
  amount: number
  description: string
  currency: string
}

export interface NewCharge {
  id: string
  subscriptionId: string
  amount: number
  description: string
  currency: string
  invoiceId: string | null
}

export const chargeView = (row: ChargeRow) => ({
  id: row.id,
  subscription_id: row.subscription_id,
  amount: row.amount,
  description: row.description,
  currency_code: row.currency_code,
  invoice_id: row.invoice_id,
  date: unixSeconds(row.date)!,
})
export type ChargeView = ReturnType<typeof chargeView>

/**
 * The customer's credits and one-off charges in the ledger (decisions §9.2): promotional credits, each counting
 * only toward invoices in its currency, are taken by an invoice and given back by its void; charges are billed now
 * or at the next renewal. Callers hold the subscription's lock, so a balance read here is still true when written.
 */
export function createCustomerCredits(deps: { repo: InvoicesRepository }) {
  const { repo } = deps

  async function credits(executor: Executor, companyId: string, currency: string): Promise<CustomerCredits> {
    const [promotional, refundable, excess] = await Promise.all([
      repo.promotionalBalance(executor, companyId, currency),
      repo.refundableBalance(executor, companyId, currency),
      repo.excessBalance(executor, companyId, currency),
    ])
    return {
      promotional_credits: promotional,
      refundable_credits: refundable,
      excess_payments: excess,
      currency_code: currency,
    }
  }

  return {
    credits,

    /** Never below 0 (`400` naming body/amount); answers the credits before and after. */
    async changePromotionalCredits(trx: Executor, companyId: string, change: PromotionalCreditChange, at: Date) {
      const before = await credits(trx, companyId, change.currency)
      if (change.type === 'deduct' && change.amount > before.promotional_credits) {
        throw new ValidationError(
          `body/amount must not exceed the promotional credits left (${before.promotional_credits} ` +
            `${change.currency} minor units)`,
        )
      }
      await repo.insertPromotionalCredit(trx, {
        company_id: companyId,
        id: randomUUID(),
        type: change.type === 'add' ? 'increment' : 'decrement',
        amount: change.amount,
        currency_code: change.currency,
        description: change.description,
        invoice_id: null,
        date: at,
      })
      return { before, after: await credits(trx, companyId, change.currency) }
    },

    /** Records the promotional credits a new invoice took (its discount entry). */
    async takePromotionalCredits(
      trx: Executor,
      invoice: Pick<InvoiceRow, 'company_id' | 'id' | 'currency_code'>,
      discounts: Discount[],
      at: Date,
    ) {
      const taken = promotionalCreditsTaken(discounts)
      if (taken === 0) return
      const left = await repo.promotionalBalance(trx, invoice.company_id, invoice.currency_code)
      // The invoice was computed from this balance under the same lock: anything else is a bug.
      if (taken > left) throw new Error(`invoice ${invoice.id}: ${taken} promotional credits taken, ${left} held`)
      await repo.insertPromotionalCredit(trx, {
        company_id: invoice.company_id,
        id: randomUUID(),
        type: 'decrement',
        amount: taken,
        currency_code: invoice.currency_code,
        description: `Taken by invoice ${invoice.id}`,
        invoice_id: invoice.id,
        date: at,
      })
    },

    /** A voided invoice gives back what it took. */
    async releasePromotionalCredits(trx: Executor, invoice: InvoiceRow, at: Date) {
      const taken = await repo.promotionalTakenBy(trx, invoice.company_id, invoice.id)
      if (taken <= 0) return
      await repo.insertPromotionalCredit(trx, {
        company_id: invoice.company_id,
        id: randomUUID(),
        type: 'increment',
        amount: taken,
        currency_code: invoice.currency_code,
        description: `Given back by the void of invoice ${invoice.id}`,
        invoice_id: invoice.id,
        date: at,
      })
    },

    /** A one-off charge; event charge.created. */
    async addCharge(trx: Executor, companyId: string, charge: NewCharge, at: Date): Promise<ChargeView> {
      const row = await repo.insertCharge(trx, {
        company_id: companyId,
        id: charge.id,
        subscription_id: charge.subscriptionId,
        amount: charge.amount,
        description: charge.description,
        currency_code: charge.currency,
        invoice_id: charge.invoiceId,
        date: at,
      })
      const view = chargeView(row)
      await writeEvent(trx, { type: 'charge.created', companyId, object: view })
      return view
    },

    /** What the subscription's next renewal invoice bills, oldest first. */
    unbilledCharges: (executor: Executor, companyId: string, subscriptionId: string, currency: string) =>
      repo.unbilledCharges(executor, companyId, subscriptionId, currency),
  }
}

export type CustomerCreditsLedger = ReturnType<typeof createCustomerCredits>
