/**
 * The billing engine's public face: pricing, proration, coupons, tax, terms, the status
 * transitions, test cards, the provider port with the local provider, and the estimate's schema.
 * It imports neither the subscription lifecycle nor Chargebee.
 */
export { InvoiceEstimate } from './billing.schemas.ts'
export {
  WHOLE,
  PROMOTIONAL_CREDITS,
  chargesInvoice,
  couponDiscount,
  promotionalCreditsTaken,
  creditFor,
  invoiceFor,
  recurringLines,
  type RecurringLine,
  type ChargedInvoice,
  type Discount,
  type InvoiceExtras,
  type OneOffCharge,
  type CreditFigures,
  type Estimate,
  type LineItem,
  type PricedCoupon,
  type PricedSelection,
  type TaxRate,
} from './billing.estimate.ts'
export { creditShare } from './billing.credit-share.ts'
export {
  afterInvoice,
  freshUsage,
  usageColumns,
  usageFromJson,
  usageOf,
  usageToJson,
  type CouponUsage,
} from './billing.coupons.ts'
export {
  PRICING_MODELS,
  itemAmount,
  termAmount,
  tierProblem,
  tiersText,
  usesTiers,
  type PricedItem,
  type PricingModel,
  type Tier,
} from './billing.pricing.ts'
export { REVERSE_CHARGE, taxFor, vatTable, type TaxCustomer } from './billing.vat.ts'
export { termEnd, unixSeconds, type PeriodUnit } from './billing.terms.ts'
export * as transitions from './billing.transitions.ts'
export type { BillingState, Cancellation, PauseOption } from './billing.transitions.ts'
export { brandOf, chargeSucceeds, luhnValid, testBehaviourOf } from './billing.cards.ts'
export {
  CustomerIdSpent,
  createProviderRegistry,
  type BillingCustomer,
  type BillingProvider,
  type ChangeRequest,
  type HostedPage,
  type HostedPageOptions,
  type HostedPageSubject,
  type PortalSession,
  type ProviderName,
  type ProviderRegistry,
  type UnusedCredit,
} from './billing.provider.ts'
export { createLocalProvider, type LocalHostedPages } from './billing.local-provider.ts'
export { observedProvider, type ProviderObserver } from './billing.observed-provider.ts'
