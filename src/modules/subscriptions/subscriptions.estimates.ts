import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import type { DB, SubscriptionRow } from '../../db/tables.ts'
import { Conflict, NotFound, Unauthorized, ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { todayIn } from '../../core/days.ts'
import {
  invoiceFor,
  WHOLE,
  type Estimate,
  type InvoiceEstimate,
  usageFromJson,
  usageOf,
  transitions,
  type ChangeRequest,
  type ProviderRegistry,
  unixSeconds,
} from '../billing/index.ts'
import { addonChoices, missingFromCatalogue, type Pricing, type WantedSelection } from './subscriptions.pricing.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import type { EstimateQuery } from './subscriptions.schemas.ts'
import type { SubscriptionCustomer, SubscriptionSteps } from './subscriptions.steps.ts'
import type { createRemoteChanges } from './subscriptions.remote-changes.ts'
import { nextBillingAt } from './subscriptions.views.ts'
import { creditsToApply, type Ledger } from '../invoices/index.ts'

/**
 * What a subscription would cost: a change's estimate, a new subscription's, and the portal's next
 * charge. `priceChange` is shared with update, so an estimate is exactly what update applies.
 */
export function createSubscriptionEstimates(deps: {
  db: Kysely<DB>
  repo: Pick<SubscriptionsRepository, 'findByCompany' | 'findProduct' | 'redemptionUsage'>
  clock: Clock
  providers: ProviderRegistry
  pricing: Pick<Pricing, 'selection' | 'current' | 'tax'>
  ledger: Pick<Ledger, 'credits' | 'termInvoice' | 'unbilledCharges'>
  trialDays: number
  steps: Pick<SubscriptionSteps, 'customerOf'>
  known: ReturnType<typeof createRemoteChanges>['known']
}) {
  const { db, repo, clock, providers, pricing, ledger, known } = deps
  const { customerOf } = deps.steps

  async function priceChange(
    executor: Executor,
    s: SubscriptionRow,
    wanted: WantedSelection,
    field: (name: string) => string,
  ): Promise<{ change: ChangeRequest; today: string }> {
    const product = await repo.findProduct(executor, s.product_sku)
    if (!product) throw missingFromCatalogue(s, 'product', s.product_sku)
    const customer = await customerOf(executor, s.company_id)
    const now = clock.now()
    const today = todayIn(customer.timezone, now)
    const current = await pricing.current(executor, s)
    const selection = await pricing.selection(executor, wanted, {
      product,
      current: {
        plan: s.plan_sku,
        currency: current.plan.currency_code,
        coupon: s.coupon_code,
        companyId: s.company_id,
      },
      today,
      field,
    })
    const coupon = selection.coupon
    const couponHistory =
      coupon && coupon.code !== s.coupon_code
        ? usageFromJson(await repo.redemptionUsage(executor, coupon.id, s.company_id))
        : null
    const [customerCredits, termInvoice] = await Promise.all([
      ledger.credits(executor, s.company_id, selection.plan.currency_code),
      ledger.termInvoice(executor, s),
    ])
    const credits = creditsToApply(customerCredits)
    return {
      change: {
        selection,
        current,
        tax: pricing.tax(customer),
        currency: selection.plan.currency_code,
        now,
        couponHistory,
        credits,
        promotionalCredits: customerCredits.promotional_credits,
        termInvoice: termInvoice ?? null,
      },
      today,
    }
  }

  /**
   * A new subscription on the query's choice: a trial from now, then the first full term's invoice.
   * Local arithmetic whatever the provider; the company gives only the VAT country and time zone.
   */
  async function newSubscriptionEstimate(ref: string, query: EstimateQuery): Promise<{ estimate: Estimate }> {
    const s = await repo.findByCompany(db, query.company_id)
    if (!s || (ref !== s.id && ref !== s.company_id)) throw new NotFound('Subscription')
    const field = (name: string) => `querystring/${name}`
    const product = await repo.findProduct(db, query.product_sku)
    if (!product) throw new ValidationError(`${field('product_sku')} names an unknown product: ${query.product_sku}`)
    const customer = await customerOf(db, query.company_id)
    const now = clock.now()
    const wanted: WantedSelection = {
      planSku: query.subscription_plan,
      quantity: query.plan_quantity,
      addons: addonChoices(query.addons ?? [], field('addons')),
      couponCode: query.coupon_code || null,
    }
    const selection = await pricing.selection(db, wanted, {
      product,
      current: null,
      today: todayIn(customer.timezone, now),
      field,
    })
    const trialEnd = new Date(now.getTime() + deps.trialDays * 86_400_000)
    return {
      estimate: {
        subscription_estimate: { status: 'in_trial', next_billing_at: unixSeconds(trialEnd) },
        invoice_estimate: invoiceFor(selection, WHOLE, pricing.tax(customer), selection.plan.currency_code),
      },
    }
  }

  async function estimate(ref: string, query: EstimateQuery, tenant: string | null): Promise<{ estimate: Estimate }> {
    if (tenant !== null && tenant !== query.company_id) throw new NotFound('Company')
    const s = await repo.findByCompany(db, query.company_id)
    if (!s || (ref !== s.id && ref !== s.company_id)) throw new NotFound('Subscription')
    const field = (name: string) => `querystring/${name}`
    if (query.product_sku !== s.product_sku) {
      const known = await repo.findProduct(db, query.product_sku)
      throw new ValidationError(
        known
          ? `${field('product_sku')} must be the subscription's product, ${s.product_sku}`
          : `${field('product_sku')} names an unknown product: ${query.product_sku}`,
      )
    }
    const refusal = transitions.changeRefusal(s)
    if (refusal) throw new Conflict(refusal)
    const own = await known(db, s)
    const wanted: WantedSelection = {
      planSku: query.subscription_plan,
      quantity: query.plan_quantity,
      addons: query.addons ? addonChoices(query.addons, field('addons'), own.addons) : own.addons,
      couponCode: query.coupon_code === undefined ? own.couponCode : query.coupon_code || null,
    }
    const { change: request } = await priceChange(db, s, wanted, field)
    return { estimate: await providers.get(s.provider).estimate(own.held, request) }
  }

  /**
   * The stored subscription is priced only for the company's own token or a platform token; anyone
   * else gets the query's choice priced as a new subscription.
   */
  async function estimateFor(
    ref: string,
    query: EstimateQuery,
    principal: { companyId: string | null } | null,
  ): Promise<{ estimate: Estimate }> {
    // Before any read, so anonymous estimates cannot test whether coupon codes exist.
    if (principal === null && query.coupon_code !== undefined)
      throw new Unauthorized('querystring/coupon_code needs a bearer token: an estimate without one prices no coupon')
    if (principal !== null && (principal.companyId === null || principal.companyId === query.company_id)) {
      return estimate(ref, query, principal.companyId)
    }
    return newSubscriptionEstimate(ref, query)
  }

  /** null when nothing will be charged. */
  async function nextCharge(
    executor: Executor,
    s: SubscriptionRow,
    customer: SubscriptionCustomer,
  ): Promise<{ at: number; invoice: InvoiceEstimate } | null> {
    const at = nextBillingAt(s)
    if (at === null) return null
    // The renewal bills a change scheduled for then.
    const current = await pricing.current(executor, transitions.withScheduledChange(s))
    const currency = current.plan.currency_code
    const [credits, charges] = await Promise.all([
      ledger.credits(executor, s.company_id, currency),
      ledger.unbilledCharges(executor, s.company_id, s.id, currency),
    ])
    const period = { periodStart: new Date(at * 1000), usage: usageOf(s) }
    const extras = { charges, promotionalCredits: credits.promotional_credits }
    return {
      at,
      invoice: invoiceFor(current, WHOLE, pricing.tax(customer), currency, creditsToApply(credits), period, extras),
    }
  }

  return { priceChange, estimate, estimateFor, nextCharge }
}
