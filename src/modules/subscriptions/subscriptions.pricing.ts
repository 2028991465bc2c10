import type { ProductRow, SubscriptionRow } from '../../db/tables.ts'
import { Conflict, ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import {
  type PricedCoupon,
  type PricedItem,
  type PricedSelection,
  type TaxRate,
  taxFor,
  type TaxCustomer,
} from '../billing/index.ts'
import type { SubscriptionsRepository } from './subscriptions.repository.ts'

export interface WantedAddon {
  id: string
  quantity: number
}

export interface WantedSelection {
  planSku: string
  quantity: number
  addons: WantedAddon[]
  couponCode: string | null
}

const MAX_QUANTITY = 100_000

/**
 * Addons as 6's body gives them (ids or `{id, quantity}`) or the estimate's query (`id` or
 * `id:quantity`). An id alone keeps the quantity of an addon `held`, else is 1.
 */
export function addonChoices(list: (string | WantedAddon)[], field: string, held: WantedAddon[] = []): WantedAddon[] {
  return list.map((choice) => {
    if (typeof choice !== 'string') return { id: choice.id.toLowerCase(), quantity: choice.quantity }
    const [raw, quantity] = choice.split(':') as [string, string | undefined]
    const id = raw.toLowerCase()
    const n = quantity === undefined ? (held.find((a) => a.id === id)?.quantity ?? 1) : Number(quantity)
    if (n > MAX_QUANTITY) throw new ValidationError(`${field}: addon ${id} quantity must be at most ${MAX_QUANTITY}`)
    return { id, quantity: n }
  })
}

/** Prices selections from the catalogue; a requested one is checked (400 naming the field). */
export function createPricing(deps: {
  repo: SubscriptionsRepository
  vatRates: ReadonlyMap<string, number>
  sellerCountry: string
}) {
  const { repo } = deps

  async function coupon(
    executor: Executor,
    code: string | null,
  ): Promise<
    | (PricedCoupon & {
        id: string
        currency_code: string | null
        valid_till: string | null
        max_redemptions: number | null
        redemptions: number
      })
    | undefined
  > {
    return code === null ? undefined : repo.findCoupon(executor, code)
  }

  return {
    /**
     * `field(name)` names the request's field in errors. A held plan or coupon keeps applying; new ones
     * must be allowed, valid `today` and not used up. The currency, as at Chargebee, never changes.
     */
    async selection(
      executor: Executor,
      wanted: WantedSelection,
      ctx: {
        product: ProductRow
        current: { plan: string; currency: string; coupon: string | null; companyId: string } | null
        today: string
        field: (name: string) => string
      },
    ): Promise<PricedSelection> {
      const { field } = ctx
      const plan = await repo.findPlan(executor, wanted.planSku)
      if (!plan) throw new ValidationError(`${field('subscription_plan')} names an unknown plan: ${wanted.planSku}`)
      if (plan.sku !== ctx.current?.plan && !ctx.product.allowed_plans.includes(plan.sku)) {
        throw new ValidationError(
          `${field('subscription_plan')} ${plan.sku} is not among the allowed_plans of product ${ctx.product.sku}`,
        )
      }
      if (ctx.current && ctx.current.currency !== plan.currency_code) {
        throw new ValidationError(
          `${field('subscription_plan')} ${plan.sku} is priced in ${plan.currency_code}, and the subscription ` +
            `bills in ${ctx.current.currency}: a subscription's currency does not change`,
        )
      }
      const addonIds = wanted.addons.map((a) => a.id)
      if (new Set(addonIds).size !== addonIds.length)
        throw new ValidationError(`${field('addons')} must not name an addon twice`)
      const addonRows = await repo.findAddons(executor, addonIds)
      const addons = wanted.addons.map(({ id, quantity }) => {
        const row = addonRows.find((a) => a.id === id)
        if (!row) throw new ValidationError(`${field('addons')} names an unknown addon: ${id}`)
        if (row.period_unit !== plan.period_unit) {
          throw new ValidationError(
            `${field('addons')}: addon ${id} is billed per ${row.period_unit}, the plan per ${plan.period_unit}`,
          )
        }
        if (row.currency_code !== plan.currency_code) {
          throw new ValidationError(
            `${field('addons')}: addon ${id} is priced in ${row.currency_code}, the plan in ${plan.currency_code}`,
          )
        }
        return { ...pricedItem(row), id: row.id, name: row.name, quantity }
      })
      const row = await coupon(executor, wanted.couponCode)
      if (wanted.couponCode !== null && !row)
        throw new ValidationError(`${field('coupon_code')} names an unknown coupon: ${wanted.couponCode}`)
      if (row && row.currency_code !== null && row.currency_code !== plan.currency_code) {
        throw new ValidationError(
          `${field('coupon_code')} ${row.code} takes off an amount in ${row.currency_code}, and the plan is ` +
            `priced in ${plan.currency_code}`,
        )
      }
      if (row && row.code !== ctx.current?.coupon) {
        if (row.valid_till !== null && row.valid_till < ctx.today)
          throw new ValidationError(`${field('coupon_code')} ${row.code} expired on ${row.valid_till}`)
        if (
          row.max_redemptions !== null &&
          row.redemptions >= row.max_redemptions &&
          !(ctx.current && (await repo.hasRedeemed(executor, row.id, ctx.current.companyId)))
        ) {
          throw new ValidationError(
            `${field('coupon_code')} ${row.code} has reached its max_redemptions (${row.max_redemptions})`,
          )
        }
        // As Chargebee refuses a coupon not applicable to the chosen items.
        if (
          row.apply_on === 'each_specified_item' &&
          !row.plan_ids.includes(plan.sku) &&
          !addons.some((a) => row.addon_ids.includes(a.id))
        ) {
          throw new ValidationError(
            `${field('coupon_code')} ${row.code} applies only to plans [${row.plan_ids.join(', ')}] and addons ` +
              `[${row.addon_ids.join(', ')}], none of which is chosen`,
          )
        }
      }
      return { plan, quantity: wanted.quantity, addons, coupon: row ?? null }
    },

    async current(executor: Executor, s: SubscriptionRow): Promise<PricedSelection> {
      const plan = await repo.findPlan(executor, s.plan_sku)
      if (!plan) throw missingFromCatalogue(s, 'plan', s.plan_sku)
      const rows = await repo.findAddons(
        executor,
        s.addons.map((a) => a.id),
      )
      const addons = s.addons.flatMap((a) => {
        const row = rows.find((r) => r.id === a.id)
        return row ? [{ ...pricedItem(row), id: row.id, name: row.name, quantity: a.quantity }] : []
      })
      return { plan, quantity: s.plan_quantity, addons, coupon: (await coupon(executor, s.coupon_code)) ?? null }
    },

    tax(customer: TaxCustomer): TaxRate {
      return taxFor(customer, deps.sellerCountry, deps.vatRates)
    },
  }
}

export type Pricing = ReturnType<typeof createPricing>

function pricedItem(row: PricedItem): PricedItem {
  return { pricing_model: row.pricing_model, price_cents: row.price_cents, tiers: row.tiers }
}

// Foreign keys forbid deleting catalogue rows, so only an older broken row or a provider naming an
// unknown item gets here: a 409 saying so, never a 500.
export function missingFromCatalogue(s: Pick<SubscriptionRow, 'id'>, what: 'plan' | 'product', sku: string): Conflict {
  return new Conflict(
    `The subscription ${s.id} refers to ${what} ${sku}, which is no longer in the catalogue; a platform client ` +
      `must restore it`,
  )
}
