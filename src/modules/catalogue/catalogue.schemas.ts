import { PageFields } from '../../http/pagination.ts'
import { Type, type Static } from 'typebox'
import { Code, Day, Name as NameOf, Nullable, Uuid } from '../../http/schemas.ts'

const Sku = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[A-Za-z0-9][A-Za-z0-9_.\\-]*$',
  description: 'Letters, digits, "_", "-" and "."',
})
const Name = NameOf(200)
const Price = Type.Number({
  minimum: 0,
  maximum: 1_000_000,
  description:
    "Major units of the price's currency_code (EUR 29.90, JPY 1000), with at most the currency's decimals (ISO " +
    '4217: EUR 2, JPY 0, KWD 3)',
})
/** A price's currency: set when the price is made, never changed after. */
const ISO_4217 = '^[A-Z]{3}$'
const CurrencyCode = Type.String({
  pattern: ISO_4217,
  description:
    "ISO 4217 code of the price's currency (EUR, USD, JPY); in a request optional, the CURRENCY_CODE setting by " +
    'default. It never changes afterwards.',
})
const PricingModel = Type.Union(
  [
    Type.Literal('flat_fee'),
    Type.Literal('per_unit'),
    Type.Literal('tiered'),
    Type.Literal('volume'),
    Type.Literal('stairstep'),
  ],
  {
    description:
      "Chargebee's pricing models: flat_fee, price whatever the quantity; per_unit (default), price × quantity; " +
      "tiered, each unit at its tier's price; volume, every unit at the price of the tier holding the quantity; " +
      'stairstep, the price of the tier holding the quantity, once',
  },
)
export const Tier = Type.Object(
  {
    starting_unit: Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: '1 for the first tier' }),
    ending_unit: Nullable(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000_000,
        description: 'Last unit of the tier; null on the last tier, which is open-ended',
      }),
    ),
    price: Type.Number({
      minimum: 0,
      maximum: 1_000_000,
      description: 'Major units, as price: per unit (tiered, volume) or for the whole quantity (stairstep)',
    }),
  },
  { additionalProperties: false, title: 'Tier' },
)
const Tiers = Type.Array(Tier, {
  minItems: 1,
  maxItems: 100,
  description: 'For tiered, volume and stairstep only: contiguous from unit 1, the last open-ended (ending_unit null)',
})
const TIERS_EXAMPLE = [
  { starting_unit: 1, ending_unit: 10, price: 10 },
  { starting_unit: 11, ending_unit: 50, price: 8 },
  { starting_unit: 51, ending_unit: null, price: 6 },
]
const PeriodUnit = Type.Union([Type.Literal('month'), Type.Literal('year')])
const Feature = Code(100, 'An area name of the scope list, such as "stamping"')

export const PlanFields = Type.Object(
  {
    id: Uuid('Server-made; ignored when sent'),
    sku: Sku,
    name: Name,
    price: Price,
    currency_code: CurrencyCode,
    plan_family: Code(100),
    period_unit: PeriodUnit,
    features: Type.Array(Feature, { maxItems: 100 }),
    pricing_model: PricingModel,
    tiers: Nullable(Tiers),
    tiers_text: Nullable(
      Type.String({ description: 'The tiers as people read them: "1–10: €10.00 · 11–50: €8.00 · 51+: €6.00"' }),
    ),
  },
  { additionalProperties: false },
)

export const Plan = Type.Object({ plan: PlanFields }, { additionalProperties: false, title: 'Plan' })
export const PlanInput = Type.Object(
  {
    plan: Type.Object(
      {
        ...PlanFields.properties,
        id: Type.Optional(Type.String()),
        price: Type.Optional(Price),
        currency_code: Type.Optional(CurrencyCode),
        features: Type.Optional(PlanFields.properties.features),
        pricing_model: Type.Optional(PricingModel),
        tiers: Type.Optional(Nullable(Tiers)),
        tiers_text: Type.Optional(
          Nullable(Type.String({ maxLength: 2000, description: 'Server-made; ignored when sent' })),
        ),
      },
      { additionalProperties: false, description: "price: required unless tiers are given (then the first tier's)" },
    ),
  },
  {
    additionalProperties: false,
    title: 'PlanInput',
    examples: [
      {
        plan: {
          sku: 'workforce-volume-monthly',
          name: 'Workforce, volume',
          plan_family: 'workforce',
          period_unit: 'month',
          pricing_model: 'volume',
          tiers: TIERS_EXAMPLE,
        },
      },
    ],
  },
)
export type PlanInput = Static<typeof PlanInput>['plan']
export type Plan = Static<typeof Plan>

export const ProductFields = Type.Object(
  {
    id: Uuid('Server-made; ignored when sent'),
    sku: Sku,
    name: Name,
    visible: Type.Boolean(),
    subscription_manager: Type.Union([Type.Literal('local'), Type.Literal('chargebee')], {
      description: 'The billing provider handling the product',
    }),
    allowed_plans: Type.Array(Sku, { maxItems: 100, description: 'Plan skus; each must exist' }),
    category: Nullable(Type.String({ maxLength: 100 })),
    brand: Nullable(Type.String({ maxLength: 100 })),
  },
  { additionalProperties: false },
)

export const Product = Type.Object({ product: ProductFields }, { additionalProperties: false, title: 'Product' })
export const ProductInput = Type.Object(
  {
    product: Type.Object(
      {
        ...ProductFields.properties,
        id: Type.Optional(Type.String()),
        visible: Type.Optional(Type.Boolean({ default: true })),
        subscription_manager: Type.Optional(ProductFields.properties.subscription_manager),
        allowed_plans: Type.Optional(ProductFields.properties.allowed_plans),
        category: Type.Optional(ProductFields.properties.category),
        brand: Type.Optional(ProductFields.properties.brand),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, title: 'ProductInput' },
)
export type ProductInput = Static<typeof ProductInput>['product']
export type Product = Static<typeof Product>

export const Addon = Type.Object(
  {
    id: Uuid('Server-made; ignored when sent'),
    name: Name,
    price: Price,
    currency_code: CurrencyCode,
    period_unit: PeriodUnit,
    pricing_model: PricingModel,
    tiers: Nullable(Tiers),
    tiers_text: PlanFields.properties.tiers_text,
  },
  { additionalProperties: false, title: 'Addon' },
)
export const AddonInput = Type.Object(
  {
    ...Addon.properties,
    id: Type.Optional(Type.String()),
    price: Type.Optional(Price),
    currency_code: Type.Optional(CurrencyCode),
    pricing_model: Type.Optional(PricingModel),
    tiers: Type.Optional(Nullable(Tiers)),
    tiers_text: PlanInput.properties.plan.properties.tiers_text,
  },
  {
    additionalProperties: false,
    title: 'AddonInput',
    description: "price: required unless tiers are given (then the first tier's)",
    examples: [{ name: 'Extra stamping device', price: 15, period_unit: 'month', pricing_model: 'per_unit' }],
  },
)
export type Addon = Static<typeof Addon>
export type AddonInput = Static<typeof AddonInput>

export const Coupon = Type.Object(
  {
    id: Uuid('Server-made; ignored when sent'),
    code: Type.String({
      minLength: 1,
      maxLength: 50,
      pattern: '^[A-Za-z0-9_\\-]+$',
      description: 'Unique; what coupon_code names',
    }),
    name: Name,
    discount_type: Type.Union([Type.Literal('percentage'), Type.Literal('fixed_amount')]),
    discount_value: Type.Number({
      exclusiveMinimum: 0,
      maximum: 1_000_000,
      description:
        'Percent (10 = 10 %, at most 100, at most 2 decimals) or an amount in major units of currency_code (at ' +
        "most the currency's decimals)",
    }),
    currency_code: Nullable(
      Type.String({
        pattern: ISO_4217,
        description:
          "ISO 4217 code of a fixed_amount's currency, null for a percentage. In a request: fixed_amount only, " +
          'the CURRENCY_CODE setting by default.',
      }),
    ),
    valid_till: Nullable(Day('Last day the coupon applies, or null')),
    max_redemptions: Nullable(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
    redemptions: Type.Integer({
      minimum: 0,
      description: 'How many companies redeemed it (each once, however often it re-applies it); server-owned',
    }),
    duration_type: Type.Union([Type.Literal('one_time'), Type.Literal('forever'), Type.Literal('limited_period')], {
      description:
        "Which billing periods it discounts (Chargebee's duration_type): one_time the first period it discounts " +
        'only, forever every period while held, limited_period the periods starting within duration_month months of ' +
        'the first one it discounts',
    }),
    duration_month: Nullable(
      Type.Integer({
        minimum: 1,
        maximum: 240,
        description: 'Months a limited_period coupon runs for (required for it, refused for the others)',
      }),
    ),
    apply_on: Type.Union([Type.Literal('invoice_amount'), Type.Literal('each_specified_item')], {
      description:
        'invoice_amount: off the sub-total; each_specified_item: off each line of a plan in plan_ids or an addon ' +
        'in addon_ids',
    }),
    plan_ids: Type.Array(Sku, {
      maxItems: 100,
      uniqueItems: true,
      description: 'Plan skus the discount applies to (each_specified_item only); each must exist',
    }),
    addon_ids: Type.Array(Uuid('An addon id'), {
      maxItems: 100,
      uniqueItems: true,
      description: 'Addon ids the discount applies to (each_specified_item only); each must exist',
    }),
  },
  {
    additionalProperties: false,
    title: 'Coupon',
    examples: [
      {
        id: '6f1c2b1e-8d4a-4c3e-9b7a-2f5d8e9a1c30',
        code: 'WELCOME3',
        name: 'Three months at 20 % off the plan',
        discount_type: 'percentage',
        discount_value: 20,
        currency_code: null,
        valid_till: '2027-12-31',
        max_redemptions: 500,
        redemptions: 12,
        duration_type: 'limited_period',
        duration_month: 3,
        apply_on: 'each_specified_item',
        plan_ids: ['workforce-basic-monthly'],
        addon_ids: [],
      },
    ],
  },
)
export const CouponInput = Type.Object(
  {
    ...Coupon.properties,
    id: Type.Optional(Type.String()),
    currency_code: Type.Optional(CurrencyCode),
    valid_till: Type.Optional(Coupon.properties.valid_till),
    max_redemptions: Type.Optional(Coupon.properties.max_redemptions),
    redemptions: Type.Optional(Type.Integer()),
    duration_type: Type.Optional(Coupon.properties.duration_type),
    duration_month: Type.Optional(Coupon.properties.duration_month),
    apply_on: Type.Optional(Coupon.properties.apply_on),
    plan_ids: Type.Optional(Coupon.properties.plan_ids),
    addon_ids: Type.Optional(Coupon.properties.addon_ids),
  },
  {
    additionalProperties: false,
    title: 'CouponInput',
    examples: [
      {
        code: 'TENOFF',
        name: '€10 off, once',
        discount_type: 'fixed_amount',
        discount_value: 10,
        duration_type: 'one_time',
      },
    ],
  },
)
export type Coupon = Static<typeof Coupon>
export type CouponInput = Static<typeof CouponInput>

export const IdParams = Type.Object({ id: Uuid() })
export const SkuParams = Type.Object({ sku: Type.String({ minLength: 1, maxLength: 100 }) })
export const PlanQuery = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 200, description: 'Only plans with this exact name' })),
  ...PageFields,
})
export const ProductQuery = Type.Object({
  category: Type.Optional(Type.String({ maxLength: 100 })),
  brand: Type.Optional(Type.String({ maxLength: 100 })),
  visible: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  ...PageFields,
})
