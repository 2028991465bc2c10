import type { KeysetPage } from '../../db/keyset.ts'
import type { Paged } from '../../core/paging.ts'
import { randomUUID } from 'node:crypto'
import type { Selectable } from 'kysely'
import type { AddonsTable, CouponsTable, PlanRow, ProductRow } from '../../db/tables.ts'
import { Conflict, NotFound, ValidationError } from '../../core/errors.ts'
import {
  basisPointsToPercent,
  currencyExponent,
  fromMinor,
  isCurrency,
  percentToBasisPoints,
  toMinor,
} from '../../core/money.ts'
import { tierProblem, tiersText, usesTiers, type PricingModel, type Tier } from '../billing/index.ts'
import { isArea } from '../oauth/scopes.ts'
import { isRealDay } from '../../core/days.ts'
import type { CatalogueRepository } from './catalogue.repository.ts'
import type {
  Addon,
  AddonInput,
  Coupon,
  CouponInput,
  Plan,
  PlanInput,
  Product,
  ProductInput,
} from './catalogue.schemas.ts'

/**
 * Each price keeps its own `currency_code`, which gives it its decimals; CURRENCY_CODE is only a new
 * price's default, so changing the setting never changes what a stored amount means.
 */
export function createCatalogueService(deps: { repo: CatalogueRepository; currency: string }) {
  const { repo } = deps

  function currencyOf(code: string | undefined, field: string): string {
    const currency = code ?? deps.currency
    if (!isCurrency(currency)) throw new ValidationError(`${field} ${currency} is not an ISO 4217 currency code`)
    return currency
  }

  return {
    /** A product's row by its sku, for other modules that check what a contract names. */
    findProductBySku: (sku: string) => repo.findProductBySku(sku),
    /** A plan's row by its sku, for other modules that check what a contract names. */
    findPlanBySku: (sku: string) => repo.findPlanBySku(sku),

    async createPlan(input: PlanInput): Promise<string> {
      const features = [...new Set(input.features ?? [])]
      const unknown = features.find((f) => !isArea(f))
      if (unknown !== undefined) throw new ValidationError(`body/plan/features names an unknown area: ${unknown}`)
      if (await repo.findPlanBySku(input.sku)) throw new Conflict(`A plan with sku ${input.sku} already exists`)
      const currency = currencyOf(input.currency_code, 'body/plan/currency_code')
      const id = randomUUID()
      await repo.insertPlan({
        id,
        sku: input.sku,
        name: input.name,
        ...pricingOf(input, 'body/plan/', currency),
        currency_code: currency,
        plan_family: input.plan_family,
        period_unit: input.period_unit,
        features,
      })
      return id
    },
    async listPlans(filter: { name?: string }, page: KeysetPage = {}): Promise<Paged<Plan>> {
      const paged = await repo.listPlans(filter, page)
      return { ...paged, items: paged.items.map(planView) }
    },
    async getPlan(id: string): Promise<Plan> {
      const row = await repo.findPlan(id)
      if (!row) throw new NotFound('Plan')
      return planView(row)
    },
    async getPlanBySku(sku: string): Promise<Plan> {
      const row = await repo.findPlanBySku(sku)
      if (!row) throw new NotFound('Plan')
      return planView(row)
    },

    async createProduct(input: ProductInput): Promise<string> {
      const values = await productValues(input)
      if (await repo.findProductSkuOwner(input.sku))
        throw new Conflict(`A product with sku ${input.sku} already exists`)
      const id = randomUUID()
      await repo.insertProduct({ id, ...values })
      return id
    },
    async updateProduct(id: string, input: ProductInput): Promise<void> {
      const values = await productValues(input)
      const owner = await repo.findProductSkuOwner(input.sku)
      if (owner && owner.id !== id) throw new Conflict(`A product with sku ${input.sku} already exists`)
      if (!(await repo.updateProduct(id, values))) throw new NotFound('Product')
    },
    async listProducts(
      filter: { category?: string; brand?: string; visible?: 'true' | 'false' },
      page: KeysetPage = {},
    ): Promise<Paged<Product>> {
      const visible = filter.visible === undefined ? undefined : filter.visible === 'true'
      const paged = await repo.listProducts({ category: filter.category, brand: filter.brand, visible }, page)
      return { ...paged, items: paged.items.map(productView) }
    },
    async getProduct(id: string): Promise<Product> {
      const row = await repo.findProduct(id)
      if (!row) throw new NotFound('Product')
      return productView(row)
    },

    async createAddon(input: AddonInput): Promise<string> {
      const currency = currencyOf(input.currency_code, 'body/currency_code')
      const id = randomUUID()
      await repo.insertAddon({
        id,
        name: input.name,
        ...pricingOf(input, 'body/', currency),
        currency_code: currency,
        period_unit: input.period_unit,
      })
      return id
    },
    async listAddons(page: KeysetPage = {}): Promise<Paged<Addon>> {
      const paged = await repo.listAddons(page)
      return { ...paged, items: paged.items.map(addonView) }
    },
    async getAddon(id: string): Promise<Addon> {
      const row = await repo.findAddon(id)
      if (!row) throw new NotFound('Addon')
      return addonView(row)
    },

    async createCoupon(input: CouponInput): Promise<string> {
      if (input.discount_type === 'percentage' && input.discount_value > 100)
        throw new ValidationError('body/discount_value must be at most 100 for a percentage')
      if (input.valid_till && !isRealDay(input.valid_till))
        throw new ValidationError('body/valid_till must be a real calendar day')
      // A percentage has no currency and fits a plan in any.
      if (input.discount_type === 'percentage' && input.currency_code !== undefined)
        throw new ValidationError('body/currency_code applies only to discount_type "fixed_amount"')
      const currency =
        input.discount_type === 'fixed_amount' ? currencyOf(input.currency_code, 'body/currency_code') : null
      const terms = await couponTerms(input)
      if (await repo.findCouponByCode(input.code)) throw new Conflict(`A coupon with code ${input.code} already exists`)
      const id = randomUUID()
      await repo.insertCoupon({
        id,
        code: input.code,
        name: input.name,
        discount_type: input.discount_type,
        discount_value_minor:
          input.discount_type === 'percentage'
            ? percentToBasisPoints(input.discount_value, 'body/discount_value')
            : toMinor(input.discount_value, 'body/discount_value', currency!),
        currency_code: currency,
        valid_till: input.valid_till ?? null,
        max_redemptions: input.max_redemptions ?? null,
        ...terms,
      })
      return id
    },
    async listCoupons(page: KeysetPage = {}): Promise<Paged<Coupon>> {
      const paged = await repo.listCoupons(page)
      return { ...paged, items: paged.items.map(couponView) }
    },
    async getCoupon(id: string): Promise<Coupon> {
      const row = await repo.findCoupon(id)
      if (!row) throw new NotFound('Coupon')
      return couponView(row)
    },
  }

  // Chargebee's rules: duration_month only with limited_period; plan_ids/addon_ids only with each_specified_item.
  async function couponTerms(input: CouponInput) {
    const durationType = input.duration_type ?? 'forever'
    const durationMonth = input.duration_month ?? null
    if (durationType === 'limited_period' && durationMonth === null)
      throw new ValidationError('body/duration_month is required when body/duration_type is "limited_period"')
    if (durationType !== 'limited_period' && durationMonth !== null)
      throw new ValidationError(
        `body/duration_month applies only to duration_type "limited_period", not "${durationType}"`,
      )
    const applyOn = input.apply_on ?? 'invoice_amount'
    const planIds = input.plan_ids ?? []
    const addonIds = (input.addon_ids ?? []).map((id) => id.toLowerCase())
    if (applyOn === 'invoice_amount') {
      if (planIds.length > 0) throw new ValidationError('body/plan_ids applies only to apply_on "each_specified_item"')
      if (addonIds.length > 0)
        throw new ValidationError('body/addon_ids applies only to apply_on "each_specified_item"')
    } else {
      if (planIds.length === 0 && addonIds.length === 0)
        throw new ValidationError(
          'body/plan_ids or body/addon_ids must name at least one item when apply_on is "each_specified_item"',
        )
      const plans = await repo.existingPlanSkus(planIds)
      const missingPlan = planIds.find((sku) => !plans.has(sku))
      if (missingPlan !== undefined) throw new ValidationError(`body/plan_ids names an unknown plan: ${missingPlan}`)
      for (const addonId of addonIds) {
        if (!(await repo.findAddon(addonId)))
          throw new ValidationError(`body/addon_ids names an unknown addon: ${addonId}`)
      }
    }
    return {
      duration_type: durationType,
      duration_month: durationMonth,
      apply_on: applyOn,
      plan_ids: planIds,
      addon_ids: addonIds,
    }
  }

  async function productValues(input: ProductInput) {
    const allowed = [...new Set(input.allowed_plans ?? [])]
    const existing = await repo.existingPlanSkus(allowed)
    const missing = allowed.find((sku) => !existing.has(sku))
    if (missing !== undefined) throw new ValidationError(`body/product/allowed_plans names an unknown plan: ${missing}`)
    return {
      sku: input.sku,
      name: input.name,
      visible: input.visible ?? true,
      subscription_manager: input.subscription_manager ?? 'local',
      allowed_plans: allowed,
      category: input.category ?? null,
      brand: input.brand ?? null,
    }
  }
}

export type CatalogueService = ReturnType<typeof createCatalogueService>

/**
 * The columns of a price by its model; a 400 names the field, a tier's by its index
 * (`body/tiers/1/starting_unit ...`). With tiers, `price` defaults to the first tier's.
 */
function pricingOf(
  input: { price?: number; pricing_model?: PricingModel; tiers?: Tier[] | null },
  prefix: string,
  currency: string,
): { price_cents: number; pricing_model: PricingModel; tiers: string | null } {
  const model = input.pricing_model ?? 'per_unit'
  const tiers: Tier[] | undefined = input.tiers?.map((t, i) => ({
    starting_unit: t.starting_unit,
    ending_unit: t.ending_unit,
    price: toMinor(t.price, `${prefix}tiers/${i}/price`, currency),
  }))
  const problem = tierProblem(model, tiers)
  if (problem)
    throw new ValidationError(
      problem.index === null
        ? `${prefix}${problem.field} ${problem.message}`
        : `${prefix}tiers/${problem.index}/${problem.field} ${problem.message}`,
    )
  if (input.price === undefined && !usesTiers(model))
    throw new ValidationError(`${prefix}price is required for pricing_model ${model}`)
  const first = tiers?.[0]?.price
  const price = input.price === undefined ? first! : toMinor(input.price, `${prefix}price`, currency)
  return { price_cents: price, pricing_model: model, tiers: tiers ? JSON.stringify(tiers) : null }
}

function pricingView(row: { pricing_model: PricingModel; tiers: Tier[] | null; currency_code: string }) {
  const tiers = row.tiers
  const digits = currencyExponent(row.currency_code)
  const money = (minor: number) =>
    new Intl.NumberFormat('en-GB', {
      style: 'currency',
      currency: row.currency_code,
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    }).format(fromMinor(minor, row.currency_code))
  return {
    pricing_model: row.pricing_model,
    tiers: tiers ? tiers.map((t) => ({ ...t, price: fromMinor(t.price, row.currency_code) })) : null,
    tiers_text: tiers ? tiersText(tiers, money) : null,
  }
}

export function planView(row: PlanRow): Plan {
  return {
    plan: {
      id: row.id,
      sku: row.sku,
      name: row.name,
      price: fromMinor(row.price_cents, row.currency_code),
      currency_code: row.currency_code,
      plan_family: row.plan_family,
      period_unit: row.period_unit,
      features: row.features,
      ...pricingView(row),
    },
  }
}

export function productView(row: ProductRow): Product {
  return {
    product: {
      id: row.id,
      sku: row.sku,
      name: row.name,
      visible: row.visible,
      subscription_manager: row.subscription_manager,
      allowed_plans: row.allowed_plans,
      category: row.category,
      brand: row.brand,
    },
  }
}

function addonView(row: Selectable<AddonsTable>): Addon {
  return {
    id: row.id,
    name: row.name,
    price: fromMinor(row.price_cents, row.currency_code),
    currency_code: row.currency_code,
    period_unit: row.period_unit,
    ...pricingView(row),
  }
}

function couponView(row: Selectable<CouponsTable>): Coupon {
  return {
    id: row.id,
    code: row.code,
    name: row.name,
    discount_type: row.discount_type,
    discount_value:
      row.discount_type === 'percentage'
        ? basisPointsToPercent(row.discount_value_minor)
        : fromMinor(row.discount_value_minor, row.currency_code!),
    currency_code: row.currency_code,
    valid_till: row.valid_till,
    max_redemptions: row.max_redemptions,
    redemptions: row.redemptions,
    duration_type: row.duration_type,
    duration_month: row.duration_month,
    apply_on: row.apply_on,
    plan_ids: row.plan_ids,
    addon_ids: row.addon_ids,
  }
}
