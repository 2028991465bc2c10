import { randomUUID } from 'node:crypto'
import type { Clock } from '../../core/clock.ts'
import type { InvoiceRow, SubscriptionRow } from '../../db/tables.ts'
import { Conflict } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { chargesInvoice } from '../billing/index.ts'
import { creditsToApply, type Ledger } from '../invoices/index.ts'
import type { Pricing } from './subscriptions.pricing.ts'
import type { SubscriptionSteps } from './subscriptions.steps.ts'
import type { createSubscriptionJobs } from './subscriptions.jobs.ts'
import { nextBillingAt } from './subscriptions.views.ts'
import { writeEvent } from '../events/outbox.ts'

export interface PromotionalCreditsRequest {
  type: 'add' | 'deduct'
  amount: number
  description: string
}

export interface ChargeRequest {
  amount: number
  description: string
  invoiceImmediately: boolean
}

/** A charge's refusal (409) whoever bills it: none on a cancelled subscription, none deferred with no renewal. */
export function checkCharge(
  s: { status: string; renews: boolean; cancelScheduled: boolean },
  invoiceImmediately: boolean,
) {
  if (s.status === 'cancelled') throw new Conflict('The subscription is cancelled: it takes no more charges')
  if (!invoiceImmediately && !s.renews) {
    throw new Conflict(
      `The subscription is ${s.status}${s.cancelScheduled ? ', set to cancel at the term end,' : ''} ` +
        'with no renewal to add the charge to: invoice it immediately',
    )
  }
}

/**
 * The customer's money on the local engine (decisions §9.2): promotional credits and one-off
 * charges, each under the subscription's lock so the next invoice sees a settled balance. A
 * subscription managed elsewhere answers 409: its provider keeps these.
 */
export function createSubscriptionMoney(deps: {
  clock: Clock
  pricing: Pick<Pricing, 'current' | 'tax'>
  ledger: Pick<Ledger, 'credits' | 'addCharge' | 'changePromotionalCredits'>
  steps: Pick<SubscriptionSteps, 'change' | 'customerOf' | 'details'>
  bill: ReturnType<typeof createSubscriptionJobs>['bill']
}) {
  const { clock, pricing, ledger, steps, bill } = deps

  function onLocal<T>(companyId: string, fn: (trx: Executor, s: SubscriptionRow, currency: string) => Promise<T>) {
    return steps.change(companyId, undefined, async (trx, s) => {
      if (s.provider !== 'local') {
        throw new Conflict(
          `The company's subscription is managed by ${s.provider}: its credits and charges are kept there`,
        )
      }
      return fn(trx, s, (await pricing.current(trx, s)).plan.currency_code)
    })
  }

  return {
    /**
     * In the plan's currency; answers the customer's credits after the change. Its event's object is
     * the details' `customer`, as GET .../details answers it.
     */
    promotionalCredits: (companyId: string, request: PromotionalCreditsRequest) =>
      onLocal(companyId, async (trx, s, currency) => {
        const change = { ...request, currency }
        const { before, after } = await ledger.changePromotionalCredits(trx, companyId, change, clock.now())
        await writeEvent(trx, {
          type: 'customer.promotional_credits_changed',
          companyId,
          object: (await steps.details(trx, s)).customer,
          previousAttributes: { promotional_credits: before.promotional_credits },
        })
        return after
      }),

    /** The invoice made now (charged to the card, dunning if it fails), or null when it waits for the renewal. */
    oneOffCharge: (companyId: string, request: ChargeRequest): Promise<InvoiceRow | null> =>
      onLocal(companyId, async (trx, s, currency) => {
        const terms = { status: s.status, renews: nextBillingAt(s) !== null, cancelScheduled: !!s.cancel_scheduled_at }
        checkCharge(terms, request.invoiceImmediately)
        const now = clock.now()
        const charge = { id: randomUUID(), description: request.description, amount: request.amount }
        let invoice: InvoiceRow | null = null
        if (request.invoiceImmediately) {
          const held = await ledger.credits(trx, companyId, currency)
          const tax = pricing.tax(await steps.customerOf(trx, companyId))
          const figures = chargesInvoice([charge], tax, currency, {
            promotional: held.promotional_credits,
            credit: creditsToApply(held),
          })
          invoice = await bill(trx, s, {
            kind: 'charge',
            invoice: figures,
            date: now,
            periodStart: now,
            periodEnd: now,
          })
        }
        await ledger.addCharge(
          trx,
          companyId,
          { ...charge, subscriptionId: s.id, currency, invoiceId: invoice?.id ?? null },
          now,
        )
        return invoice
      }),
  }
}
