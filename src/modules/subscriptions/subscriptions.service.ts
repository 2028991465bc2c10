import { uuidFromName } from '../../db/ids.ts'
import type { Kysely } from 'kysely'
import type { Clock } from '../../clock.ts'
import type { DB, PaymentSource, PlanRow, ProductRow, SubscriptionRow } from '../../db/tables.ts'
import { Conflict, NotFound, ValidationError } from '../../http/errors.ts'
import type { Executor, JobContext, Scheduler } from '../../jobs/scheduler.ts'
import { todayIn } from '../../days.ts'
import { couponDiscount, invoiceFor, WHOLE, type Estimate, type InvoiceEstimate } from './billing/estimate.ts'
import { afterInvoice, freshUsage, usageColumns, usageFromJson, usageOf, usageToJson } from './billing/coupons.ts'
import { vatTable } from './billing/vat.ts'
import * as lifecycle from './billing/lifecycle.ts'
import type { BillingCustomer, BillingProvider, ChangeRequest, HostedPageOptions, ProviderRegistry } from './billing/provider.ts'
import { createPricing, missingFromCatalogue, type WantedSelection } from './subscriptions.pricing.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import type { EstimateQuery, PaymentSourceInput, SubscriptionCancellationData, SubscriptionUpdate, UpdateResponse } from './subscriptions.schemas.ts'
import { detailsView, nextBillingAt, statusView } from './subscriptions.views.ts'
import { recordChange } from './subscriptions.events.ts'
import { createRemoteChanges } from './subscriptions.remote.ts'
import { cardFromBody } from './subscriptions.cards.ts'
import { unixSeconds } from './billing/terms.ts'
import { PAYMENT_RETRY_JOB, type Ledger, type RetryPayload } from '../invoices/invoices.service.ts'

export const TRIAL_END_JOB = 'subscription.trial_end'
export const TERM_END_JOB = 'subscription.term_end'

const SCHEDULER_ACTOR = 'scheduler'

/**
 * Company subscriptions over a billing provider port (the built-in `local` engine by default;
 * the product's subscription_manager names the provider). The service checks requests against
 * the catalogue and the lifecycle, asks the provider for the next state, and saves it with its
 * event in one transaction; the company's mirror fields are joined from that row at read time.
 */
export function createSubscriptionsService(deps: {
  db: Kysely<DB>
  repo: SubscriptionsRepository
  scheduler: Pick<Scheduler, 'schedule'>
  clock: Clock
  trialDays: number
  /** The billing providers by name (app.ts): always the local one, Chargebee when configured. */
  providers: ProviderRegistry
  /** VAT_RATES: entries over the built-in table (billing/vat.ts). */
  vatRates?: string
  /** SELLER_COUNTRY: where the seller is established, for reverse charge. */
  sellerCountry?: string
  currency?: string
  /** The local engine's invoices, credits and payments (src/modules/invoices). */
  ledger: Ledger
}) {
  const { db, repo, clock, providers, ledger } = deps
  const currency = deps.currency ?? 'EUR'
  const pricing = createPricing({ repo, vatRates: vatTable(deps.vatRates ?? ''), sellerCountry: deps.sellerCountry ?? 'IT' })

  /** Saves a provider's new state with its event, and schedules the end of its term when this service drives time. */
  async function save(trx: Executor, before: SubscriptionRow, after: SubscriptionRow, what: { event: string; actor: string; at: Date; details?: Record<string, unknown> }): Promise<boolean> {
    const provider = providers.get(before.provider)
    const saved = await recordChange(trx, repo, before, after, { ...what, now: clock.now() })
    if (saved && provider.drivesTime && (after.status === 'active' || after.status === 'non_renewing') && after.current_term_end) {
      const termEnd = after.current_term_end
      await deps.scheduler.schedule(trx, {
        kind: TERM_END_JOB, key: `${after.id}@${termEnd.toISOString()}`, runAt: termEnd, companyId: after.company_id,
        payload: { company_id: after.company_id, subscription_id: after.id, term_end: termEnd.toISOString() },
      })
    }
    return saved
  }

  /** The end of dunning: every retry of an invoice failed, the subscription is cancelled then (Chargebee's cancel_reason not_paid). */
  async function cancelForNonPayment(trx: Executor, s: SubscriptionRow, at: Date, invoiceId: string) {
    if (s.status === 'cancelled') return
    const next: SubscriptionRow = { ...s, status: 'cancelled', cancelled_at: at, cancel_scheduled_at: null, current_term_end: at, cancellation_reason: 'not_paid', cancellation_message: null }
    await save(trx, s, next, { event: 'cancelled', actor: SCHEDULER_ACTOR, at, details: { cause: 'not_paid', invoice_id: invoiceId } })
  }

  /** Bills a new term or a change in the ledger; an invoice left not_paid at once (no retries configured) cancels. */
  async function bill(trx: Executor, s: SubscriptionRow, input: Omit<Parameters<Ledger['bill']>[1], 'subscription'>) {
    const invoice = await ledger.bill(trx, { subscription: s, ...input })
    if (invoice.status === 'not_paid') await cancelForNonPayment(trx, s, input.date, invoice.id)
  }

  /** Runs a change on the company's subscription, locked for the transaction. */
  function change<T>(companyId: string, subscriptionId: string | undefined, fn: (trx: Executor, s: SubscriptionRow, provider: BillingProvider) => Promise<T>): Promise<T> {
    return db.transaction().execute(async (trx) => {
      const s = await repo.lockByCompany(trx, companyId)
      if (!s || (subscriptionId !== undefined && s.id !== subscriptionId)) throw new NotFound('Subscription')
      return fn(trx, s, providers.get(s.provider))
    })
  }

  const { remoteChange, known } = createRemoteChanges({ repo, change })

  async function customerOf(executor: Executor, companyId: string): Promise<BillingCustomer & { vat_number: string | null; timezone: string }> {
    const row = await repo.findCustomer(executor, companyId)
    if (!row) throw new NotFound('Company')
    return { id: companyId, company_id: companyId, name: row.name, email: row.billing_email, country: row.country, vat_number: row.vat_number, timezone: row.timezone }
  }

  /** Prices what is wanted against what is held: the one computation behind estimate (9) and update (6). */
  async function priceChange(executor: Executor, s: SubscriptionRow, wanted: WantedSelection, field: (name: string) => string): Promise<{ change: ChangeRequest; today: string }> {
    const product = await repo.findProduct(executor, s.product_sku)
    if (!product) throw missingFromCatalogue(s, 'product', s.product_sku)
    const customer = await customerOf(executor, s.company_id)
    const now = clock.now()
    const today = todayIn(customer.timezone, now)
    const selection = await pricing.selection(executor, wanted, { product, current: { plan: s.plan_sku, coupon: s.coupon_code, companyId: s.company_id }, today, field })
    const current = await pricing.current(executor, s)
    const coupon = selection.coupon
    const couponHistory = coupon && coupon.code !== s.coupon_code ? usageFromJson(await repo.redemptionUsage(executor, coupon.id, s.company_id)) : null
    const [{ refundable_credits: credits }, termTax] = await Promise.all([ledger.credits(executor, s.company_id), ledger.billedTax(executor, s)])
    return { change: { selection, current, tax: pricing.tax(customer), currency, now, couponHistory, credits, termTax }, today }
  }

  async function details(executor: Executor, s: SubscriptionRow, known?: Awaited<ReturnType<typeof customerOf>>) {
    const [plan, product, customer, credits] = await Promise.all([
      repo.findPlan(executor, s.plan_sku), repo.findProduct(executor, s.product_sku), known ?? customerOf(executor, s.company_id), ledger.credits(executor, s.company_id),
    ])
    if (!product) throw missingFromCatalogue(s, 'product', s.product_sku)
    if (!plan) throw missingFromCatalogue(s, 'plan', s.plan_sku)
    const { timezone: _, vat_number: __, ...billingCustomer } = customer
    return detailsView(s, plan, product, billingCustomer, currency, credits)
  }

  async function findOwn(companyId: string) {
    const s = await repo.findByCompany(db, companyId)
    if (!s) throw new NotFound('Subscription')
    return s
  }

  /** A time-driven transition, run by the scheduler inside the job's transaction. */
  async function advance(ctx: JobContext, which: 'trial_end' | 'term_end') {
    const s = await repo.lockByCompany(ctx.trx, String(ctx.payload.company_id))
    if (!s) return
    // A job about an earlier state (a trial cancelled now, a term replaced by a change) does nothing.
    if (which === 'trial_end' && s.id !== ctx.key) return
    if (which === 'term_end' && (s.id !== ctx.payload.subscription_id || s.current_term_end?.toISOString() !== ctx.payload.term_end)) return
    const provider = providers.get(s.provider)
    if (!provider.drivesTime) return
    const plan = await repo.findPlan(ctx.trx, s.plan_sku)
    if (!plan) throw new Error(`subscription ${s.id}: plan ${s.plan_sku} is missing from the catalogue`)
    const next = which === 'trial_end' ? provider.atTrialEnd?.(s, plan.period_unit) : provider.atTermEnd?.(s, plan.period_unit)
    if (!next) return
    const at = (which === 'trial_end' ? s.trial_end : s.current_term_end)!
    const event = next.status === 'cancelled' ? 'cancelled' : which === 'trial_end' ? 'activated' : 'renewed'
    let invoice
    let state = next
    if (next.status === 'active') {
      // The new term's invoice: the estimate's arithmetic, less the customer's credits; the ledger collects it.
      const customer = await customerOf(ctx.trx, s.company_id)
      const selection = await pricing.current(ctx.trx, next)
      const period = { periodStart: next.current_term_start, usage: usageOf(next) }
      const { refundable_credits: credits } = await ledger.credits(ctx.trx, s.company_id)
      invoice = invoiceFor(selection, WHOLE, pricing.tax(customer), currency, credits, period)
      // The coupon discounted this period: counted (its duration runs on periods discounted).
      if (selection.coupon && next.current_term_start) {
        const used = couponDiscount(selection.coupon, invoice.line_items, period)
        state = { ...next, ...usageColumns(afterInvoice(selection.coupon, period.usage, next.current_term_start, used.amount, used.taken)) }
      }
    }
    await save(ctx.trx, s, state, { event, actor: SCHEDULER_ACTOR, at, details: { cause: which, ...(invoice ? { invoice } : {}) } })
    if (invoice) {
      await bill(ctx.trx, state, { kind: which === 'trial_end' ? 'activation' : 'renewal', invoice, date: at, periodStart: state.current_term_start!, periodEnd: state.current_term_end! })
    }
  }

  /** A scheduled retry of a failed payment (the ledger decides; dunning exhausted cancels the subscription). */
  async function retryPayment(ctx: JobContext) {
    const payload = ctx.payload as unknown as RetryPayload
    const s = await repo.lockByCompany(ctx.trx, payload.company_id)
    if (!s) return
    const outcome = await ledger.retry(ctx.trx, s, payload, ctx.runAt)
    if (outcome === 'exhausted') await cancelForNonPayment(ctx.trx, s, ctx.runAt, payload.invoice_id)
  }

  /**
   * The estimate of a new subscription on the query's choice: a trial of `trialDays` from now,
   * then the first full term's invoice (no credit; the query's addons and coupon only, the
   * coupon checked as a new redemption). Local arithmetic, whatever the product's provider:
   * nothing about the stored subscription is read but that the path names it. The company's
   * country gives the VAT, its time zone the day a coupon's validity is checked on.
   */
  async function newSubscriptionEstimate(ref: string, query: EstimateQuery): Promise<{ estimate: Estimate }> {
    const s = await repo.findByCompany(db, query.company_id)
    if (!s || (ref !== s.id && ref !== s.company_id)) throw new NotFound('Subscription')
    const field = (name: string) => `querystring/${name}`
    const product = await repo.findProduct(db, query.product_sku)
    if (!product) throw new ValidationError(`${field('product_sku')} names an unknown product: ${query.product_sku}`)
    const customer = await customerOf(db, query.company_id)
    const now = clock.now()
    const wanted: WantedSelection = { planSku: query.subscription_plan, quantity: query.plan_quantity, addonIds: query.addons ?? [], couponCode: query.coupon_code || null }
    const selection = await pricing.selection(db, wanted, { product, current: null, today: todayIn(customer.timezone, now), field })
    const trialEnd = new Date(now.getTime() + deps.trialDays * 86_400_000)
    return {
      estimate: {
        subscription_estimate: { status: 'in_trial', next_billing_at: unixSeconds(trialEnd) },
        invoice_estimate: invoiceFor(selection, WHOLE, pricing.tax(customer), currency),
      },
    }
  }

  return {
    /** A new company's subscription: in trial on the product and plan, the trial's end scheduled. */
    async startTrial(trx: Executor, input: { companyId: string; product: ProductRow; plan: PlanRow; quantity: number; actor: string }) {
      const now = clock.now()
      const trialEnd = new Date(now.getTime() + deps.trialDays * 86_400_000)
      const provider = providers.get(input.product.subscription_manager)
      const draft: SubscriptionRow = {
        // Named by its company: a retried creation of the same company creates (at a provider: finds) the same subscription.
        company_id: input.companyId, id: uuidFromName(`subscription:${input.companyId}`), customer_id: input.companyId, provider: provider.name,
        product_sku: input.product.sku, plan_sku: input.plan.sku, plan_quantity: input.quantity, addons: [], coupon_code: null,
        status: 'in_trial', trial_start: now, trial_end: trialEnd, current_term_start: now, current_term_end: trialEnd,
        cancelled_at: null, cancel_scheduled_at: null, payment_source: null, billing_anchor_day: null,
        cancellation_reason: null, cancellation_message: null, ...usageColumns(freshUsage(null)), created_at: now, updated_at: now,
      }
      const created = await provider.createSubscription({ subscription: draft, customer: await customerOf(trx, input.companyId) })
      const subscription = await repo.insert(trx, {
        ...created, addons: JSON.stringify(created.addons), payment_source: JSON.stringify(created.payment_source),
        coupon_period_discounts: JSON.stringify(created.coupon_period_discounts),
      })
      await repo.insertEvent(trx, {
        company_id: input.companyId, subscription_id: subscription.id, event_type: 'created',
        from_status: null, to_status: subscription.status, actor: input.actor, occurred_at: now,
        details: JSON.stringify({ product_sku: input.product.sku, plan_sku: input.plan.sku, plan_quantity: input.quantity, trial_end: trialEnd.toISOString() }),
      })
      if (provider.drivesTime) {
        await deps.scheduler.schedule(trx, { kind: TRIAL_END_JOB, key: subscription.id, runAt: trialEnd, companyId: input.companyId, payload: { company_id: input.companyId } })
      }
      return subscription
    },

    /**
     * The company's creation failed after its provider may have created the customer and its
     * subscription (a remote provider): they are deleted there. If that fails too, the creation's
     * own error is still what the client gets, and the orphan stays at the provider (the
     * reconciliation walks our subscriptions: it does not find it).
     */
    async abandonTrial(companyId: string, product: ProductRow) {
      try {
        await providers.get(product.subscription_manager).abandonCustomer?.(companyId)
      } catch {
        // Left at the provider; the creation's own error is the answer.
      }
    },

    /** Registers the time-driven transitions with the scheduler. */
    registerJobs(scheduler: Pick<Scheduler, 'register'>) {
      scheduler.register(TRIAL_END_JOB, (ctx) => advance(ctx, 'trial_end'))
      scheduler.register(TERM_END_JOB, (ctx) => advance(ctx, 'term_end'))
      scheduler.register(PAYMENT_RETRY_JOB, retryPayment)
    },

    async details(companyId: string) {
      return details(db, await findOwn(companyId))
    },

    async status(companyId: string) {
      const s = await findOwn(companyId)
      return statusView(s, await repo.findPlan(db, s.plan_sku))
    },

    /**
     * Spec 2. `ref` is the company's id or its subscription's; `tenant` the token's company
     * (null for a platform client): another company's subscription is not found.
     */
    async cancel(ref: string, tenant: string | null, body: SubscriptionCancellationData | undefined, endOfTerm: boolean, actor: string) {
      const found = await repo.findByCompanyOrId(db, ref)
      if (!found || (tenant !== null && tenant !== found.company_id)) throw new NotFound('Subscription')
      const reason = { cancellation_reason: body?.cancellation_reason ?? null, cancellation_message: body?.cancellation_message ?? null }
      const event = endOfTerm ? 'cancellation_scheduled' : 'cancelled'
      await remoteChange(found.company_id, found.id, async (trx, s, provider, applied) => {
        const refusal = lifecycle.cancelRefusal(s, endOfTerm)
        if (refusal) throw new Conflict(refusal)
        const now = clock.now()
        const next = await provider.cancel(s, { endOfTerm, reason: reason.cancellation_reason, message: reason.cancellation_message }, now)
        applied()
        await save(trx, s, next, { event, actor, at: now })
      }, async (trx, s, provider) => {
        await save(trx, s, await provider.retrieve({ ...s, ...reason }), { event, actor, at: clock.now() })
      })
    },

    /** Spec 3: undoes a scheduled cancellation; 409 when none is scheduled. */
    async removeScheduledCancellation(companyId: string, subscriptionId: string, actor: string) {
      const event = 'scheduled_cancellation_removed'
      await remoteChange(companyId, subscriptionId, async (trx, s, provider, applied) => {
        const refusal = lifecycle.removalRefusal(s)
        if (refusal) throw new Conflict(refusal)
        const now = clock.now()
        const next = await provider.removeScheduledCancellation(s, now)
        applied()
        await save(trx, s, next, { event, actor, at: now })
      }, async (trx, s, provider) => {
        await save(trx, s, await provider.retrieve(s), { event, actor, at: clock.now() })
      })
    },

    /**
     * Spec 9 as the route calls it: the stored subscription (status, trial, coupon, addons,
     * credits) is priced only for the company's own token or a platform token; anyone else
     * (no token, another company's token) gets the query's choice priced from the catalogue as
     * a new subscription.
     */
    async estimateFor(ref: string, query: EstimateQuery, principal: { companyId: string | null } | null): Promise<{ estimate: Estimate }> {
      if (principal !== null && (principal.companyId === null || principal.companyId === query.company_id)) {
        return this.estimate(ref, query, principal.companyId)
      }
      return newSubscriptionEstimate(ref, query)
    },

    /** Spec 9: what a change would cost, computed exactly as update (6) applies it. */
    async estimate(ref: string, query: EstimateQuery, tenant: string | null): Promise<{ estimate: Estimate }> {
      if (tenant !== null && tenant !== query.company_id) throw new NotFound('Company')
      const s = await repo.findByCompany(db, query.company_id)
      if (!s || (ref !== s.id && ref !== s.company_id)) throw new NotFound('Subscription')
      const field = (name: string) => `querystring/${name}`
      if (query.product_sku !== s.product_sku) {
        const known = await repo.findProduct(db, query.product_sku)
        throw new ValidationError(known ? `${field('product_sku')} must be the subscription's product, ${s.product_sku}` : `${field('product_sku')} names an unknown product: ${query.product_sku}`)
      }
      const refusal = lifecycle.changeRefusal(s)
      if (refusal) throw new Conflict(refusal)
      const own = await known(db, s)
      const wanted: WantedSelection = {
        planSku: query.subscription_plan, quantity: query.plan_quantity,
        addonIds: query.addons ?? own.addonIds,
        couponCode: query.coupon_code === undefined ? own.couponCode : (query.coupon_code || null),
      }
      const { change: request } = await priceChange(db, s, wanted, field)
      return { estimate: await providers.get(s.provider).estimate(own.held, request) }
    },

    /** Spec 6: applies a change of plan, quantity, addons or coupon; answers the details (8) and the estimate it applied. */
    async update(companyId: string, subscriptionId: string, body: SubscriptionUpdate | undefined, actor: string): Promise<UpdateResponse> {
      let applied: { estimate: Estimate; couponCode: string | null; at: Date; today: string } | undefined
      return remoteChange(companyId, subscriptionId, async (trx, s, provider, markApplied) => {
        const refusal = lifecycle.changeRefusal(s)
        if (refusal) throw new Conflict(refusal)
        // A term not paid yet has no unused part to credit (a refundable credit would be money
        // never received): the due invoice is paid first, by a new card (payment_source), as
        // Chargebee's dunning expects. Checked before the provider is called.
        if (provider.drivesTime && (await ledger.hasUnpaid(trx, s))) {
          throw new Conflict('The subscription has an unpaid invoice (payment_due): pay it with a new card (PUT .../payment_source) before changing the subscription')
        }
        const own = await known(trx, s)
        const wanted: WantedSelection = {
          planSku: body?.subscription_plan ?? s.plan_sku, quantity: body?.plan_quantity ?? s.plan_quantity,
          addonIds: body?.addons ?? own.addonIds,
          couponCode: body?.coupon_code === undefined ? own.couponCode : (body.coupon_code || null),
        }
        const { change: request, today } = await priceChange(trx, s, wanted, (name) => `body/${name}`)
        const coupon = request.selection.coupon
        // Every check before the provider is called. The redemption is counted once per company
        // in the statement that checks the limit, and holds the coupon's row until this
        // transaction ends: a concurrent update of the last redemption waits, then is refused
        // without reaching the provider; a failed provider call rolls the redemption back.
        if (coupon && coupon.code !== s.coupon_code && !(await repo.redeemCoupon(trx, coupon.id, companyId, today))) {
          throw new ValidationError(`body/coupon_code ${coupon.code} is no longer valid or has reached its max_redemptions`)
        }
        const { state, estimate, unusedCredit } = await provider.changeSubscription(own.held, request)
        applied = { estimate, couponCode: coupon?.code ?? null, at: request.now, today }
        markApplied()
        // A coupon taken off keeps what it discounted with the company's redemption, for when it comes back.
        if (s.coupon_code !== null && s.coupon_code !== state.coupon_code) await repo.keepRedemptionUsage(trx, s.coupon_code, companyId, usageToJson(usageOf(s)))
        const saved = await save(trx, s, state, { event: 'changed', actor, at: request.now, details: { invoice: estimate.invoice_estimate } })
        // A change in a paid term is billed now (the immediate invoice of the estimate), its unused part credited.
        if (saved && unusedCredit !== undefined) {
          await bill(trx, state, { kind: 'change', invoice: estimate.invoice_estimate, date: request.now, periodStart: request.now, periodEnd: state.current_term_end!, unusedCredit })
        }
        const after = (await repo.findByCompany(trx, companyId))!
        return { ...(await details(trx, after)), estimate }
      }, async (trx, s, provider) => {
        // Saved again from the provider's state; the redemption with it (the provider applied the coupon: it counts).
        const { estimate, couponCode, at, today } = applied!
        const state = await provider.retrieve({ ...s, coupon_code: couponCode })
        const coupon = state.coupon_code !== null && state.coupon_code !== s.coupon_code ? await repo.findCoupon(trx, state.coupon_code) : undefined
        if (coupon) await repo.redeemCoupon(trx, coupon.id, companyId, today)
        if (s.coupon_code !== null && s.coupon_code !== state.coupon_code) await repo.keepRedemptionUsage(trx, s.coupon_code, companyId, usageToJson(usageOf(s)))
        await save(trx, s, state, { event: 'changed', actor, at, details: { invoice: estimate.invoice_estimate } })
        return { ...(await details(trx, (await repo.findByCompany(trx, companyId))!)), estimate }
      })
    },

    /**
     * Records the customer's card (brand, last 4 digits, expiry and its test behaviour, never the
     * number); the hosted payment page (11) calls this too. Invoices waiting for payment are
     * charged to the new card at once (the local engine's dunning).
     */
    async setPaymentSource(companyId: string, card: PaymentSource, actor: string) {
      const now = clock.now()
      if (!lifecycle.usableCard(card, now)) throw new ValidationError('body/expiry_year and body/expiry_month: the card has expired')
      return change(companyId, undefined, async (trx, s, provider) => {
        const kept: PaymentSource = { brand: card.brand, last4: card.last4, expiry_month: card.expiry_month, expiry_year: card.expiry_year, ...(card.test_behaviour ? { test_behaviour: card.test_behaviour } : {}) }
        const next = await provider.addPaymentSource(s, kept, now)
        await save(trx, s, next, { event: 'payment_source_added', actor, at: now })
        if (provider.drivesTime) await ledger.collectNow(trx, next, now)
        return details(trx, (await repo.findByCompany(trx, companyId))!)
      })
    },

    /** The platform route's body (spec: no number; test mode: a number, read and dropped here). */
    async setPaymentSourceFromBody(companyId: string, body: PaymentSourceInput, actor: string) {
      return this.setPaymentSource(companyId, cardFromBody(body), actor)
    },

    /**
     * Spec 1, 10, 11: a hosted page of the company's subscription, from its provider. The
     * caller has checked the redirect URL against the allow-list and the company against the token.
     */
    async hostedPage<K extends 'managerPage' | 'portalSession' | 'paymentPage'>(kind: K, companyId: string, options: Omit<HostedPageOptions, 'now'>): Promise<Awaited<ReturnType<BillingProvider[K]>>> {
      const s = await findOwn(companyId)
      const { timezone: _, ...customer } = await customerOf(db, companyId)
      const provider = providers.get(s.provider)
      return provider[kind]({ subscription: s, customer }, { ...options, now: clock.now() }) as Promise<Awaited<ReturnType<BillingProvider[K]>>>
    },

    /**
     * The details (8) with what the portal shows beside them: the next charge (when and the
     * invoice of a whole term at the current selection), or null when nothing will be charged.
     * One read of the subscription and of its customer for both.
     */
    async detailsWithNextCharge(companyId: string): Promise<{ details: Awaited<ReturnType<typeof details>>; next: { at: number; invoice: InvoiceEstimate } | null }> {
      const s = await findOwn(companyId)
      const customer = await customerOf(db, companyId)
      const at = nextBillingAt(s)
      const [view, next] = await Promise.all([
        details(db, s, customer),
        at === null ? null : Promise.all([pricing.current(db, s), ledger.credits(db, s.company_id)]).then(([current, credits]) => ({
          at, invoice: invoiceFor(current, WHOLE, pricing.tax(customer), currency, credits.refundable_credits, { periodStart: new Date(at * 1000), usage: usageOf(s) }),
        })),
      ])
      return { details: view, next }
    },

    /** The subscription's history (what, when, who, from → to), oldest first. */
    async events(companyId: string) {
      const s = await findOwn(companyId)
      return repo.listEvents(db, companyId, s.id)
    },
  }
}

export type SubscriptionsService = ReturnType<typeof createSubscriptionsService>
