import type { ProductRow, SubscriptionRow } from '../../db/tables.ts'
import { Conflict, ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import type { PricedCoupon, PricedSelection, TaxRate } from './billing/estimate.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'
import { taxFor, type TaxCustomer } from './billing/vat.ts'

/** What a client asks a subscription to become (estimate 9, update 6), before the catalogue prices it. */
export interface WantedSelection { planSku: string; quantity: number; addonIds: string[]; couponCode: string | null }

/**
 * Prices selections from the catalogue. A requested selection is checked (400 naming the
 * field); the subscription's current one is priced as it was accepted.
 */
export function createPricing(deps: { repo: SubscriptionsRepository; vatRates: ReadonlyMap<string, number>; sellerCountry: string }) {
  const { repo } = deps

  async function coupon(executor: Executor, code: string | null): Promise<(PricedCoupon & { id: string; currency_code: string | null; valid_till: string | null; max_redemptions: number | null; redemptions: number }) | undefined> {
    return code === null ? undefined : repo.findCoupon(executor, code)
  }

  return {
    /**
     * `field(name)` names the request's field in an error (`querystring/addons`, `body/addons`).
     * A plan or coupon the subscription already holds keeps applying (a product may stop
     * allowing a plan for new choices; its subscribers keep it). A new plan must be among the
     * product's allowed_plans. A new coupon must be valid `today` (in the company's time zone)
     * and, unless `companyId` redeemed it before (a company redeems a coupon once), not used up.
     * `current` is null for a new subscription (the anonymous estimate).
     * A subscription bills in its plan's currency: an addon or fixed-amount coupon in another is
     * refused, and so is a new plan in another currency than the held one's (as Chargebee
     * refuses to change a subscription's currency).
     */
    async selection(executor: Executor, wanted: WantedSelection, ctx: { product: ProductRow; current: { plan: string; currency: string; coupon: string | null; companyId: string } | null; today: string; field: (name: string) => string }): Promise<PricedSelection> {
      const { field } = ctx
      const plan = await repo.findPlan(executor, wanted.planSku)
      if (!plan) throw new ValidationError(`${field('subscription_plan')} names an unknown plan: ${wanted.planSku}`)
      if (plan.sku !== ctx.current?.plan && !ctx.product.allowed_plans.includes(plan.sku)) {
        throw new ValidationError(`${field('subscription_plan')} ${plan.sku} is not among the allowed_plans of product ${ctx.product.sku}`)
      }
      if (ctx.current && ctx.current.currency !== plan.currency_code) {
        throw new ValidationError(`${field('subscription_plan')} ${plan.sku} is priced in ${plan.currency_code}, and the subscription bills in ${ctx.current.currency}: a subscription's currency does not change`)
      }
      if (new Set(wanted.addonIds).size !== wanted.addonIds.length) throw new ValidationError(`${field('addons')} must not name an addon twice`)
      const addonRows = await repo.findAddons(executor, wanted.addonIds)
      const addons = wanted.addonIds.map((id) => {
        const row = addonRows.find((a) => a.id === id)
        if (!row) throw new ValidationError(`${field('addons')} names an unknown addon: ${id}`)
        if (row.period_unit !== plan.period_unit) {
          throw new ValidationError(`${field('addons')}: addon ${id} is billed per ${row.period_unit}, the plan per ${plan.period_unit}`)
        }
        if (row.currency_code !== plan.currency_code) {
          throw new ValidationError(`${field('addons')}: addon ${id} is priced in ${row.currency_code}, the plan in ${plan.currency_code}`)
        }
        return { id: row.id, name: row.name, price_cents: row.price_cents, quantity: 1 }
      })
      const row = await coupon(executor, wanted.couponCode)
      if (wanted.couponCode !== null && !row) throw new ValidationError(`${field('coupon_code')} names an unknown coupon: ${wanted.couponCode}`)
      if (row && row.currency_code !== null && row.currency_code !== plan.currency_code) {
        throw new ValidationError(`${field('coupon_code')} ${row.code} takes off an amount in ${row.currency_code}, and the plan is priced in ${plan.currency_code}`)
      }
      if (row && row.code !== ctx.current?.coupon) {
        if (row.valid_till !== null && row.valid_till < ctx.today) throw new ValidationError(`${field('coupon_code')} ${row.code} expired on ${row.valid_till}`)
        if (row.max_redemptions !== null && row.redemptions >= row.max_redemptions
          && !(ctx.current && await repo.hasRedeemed(executor, row.id, ctx.current.companyId))) {
          throw new ValidationError(`${field('coupon_code')} ${row.code} has reached its max_redemptions (${row.max_redemptions})`)
        }
        // A coupon on specified items that discounts none of the chosen ones is refused, as Chargebee refuses a coupon not applicable to the items.
        if (row.apply_on === 'each_specified_item' && !row.plan_ids.includes(plan.sku) && !addons.some((a) => row.addon_ids.includes(a.id))) {
          throw new ValidationError(`${field('coupon_code')} ${row.code} applies only to plans [${row.plan_ids.join(', ')}] and addons [${row.addon_ids.join(', ')}], none of which is chosen`)
        }
      }
      return { plan, quantity: wanted.quantity, addons, coupon: row ?? null }
    },

    /** The subscription as it stands, with today's catalogue prices. */
    async current(executor: Executor, s: SubscriptionRow): Promise<PricedSelection> {
      const plan = await repo.findPlan(executor, s.plan_sku)
      if (!plan) throw missingFromCatalogue(s, 'plan', s.plan_sku)
      const rows = await repo.findAddons(executor, s.addons.map((a) => a.id))
      const addons = s.addons.flatMap((a) => {
        const row = rows.find((r) => r.id === a.id)
        return row ? [{ id: row.id, name: row.name, price_cents: row.price_cents, quantity: a.quantity }] : []
      })
      return { plan, quantity: s.plan_quantity, addons, coupon: (await coupon(executor, s.coupon_code)) ?? null }
    },

    /** The customer's tax: the VAT table by country, reverse charge abroad with a VAT number marked valid (billing/vat.ts). */
    tax(customer: TaxCustomer): TaxRate {
      return taxFor(customer, deps.sellerCountry, deps.vatRates)
    },
  }
}

export type Pricing = ReturnType<typeof createPricing>

/**
 * A subscription whose product or plan row is gone. The foreign keys of 0012 carry renames
 * over and forbid deletions, so only a row broken before them (or a provider naming an item
 * this catalogue lacks) gets here: a 409 saying so, never a 500.
 */
export function missingFromCatalogue(s: Pick<SubscriptionRow, 'id'>, what: 'plan' | 'product', sku: string): Conflict {
  return new Conflict(`The subscription ${s.id} refers to ${what} ${sku}, which is no longer in the catalogue; a platform client must restore it`)
}
