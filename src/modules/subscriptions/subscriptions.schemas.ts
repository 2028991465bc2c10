import { Type, type Static } from 'typebox'
import { Nullable, Uuid } from '../../http/schemas.ts'
import { PlanFields, ProductFields } from '../catalogue/catalogue.schemas.ts'
import { InvoiceEstimate } from '../billing/index.ts'

export const SubscriptionStatusValue = Type.Union(
  [
    Type.Literal('future'),
    Type.Literal('in_trial'),
    Type.Literal('active'),
    Type.Literal('non_renewing'),
    Type.Literal('paused'),
    Type.Literal('cancelled'),
  ],
  { description: "Chargebee's subscription statuses" },
)
const Status = SubscriptionStatusValue
const Unix = (description: string) => Nullable(Type.Integer({ description: `${description} (Unix seconds)` }))
const Sku = Type.String({ minLength: 1, maxLength: 100 })
const PlanSku = (description: string) => Type.String({ minLength: 1, maxLength: 100, description })
const Quantity = Type.Integer({ minimum: 1, maximum: 100_000 })
const CouponCode = (description: string) => Type.String({ maxLength: 50, description })
const UUID_PATTERN = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}'
const AddonChoice = Type.Union(
  [
    Uuid('An addon id: quantity 1'),
    Type.Object({ id: Uuid('An addon id'), quantity: Quantity }, { additionalProperties: false }),
  ],
  { description: 'An addon id (quantity 1) or {id, quantity}' },
)
const AddonChoices = (description: string) => Type.Array(AddonChoice, { maxItems: 50, description })
const AddonQueryChoices = (description: string) =>
  Type.Array(
    Type.String({
      pattern: `^${UUID_PATTERN}(:[1-9][0-9]{0,5})?$`,
      description: '<addon id> (quantity 1) or <addon id>:<quantity>',
    }),
    { maxItems: 50, description },
  )

export const CompanyOrSubscriptionParams = Type.Object({
  company_id_or_subscription_id: Uuid('The company, or its subscription (spec 2 names either)'),
})
export const CompanySubscriptionParams = Type.Object({
  company_id: Uuid('The company'),
  subscription_id: Uuid("The company's subscription"),
})
export const EstimateParams = Type.Object({
  subscription_id: Uuid("The subscription (the company's id is accepted too)"),
})

export const CardFields = {
  brand: Type.String({ minLength: 1, maxLength: 30, description: 'visa, mastercard, ...' }),
  last4: Type.String({ pattern: '^[0-9]{4}$' }),
  expiry_month: Type.Integer({ minimum: 1, maximum: 12 }),
  expiry_year: Type.Integer({ minimum: 2000, maximum: 2100 }),
}
export const PaymentSourceInput = Type.Object(
  {
    brand: Type.Optional(CardFields.brand),
    last4: Type.Optional(CardFields.last4),
    number: Type.Optional(
      Type.String({
        minLength: 12,
        maxLength: 23,
        pattern: '^[0-9 -]+$',
        description:
          'Test mode, instead of brand and last4: a test card number (spaces and dashes allowed). Only ' +
          'its brand, last 4 digits and test behaviour are kept: 4000 0000 0000 0341 is accepted but ' +
          'every charge fails; 4000 0000 0000 0002 is declined (400); any other valid number charges',
      }),
    ),
    expiry_month: CardFields.expiry_month,
    expiry_year: CardFields.expiry_year,
  },
  {
    additionalProperties: false,
    title: 'PaymentSourceInput',
    description:
      'A card: brand, last4 and expiry (a card that charges), or a test number and expiry. Never is ' +
      'the number kept, nor a CVV accepted',
    examples: [
      { brand: 'visa', last4: '4242', expiry_month: 12, expiry_year: 2030 },
      { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2030 },
    ],
  },
)
export type PaymentSourceInput = Static<typeof PaymentSourceInput>

export const SubscriptionCancellationData = Type.Object(
  {
    cancellation_reason: Type.Optional(Type.String({ maxLength: 200 })),
    cancellation_message: Type.Optional(Type.String({ maxLength: 2000 })),
    credit_option: Type.Optional(
      Type.Union([Type.Literal('prorate'), Type.Literal('none')], {
        description:
          "For a cancellation now (end_of_term=false), Chargebee's " +
          'credit_option_for_current_term_charges: prorate (default) credits the unused share of the ' +
          "current term's invoice, tax included, as one refundable credit note; none credits nothing. " +
          'Ignored at the end of the term (nothing is unused then)',
      }),
    ),
  },
  { additionalProperties: false, title: 'SubscriptionCancellationData' },
)
export type SubscriptionCancellationData = Static<typeof SubscriptionCancellationData>

export const CancelQuery = Type.Object({
  end_of_term: Type.Optional(
    Type.Boolean({
      default: true,
      description: 'true (default): at the end of the current term (or trial); false: now',
    }),
  ),
})

export const EstimateQuery = Type.Object({
  company_id: Uuid('The company whose subscription is estimated'),
  product_sku: Sku,
  subscription_plan: PlanSku("A plan sku among the product's allowed_plans"),
  plan_quantity: Quantity,
  coupon_code: Type.Optional(CouponCode("Omitted: the subscription's coupon stays; empty: no coupon")),
  addons: Type.Optional(
    AddonQueryChoices(
      'Addons as <id> or <id>:<quantity>, each at most once (repeat the parameter); omitted: the ' +
        "subscription's addons stay; empty (addons=): no addons",
    ),
  ),
})
export type EstimateQuery = Static<typeof EstimateQuery>

export const SubscriptionUpdate = Type.Object(
  {
    subscription_plan: Type.Optional(PlanSku("A plan sku among the product's allowed_plans")),
    plan_quantity: Type.Optional(Quantity),
    addons: Type.Optional(
      AddonChoices(
        'Addon ids or {id, quantity} objects (quantity 1 by default), each addon at most once; replaces the ' +
          'addons; [] removes them all',
      ),
    ),
    coupon_code: Type.Optional(Nullable(CouponCode('null or "" removes the coupon'))),
    end_of_term: Type.Optional(
      Type.Boolean({
        description:
          "true: the change waits for the current term's end (has_scheduled_changes, scheduled_change), nothing " +
          'is billed now and the renewal bills the new choice; it replaces a change, cancellation or pause ' +
          'scheduled before. false (default): now',
      }),
    ),
  },
  { additionalProperties: false, title: 'SubscriptionUpdate', description: 'Omitted fields keep their value' },
)
export type SubscriptionUpdate = Static<typeof SubscriptionUpdate>

export const EstimateBody = Type.Object(
  {
    subscription_estimate: Type.Object(
      {
        status: Status,
        next_billing_at: Unix('When the subscription is billed next; null when it ends instead'),
      },
      { additionalProperties: false },
    ),
    invoice_estimate: InvoiceEstimate,
  },
  { additionalProperties: false },
)

export const EstimateResponse = Type.Object(
  { estimate: EstimateBody },
  { additionalProperties: false, title: 'Estimate' },
)

const UnixDate = (description: string) => Type.Integer({ minimum: 0, maximum: 253402300799, description })

export const SubscriptionPause = Type.Object(
  {
    pause_option: Type.Union([Type.Literal('immediately'), Type.Literal('end_of_term')], {
      description:
        "immediately: paused now, the rest of the paid term unused; end_of_term: at the current term's end, " +
        'instead of the renewal (it replaces a change scheduled for then)',
    }),
    resume_date: Type.Optional(
      UnixDate('When it resumes by itself (Unix seconds), after the pause starts; left out: until resumed'),
    ),
  },
  {
    additionalProperties: false,
    title: 'SubscriptionPause',
    examples: [{ pause_option: 'immediately' }, { pause_option: 'end_of_term', resume_date: 1801526400 }],
  },
)
export type SubscriptionPause = Static<typeof SubscriptionPause>

export const SubscriptionResume = Type.Object(
  {
    resume_option: Type.Optional(
      Type.Literal('immediately', { description: 'immediately (the default): a new term starts now, billed now' }),
    ),
  },
  { additionalProperties: false, title: 'SubscriptionResume', examples: [{ resume_option: 'immediately' }] },
)
export type SubscriptionResume = Static<typeof SubscriptionResume>

export const ScheduledChangeView = Type.Object(
  {
    at: Unix("When it applies: the current term's end"),
    subscription_plan: Type.String({ description: "The plan's sku" }),
    plan_quantity: Type.Integer(),
    addons: Type.Array(Type.Object({ id: Type.String(), quantity: Type.Integer() }, { additionalProperties: false })),
    coupon_code: Nullable(Type.String()),
  },
  { additionalProperties: false, description: 'The choice the renewal bills' },
)

const PaymentMethod = Type.Object({ type: Type.Literal('card'), ...CardFields }, { additionalProperties: false })

export const SubscriptionFields = Type.Object(
  {
    id: Uuid(),
    customer_id: Type.String(),
    provider: Type.Union([Type.Literal('local'), Type.Literal('chargebee')], {
      description: "The billing provider (the product's subscription_manager)",
    }),
    status: Status,
    product_sku: Type.String(),
    plan_id: Type.String({ description: "The plan's sku" }),
    plan_quantity: Type.Integer(),
    addons: Type.Array(Type.Object({ id: Type.String(), quantity: Type.Integer() }, { additionalProperties: false })),
    coupon_code: Nullable(Type.String()),
    coupons: Type.Array(
      Type.Object(
        {
          coupon_code: Type.String(),
          applied_at: Unix('When the coupon was put on the subscription'),
          applied_count: Type.Integer({ minimum: 0, description: 'How many billing periods it has discounted' }),
          apply_till: Unix(
            'limited_period: it discounts the periods starting before this (set when it first discounts); ' +
              'null otherwise',
          ),
        },
        { additionalProperties: false },
      ),
      {
        maxItems: 1,
        description:
          "The coupon held and what it has discounted (Chargebee's subscription.coupons[]); empty without one",
      },
    ),
    trial_start: Unix('Start of the trial'),
    trial_end: Unix('End of the trial'),
    current_term_start: Unix('Start of the current term'),
    current_term_end: Unix('End of the current term; for a cancelled subscription, when it ended'),
    next_billing_at: Unix('Next invoice; null when none is coming'),
    cancelled_at: Unix(
      "When it was cancelled or, while a cancellation is scheduled, when it will be (Chargebee's " +
        'meaning; the same as scheduled_cancellation_at then)',
    ),
    scheduled_cancellation_at: Unix('When a scheduled cancellation takes effect'),
    cancellation_reason: Nullable(Type.String()),
    cancellation_message: Nullable(Type.String()),
    has_scheduled_changes: Type.Boolean({ description: "A change waits for the term's end (scheduled_change)" }),
    scheduled_change: Nullable(ScheduledChangeView),
    pause_date: Unix('When the pause started or, with status active, when it is set to start'),
    resume_date: Unix('When a paused subscription resumes by itself'),
    created_at: Type.Integer(),
    updated_at: Type.Integer(),
  },
  { additionalProperties: false },
)

export const SubscriptionDetails = Type.Object(
  {
    subscription: SubscriptionFields,
    plan: PlanFields,
    product: ProductFields,
    customer: Type.Object(
      {
        id: Type.String(),
        company_id: Uuid(),
        name: Type.String(),
        email: Nullable(Type.String()),
        country: Type.String(),
        payment_method: Nullable(PaymentMethod),
        promotional_credits: Type.Integer({
          description:
            "Promotional credits (POST .../promotional_credits) in minor units of the plan's currency: the next " +
            'invoices take them first, off the total after tax',
        }),
        refundable_credits: Type.Integer({
          description:
            "Credits from refundable credit notes in the plan's currency, in minor units: applied to the next " +
            'invoices after promotional credits',
        }),
        excess_payments: Type.Integer({
          description:
            "Payments beyond what invoices asked (record_payment), in the plan's currency, in minor units: " +
            'applied to the next invoices last',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, title: 'SubscriptionDetails' },
)
export type SubscriptionDetails = Static<typeof SubscriptionDetails>

export const UpdateResponse = Type.Object(
  {
    ...SubscriptionDetails.properties,
    estimate: Type.Object(EstimateBody.properties, {
      additionalProperties: false,
      description: 'The estimate (9) this update applied',
    }),
  },
  { additionalProperties: false, title: 'SubscriptionUpdated' },
)
export type UpdateResponse = Static<typeof UpdateResponse>

export const SubscriptionStatusBody = Type.Object(
  {
    subscription_id: Uuid(),
    status: Status,
    plan: Type.String({ description: "The plan's sku" }),
    current_term_end: Unix('End of the current term'),
    trial_end: Unix('End of the trial'),
    cancelled_at: Unix(
      "When it was cancelled or, while a cancellation is scheduled, when it will be (Chargebee's " +
        'meaning; the same as scheduled_cancellation_at then)',
    ),
    scheduled_cancellation_at: Unix('When a scheduled cancellation takes effect'),
    features: Type.Array(Type.String(), { description: "The plan's features; none once cancelled" }),
  },
  { additionalProperties: false, title: 'SubscriptionStatus' },
)
export type SubscriptionStatusBody = Static<typeof SubscriptionStatusBody>
