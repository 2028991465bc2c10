import type { ColumnType, Generated } from 'kysely'
import type { CreatedAt, UpdatedAt } from './columns.ts'

export type PricingModelColumn = 'flat_fee' | 'per_unit' | 'tiered' | 'volume' | 'stairstep'
/** A tier's price in minor units; `ending_unit` null on the last, open one. */
export interface TierColumn {
  starting_unit: number
  ending_unit: number | null
  price: number
}

export interface PlansTable {
  id: string
  sku: string
  name: string
  price_cents: ColumnType<number, number, number>
  plan_family: string
  period_unit: 'month' | 'year'
  features: string[]
  /** The ISO 4217 code price_cents counts minor units of. */
  currency_code: string
  pricing_model: ColumnType<PricingModelColumn, PricingModelColumn | undefined, PricingModelColumn>
  tiers: ColumnType<TierColumn[] | null, string | null | undefined, string | null>
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface ProductsTable {
  id: string
  sku: string
  name: string
  visible: boolean
  subscription_manager: 'local' | 'chargebee'
  allowed_plans: string[]
  category: string | null
  brand: string | null
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface AddonsTable {
  id: string
  name: string
  price_cents: number
  period_unit: 'month' | 'year'
  /** The ISO 4217 code price_cents counts minor units of. */
  currency_code: string
  pricing_model: ColumnType<PricingModelColumn, PricingModelColumn | undefined, PricingModelColumn>
  tiers: ColumnType<TierColumn[] | null, string | null | undefined, string | null>
  created_at: CreatedAt
}

export interface CouponsTable {
  id: string
  code: string
  name: string
  discount_type: 'percentage' | 'fixed_amount'
  discount_value_minor: number
  /** A fixed amount's ISO 4217 code; null for a percentage. */
  currency_code: string | null
  valid_till: string | null
  max_redemptions: number | null
  redemptions: Generated<number>
  /** Chargebee's coupon fields: how long and on what the discount applies. */
  duration_type: Generated<'one_time' | 'forever' | 'limited_period'>
  duration_month: number | null
  apply_on: Generated<'invoice_amount' | 'each_specified_item'>
  plan_ids: Generated<string[]>
  addon_ids: Generated<string[]>
  created_at: CreatedAt
}

/** A company that applied a coupon (once, however often it re-applies it). */
export interface CouponRedemptionsTable {
  coupon_id: string
  company_id: string
  redeemed_at: CreatedAt
  /** What it had discounted when the company took it off (billing/billing.coupons.ts `usageToJson`). */
  usage: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>
}
