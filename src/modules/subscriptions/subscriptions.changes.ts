import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import type { DB, PaymentSource } from '../../db/tables.ts'
import { Conflict, NotFound, ValidationError } from '../../core/errors.ts'
import type { Estimate } from './billing/estimate.ts'
import { usageOf, usageToJson } from './billing/coupons.ts'
import * as lifecycle from './billing/lifecycle.ts'
import type { WantedSelection } from './subscriptions.pricing.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import type { PaymentSourceInput, SubscriptionCancellationData, SubscriptionUpdate, UpdateResponse } from './subscriptions.schemas.ts'
import type { SubscriptionSteps } from './subscriptions.steps.ts'
import type { createRemoteChanges } from './subscriptions.remote.ts'
import type { createSubscriptionEstimates } from './subscriptions.estimates.ts'
import type { createSubscriptionJobs } from './subscriptions.jobs.ts'
import { cardFromBody } from './subscriptions.cards.ts'
import type { Ledger } from '../invoices/invoices.service.ts'

/**
 * The client's changes to a subscription (spec 2, 3, 6 and the card): each checked against the
 * lifecycle here, applied by the subscription's provider, and saved with its event. A change at
 * a remote provider goes through `remoteChange` (subscriptions.remote.ts), which saves what the
 * provider applied even when our transaction fails after it; each change says how it is saved again.
 */
export function createSubscriptionChanges(deps: {
  db: Kysely<DB>
  repo: Pick<SubscriptionsRepository, 'findByCompanyOrId' | 'findByCompany' | 'findCoupon' | 'redeemCoupon' | 'keepRedemptionUsage'>
  clock: Clock
  ledger: Pick<Ledger, 'hasUnpaid' | 'collectNow' | 'creditUnused'>
  steps: Pick<SubscriptionSteps, 'save' | 'change' | 'details'>
  remote: ReturnType<typeof createRemoteChanges>
  priceChange: ReturnType<typeof createSubscriptionEstimates>['priceChange']
  bill: ReturnType<typeof createSubscriptionJobs>['bill']
}) {
  const { db, repo, clock, ledger, priceChange, bill } = deps
  const { save, change, details } = deps.steps
  const { remoteChange, known } = deps.remote

  /**
   * Records the customer's card (brand, last 4 digits, expiry and its test behaviour, never the
   * number); the hosted payment page (11) calls this too. Invoices waiting for payment are
   * charged to the new card at once (the local engine's dunning).
   */
  async function setPaymentSource(companyId: string, card: PaymentSource, actor: string) {
    const now = clock.now()
    if (!lifecycle.usableCard(card, now)) throw new ValidationError('body/expiry_year and body/expiry_month: the card has expired')
    return change(companyId, undefined, async (trx, s, provider) => {
      const kept: PaymentSource = { brand: card.brand, last4: card.last4, expiry_month: card.expiry_month, expiry_year: card.expiry_year, ...(card.test_behaviour ? { test_behaviour: card.test_behaviour } : {}) }
      const next = await provider.addPaymentSource(s, kept, now)
      await save(trx, s, next, { event: 'payment_source_added', actor, at: now })
      if (provider.drivesTime) await ledger.collectNow(trx, next, now)
      return details(trx, (await repo.findByCompany(trx, companyId))!)
    })
  }

  return {
    /**
     * Spec 2. `ref` is the company's id or its subscription's; `tenant` the token's company
     * (null for a platform client): another company's subscription is not found. A cancellation
     * now credits the unused share of the term's invoice unless `credit_option` is `none`
     * (the local engine's ledger here; a remote provider is told the option and issues its own).
     */
    async cancel(ref: string, tenant: string | null, body: SubscriptionCancellationData | undefined, endOfTerm: boolean, actor: string) {
      const found = await repo.findByCompanyOrId(db, ref)
      if (!found || (tenant !== null && tenant !== found.company_id)) throw new NotFound('Subscription')
      const reason = { cancellation_reason: body?.cancellation_reason ?? null, cancellation_message: body?.cancellation_message ?? null }
      const creditOption = body?.credit_option ?? 'prorate'
      const event = endOfTerm ? 'cancellation_scheduled' : 'cancelled'
      await remoteChange(found.company_id, found.id, async (trx, s, provider, applied) => {
        const refusal = lifecycle.cancelRefusal(s, endOfTerm)
        if (refusal) throw new Conflict(refusal)
        const now = clock.now()
        const next = await provider.cancel(s, { endOfTerm, reason: reason.cancellation_reason, message: reason.cancellation_message, creditOption }, now)
        applied()
        const saved = await save(trx, s, next, { event, actor, at: now })
        // Only a paid term has an unused part (a trial has no invoice; creditUnused checks it was paid).
        if (saved && provider.drivesTime && !endOfTerm && creditOption === 'prorate' && (s.status === 'active' || s.status === 'non_renewing')) {
          await ledger.creditUnused(trx, next, now)
        }
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
        const { state, estimate, billNow, unusedCredit } = await provider.changeSubscription(own.held, request)
        applied = { estimate, couponCode: coupon?.code ?? null, at: request.now, today }
        markApplied()
        // A coupon taken off keeps what it discounted with the company's redemption, for when it comes back.
        if (s.coupon_code !== null && s.coupon_code !== state.coupon_code) await repo.keepRedemptionUsage(trx, s.coupon_code, companyId, usageToJson(usageOf(s)))
        const saved = await save(trx, s, state, { event: 'changed', actor, at: request.now, details: { invoice: estimate.invoice_estimate } })
        // A change in a paid term is billed now (the immediate invoice of the estimate), its unused part credited.
        if (saved && billNow) {
          await bill(trx, state, { kind: 'change', invoice: estimate.invoice_estimate, date: request.now, periodStart: request.now, periodEnd: state.current_term_end!, ...(unusedCredit ? { unusedCredit } : {}) })
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

    setPaymentSource,

    /** The platform route's body (spec: no number; test mode: a number, read and dropped here). */
    async setPaymentSourceFromBody(companyId: string, body: PaymentSourceInput, actor: string) {
      return setPaymentSource(companyId, cardFromBody(body), actor)
    },
  }
}
