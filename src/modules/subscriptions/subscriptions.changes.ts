import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import type { DB, PaymentSource, SubscriptionRow } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { Conflict, NotFound, ValidationError } from '../../core/errors.ts'
import { type Estimate, usageOf, usageToJson, transitions } from '../billing/index.ts'
import { addonChoices, type WantedSelection } from './subscriptions.pricing.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import type {
  PaymentSourceInput,
  SubscriptionCancellationData,
  SubscriptionUpdate,
  UpdateResponse,
} from './subscriptions.schemas.ts'
import type { SubscriptionSteps } from './subscriptions.steps.ts'
import type { createRemoteChanges } from './subscriptions.remote-changes.ts'
import type { createSubscriptionEstimates } from './subscriptions.estimates.ts'
import type { createSubscriptionJobs } from './subscriptions.jobs.ts'
import { cardFromBody } from './subscriptions.cards.ts'
import type { Ledger } from '../invoices/index.ts'

/**
 * The client's changes to a subscription: checked against the lifecycle here, applied by the
 * provider, saved with their event. A remote change goes through `remoteChange`, which saves what
 * the provider applied even when our transaction fails afterwards.
 */
export function createSubscriptionChanges(deps: {
  db: Kysely<DB>
  repo: Pick<
    SubscriptionsRepository,
    'findByCompanyOrId' | 'findByCompany' | 'findCoupon' | 'redeemCoupon' | 'keepRedemptionUsage'
  >
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

  /** Never the card number. Due invoices are charged to the new card at once. */
  async function setPaymentSource(companyId: string, card: PaymentSource, actor: string) {
    const now = clock.now()
    if (!transitions.usableCard(card, now))
      throw new ValidationError('body/expiry_year and body/expiry_month: the card has expired')
    return change(companyId, undefined, async (trx, s, provider) => {
      const kept: PaymentSource = {
        brand: card.brand,
        last4: card.last4,
        expiry_month: card.expiry_month,
        expiry_year: card.expiry_year,
        ...(card.test_behaviour ? { test_behaviour: card.test_behaviour } : {}),
      }
      const next = await provider.addPaymentSource(s, kept, now)
      await save(trx, s, next, { event: 'payment_source_added', actor, at: now })
      if (provider.drivesTime) await ledger.collectNow(trx, next, now)
      return details(trx, (await repo.findByCompany(trx, companyId))!)
    })
  }

  function wantedOf(s: SubscriptionRow, body: SubscriptionUpdate | undefined, own: Awaited<ReturnType<typeof known>>) {
    return {
      planSku: body?.subscription_plan ?? s.plan_sku,
      quantity: body?.plan_quantity ?? s.plan_quantity,
      addons: body?.addons ? addonChoices(body.addons, 'body/addons', own.addons) : own.addons,
      couponCode: body?.coupon_code === undefined ? own.couponCode : body.coupon_code || null,
    } satisfies WantedSelection
  }

  /**
   * The change for the term's end: checked as one made now, billed by the renewal. The coupon is
   * redeemed when the renewal applies it.
   */
  async function scheduleChange(companyId: string, subscriptionId: string, body: SubscriptionUpdate, actor: string) {
    const event = 'changes_scheduled'
    let estimate: Estimate | undefined
    const answer = async (trx: Executor) => ({
      ...(await details(trx, (await repo.findByCompany(trx, companyId))!)),
      estimate: estimate!,
    })
    return remoteChange(
      companyId,
      subscriptionId,
      async (trx, s, provider, markApplied) => {
        const refusal = transitions.scheduleRefusal(s)
        if (refusal) throw new Conflict(refusal)
        const own = await known(trx, s)
        const { change: request } = await priceChange(trx, s, wantedOf(s, body, own), (name) => `body/${name}`)
        const { selection } = request
        const scheduled = {
          plan_sku: selection.plan.sku,
          plan_quantity: selection.quantity,
          addons: selection.addons.map((a) => ({ id: a.id, quantity: a.quantity })),
          coupon_code: selection.coupon?.code ?? null,
        }
        const result = await provider.scheduleChange(own.held, request, scheduled)
        estimate = result.estimate
        markApplied()
        await save(trx, s, result.state, {
          event,
          actor,
          at: request.now,
          details: { invoice: estimate.invoice_estimate },
        })
        return answer(trx)
      },
      async (trx, s, provider) => {
        await save(trx, s, await provider.retrieve(s), { event, actor, at: clock.now() })
        return answer(trx)
      },
    )
  }

  return {
    /**
     * `tenant` is the token's company (null: platform), so another company's subscription is not found.
     * An immediate cancellation credits the unused term unless `credit_option` is `none`.
     */
    async cancel(
      ref: string,
      tenant: string | null,
      body: SubscriptionCancellationData | undefined,
      endOfTerm: boolean,
      actor: string,
    ) {
      const found = await repo.findByCompanyOrId(db, ref)
      if (!found || (tenant !== null && tenant !== found.company_id)) throw new NotFound('Subscription')
      const reason = {
        cancellation_reason: body?.cancellation_reason ?? null,
        cancellation_message: body?.cancellation_message ?? null,
      }
      const creditOption = body?.credit_option ?? 'prorate'
      const event = endOfTerm ? 'cancellation_scheduled' : 'cancelled'
      await remoteChange(
        found.company_id,
        found.id,
        async (trx, s, provider, applied) => {
          const refusal = transitions.cancelRefusal(s, endOfTerm)
          if (refusal) throw new Conflict(refusal)
          const now = clock.now()
          const next = await provider.cancel(
            s,
            { endOfTerm, reason: reason.cancellation_reason, message: reason.cancellation_message, creditOption },
            now,
          )
          applied()
          const saved = await save(trx, s, next, { event, actor, at: now })
          // Only a paid term has an unused part.
          if (
            saved &&
            provider.drivesTime &&
            !endOfTerm &&
            creditOption === 'prorate' &&
            (s.status === 'active' || s.status === 'non_renewing')
          ) {
            await ledger.creditUnused(trx, next, now)
          }
        },
        async (trx, s, provider) => {
          await save(trx, s, await provider.retrieve({ ...s, ...reason }), { event, actor, at: clock.now() })
        },
      )
    },

    async removeScheduledCancellation(companyId: string, subscriptionId: string, actor: string) {
      const event = 'scheduled_cancellation_removed'
      await remoteChange(
        companyId,
        subscriptionId,
        async (trx, s, provider, applied) => {
          const refusal = transitions.removalRefusal(s)
          if (refusal) throw new Conflict(refusal)
          const now = clock.now()
          const next = await provider.removeScheduledCancellation(s, now)
          applied()
          await save(trx, s, next, { event, actor, at: now })
        },
        async (trx, s, provider) => {
          await save(trx, s, await provider.retrieve(s), { event, actor, at: clock.now() })
        },
      )
    },

    async update(
      companyId: string,
      subscriptionId: string,
      body: SubscriptionUpdate | undefined,
      actor: string,
    ): Promise<UpdateResponse> {
      if (body?.end_of_term) return scheduleChange(companyId, subscriptionId, body, actor)
      let applied: { estimate: Estimate; couponCode: string | null; at: Date; today: string } | undefined
      return remoteChange(
        companyId,
        subscriptionId,
        async (trx, s, provider, markApplied) => {
          const refusal = transitions.changeRefusal(s)
          if (refusal) throw new Conflict(refusal)
          // An unpaid term has nothing to credit: the due invoice is paid first, by a new card, as
          // Chargebee's dunning expects.
          if (provider.drivesTime && (await ledger.hasUnpaid(trx, s))) {
            throw new Conflict(
              'The subscription has an unpaid invoice (payment_due): pay it with a new card (PUT ' +
                '.../payment_source) before changing the subscription',
            )
          }
          const own = await known(trx, s)
          const { change: request, today } = await priceChange(trx, s, wantedOf(s, body, own), (name) => `body/${name}`)
          const coupon = request.selection.coupon
          // The redemption is counted in the statement that checks the limit and holds the coupon's row, so
          // a concurrent last redemption waits and is refused before reaching the provider.
          if (coupon && coupon.code !== s.coupon_code && !(await repo.redeemCoupon(trx, coupon.id, companyId, today))) {
            throw new ValidationError(
              `body/coupon_code ${coupon.code} is no longer valid or has reached its max_redemptions`,
            )
          }
          const { state, estimate, billNow, unusedCredit } = await provider.changeSubscription(own.held, request)
          applied = { estimate, couponCode: coupon?.code ?? null, at: request.now, today }
          markApplied()
          // A coupon taken off keeps what it discounted, for when it comes back.
          if (s.coupon_code !== null && s.coupon_code !== state.coupon_code)
            await repo.keepRedemptionUsage(trx, s.coupon_code, companyId, usageToJson(usageOf(s)))
          const saved = await save(trx, s, state, {
            event: 'changed',
            actor,
            at: request.now,
            details: { invoice: estimate.invoice_estimate },
          })
          if (saved && billNow) {
            await bill(trx, state, {
              kind: 'change',
              invoice: estimate.invoice_estimate,
              date: request.now,
              periodStart: request.now,
              periodEnd: state.current_term_end!,
              ...(unusedCredit ? { unusedCredit } : {}),
            })
          }
          const after = (await repo.findByCompany(trx, companyId))!
          return { ...(await details(trx, after)), estimate }
        },
        async (trx, s, provider) => {
          const { estimate, couponCode, at, today } = applied!
          const state = await provider.retrieve({ ...s, coupon_code: couponCode })
          const coupon =
            state.coupon_code !== null && state.coupon_code !== s.coupon_code
              ? await repo.findCoupon(trx, state.coupon_code)
              : undefined
          if (coupon) await repo.redeemCoupon(trx, coupon.id, companyId, today)
          if (s.coupon_code !== null && s.coupon_code !== state.coupon_code)
            await repo.keepRedemptionUsage(trx, s.coupon_code, companyId, usageToJson(usageOf(s)))
          await save(trx, s, state, { event: 'changed', actor, at, details: { invoice: estimate.invoice_estimate } })
          return { ...(await details(trx, (await repo.findByCompany(trx, companyId))!)), estimate }
        },
      )
    },

    setPaymentSource,

    /** Test mode reads the card number and drops it. */
    async setPaymentSourceFromBody(companyId: string, body: PaymentSourceInput, actor: string) {
      return setPaymentSource(companyId, cardFromBody(body), actor)
    },
  }
}
