import type { PaymentSource, ScheduledChange } from '../../db/tables.ts'
import { ProviderError } from '../../core/errors.ts'
import type { ChargedInvoice, CreditFigures, Estimate, PricedSelection, TaxRate } from './billing.estimate.ts'
import type { CouponUsage } from './billing.coupons.ts'
import type { BillingState, Cancellation, PauseOption } from './billing.transitions.ts'
import type { PeriodUnit } from './billing.terms.ts'

export type ProviderName = 'local' | 'chargebee'

/** A company's billing customer; its id is the subscription's customer_id. */
export interface BillingCustomer {
  id: string
  company_id: string
  name: string
  email: string | null
  country: string
}

/** A change of plan, quantity, addons or coupon; `current` is what the subscription holds now. */
export interface ChangeRequest {
  selection: PricedSelection
  current: PricedSelection
  tax: TaxRate | null
  currency: string
  now: Date
  /** A coupon put on again resumes where it had stopped discounting. */
  couponHistory?: CouponUsage | null
  /** Refundable credits and excess payments (minor units) the local engine applies; remote providers keep their own. */
  credits?: number
  /** The customer's promotional credits the local engine takes first, after tax. */
  promotionalCredits?: number
  /** The current term's latest invoice (local engine): a change credits its unused share. */
  termInvoice?: ChargedInvoice | null
}

export interface UnusedCredit {
  figures: CreditFigures
  referenceInvoiceId: string
}

export interface HostedPageSubject {
  subscription: BillingState
  customer: BillingCustomer
}

/**
 * `redirectUrl` is already checked against the allow-list; `baseUrl` is where the local provider
 * serves its pages; `clientId` lets the local provider withdraw the page when that client is revoked.
 */
export interface HostedPageOptions {
  redirectUrl: string
  now: Date
  ttlSeconds: number
  baseUrl: string
  clientId?: string | null
}

export interface SubscriptionManagerPage {
  url: string
  expires_at: number
}

/** Chargebee's portal_session: created → logged_in → logged_out. */
export interface PortalSession {
  token: string
  status: 'created' | 'logged_in' | 'logged_out'
  redirect_url: string
  object: 'portal_session'
  id: string
  expires_at: number
  customer_id: string
  created_at: number
  access_url: string
}

/** Chargebee's hosted_page: created → requested → succeeded | cancelled. */
export interface HostedPage {
  url: string
  updated_at: number
  type: string
  state: 'created' | 'requested' | 'succeeded' | 'cancelled'
  resource_version: number
  object: 'hosted_page'
  id: string
  expires_at: number
  embed: boolean
  created_at: number
}

/**
 * The port every billing engine implements: the service owns the stored subscription, refuses what
 * is invalid and records events; a provider turns a valid request into the next state. Remote objects
 * carry our ids, so no mapping table is needed.
 */
export interface BillingProvider {
  readonly name: ProviderName
  /** True when this service's scheduler moves the subscription at its trial's and terms' ends (the local engine). */
  readonly drivesTime: boolean
  createSubscription(input: { subscription: BillingState; customer: BillingCustomer }): Promise<BillingState>
  retrieve(subscription: BillingState): Promise<BillingState>
  estimate(subscription: BillingState, change: ChangeRequest): Promise<Estimate>
  /**
   * Applies a change; answers the new state and the estimate applied. `billNow` and `unusedCredit`
   * (local engine) are set only when something is billed now.
   */
  changeSubscription(
    subscription: BillingState,
    change: ChangeRequest,
  ): Promise<{ state: BillingState; estimate: Estimate; billNow?: boolean; unusedCredit?: UnusedCredit }>
  /**
   * Schedules `change` for the term's end: nothing is billed now; the estimate is the renewal's
   * invoice under the new choice.
   */
  scheduleChange(
    subscription: BillingState,
    change: ChangeRequest,
    scheduled: ScheduledChange,
  ): Promise<{ state: BillingState; estimate: Estimate }>
  removeScheduledChanges(subscription: BillingState, now: Date): Promise<BillingState>
  pause(
    subscription: BillingState,
    pause: { option: PauseOption; resumeDate: Date | null },
    now: Date,
  ): Promise<BillingState>
  /** A new term from now; the local engine's caller bills it. */
  resume(subscription: BillingState, now: Date, unit: PeriodUnit): Promise<BillingState>
  cancel(subscription: BillingState, cancellation: Cancellation, now: Date): Promise<BillingState>
  /** Undoes `createSubscription` when the company's creation failed after the provider created its objects. */
  abandonCustomer?(customerId: string): Promise<void>
  removeScheduledCancellation(subscription: BillingState, now: Date): Promise<BillingState>
  addPaymentSource(subscription: BillingState, card: PaymentSource, now: Date): Promise<BillingState>
  managerPage(subject: HostedPageSubject, options: HostedPageOptions): Promise<SubscriptionManagerPage>
  portalSession(subject: HostedPageSubject, options: HostedPageOptions): Promise<PortalSession>
  /** Only the card's brand, last 4 digits and expiry are kept. */
  paymentPage(subject: HostedPageSubject, options: HostedPageOptions): Promise<HostedPage>
  atTrialEnd?(subscription: BillingState, unit: PeriodUnit): BillingState | null
  atTermEnd?(subscription: BillingState, unit: PeriodUnit): BillingState | null
}

export function createProviderRegistry(providers: BillingProvider[]) {
  const byName = new Map(providers.map((p) => [p.name, p]))
  return {
    get(name: string): BillingProvider {
      const provider = byName.get(name as ProviderName)
      if (!provider) throw new ProviderError(`The billing provider "${name}" is not configured on this service`)
      return provider
    },
  }
}

export type ProviderRegistry = ReturnType<typeof createProviderRegistry>

/**
 * The customer id belongs to an earlier attempt whose customer the provider deleted yet still
 * answers for: the creation takes another id.
 */
export class CustomerIdSpent extends Error {
  constructor(readonly customerId: string) {
    super(`The customer id ${customerId} was used by an abandoned creation`)
  }
}
