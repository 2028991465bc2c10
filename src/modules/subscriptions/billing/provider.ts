import type { PaymentSource } from '../../../db/tables.ts'
import { ProviderError } from '../../../core/errors.ts'
import type { ChargedInvoice, CreditFigures, Estimate, PricedSelection, TaxRate } from './estimate.ts'
import type { CouponUsage } from './coupons.ts'
import type { BillingState, Cancellation } from './lifecycle.ts'
import type { PeriodUnit } from './terms.ts'

export type ProviderName = 'local' | 'chargebee'

/** The billing customer of a company (Chargebee's customer): one per company, its id is the subscription's customer_id. */
export interface BillingCustomer { id: string; company_id: string; name: string; email: string | null; country: string }

/**
 * A change of plan, quantity, addons or coupon, priced by this service's catalogue. `current`
 * is what the subscription holds now (for the credit of its unused part), `tax` the VAT of the
 * customer's country.
 */
export interface ChangeRequest {
  selection: PricedSelection; current: PricedSelection; tax: TaxRate | null; currency: string; now: Date
  /** A coupon the company took off before and now puts on again: what it had discounted then (it resumes there). */
  couponHistory?: CouponUsage | null
  /** The customer's refundable credits (minor units) that the local engine applies to the invoice; remote providers keep their own. */
  credits?: number
  /**
   * The current term's latest invoice (local engine): what a change credits is the unused share of
   * what it charged, with its tax. Absent: nothing was charged for the term, nothing is credited.
   */
  termInvoice?: ChargedInvoice | null
}

/** The credit of the unused part of a paid term: its figures and the invoice it refers to. */
export interface UnusedCredit { figures: CreditFigures; referenceInvoiceId: string }

/** Who a hosted page is for. */
export interface HostedPageSubject { subscription: BillingState; customer: BillingCustomer }

/**
 * How a hosted page is opened: `redirectUrl` is where the browser goes when the page is done
 * (already checked by the caller against the allow-list: absolute https on an allowed host);
 * `now` the service's clock; `ttlSeconds` how long the page or session stays usable;
 * `baseUrl` this service's public origin (no trailing slash), where the local provider serves
 * its pages (a remote provider answers its own URLs and ignores it); `clientId` the client whose
 * token asked for the page (the local provider withdraws the page when that client is revoked).
 */
export interface HostedPageOptions { redirectUrl: string; now: Date; ttlSeconds: number; baseUrl: string; clientId?: string | null }

/** Spec SubscriptionManagerPage (endpoint 1): where the customer chooses and confirms a plan. */
export interface SubscriptionManagerPage { url: string; expires_at: number }

/** Spec PortalSession (endpoint 10), Chargebee's portal_session: status created → logged_in → logged_out. */
export interface PortalSession {
  token: string; status: 'created' | 'logged_in' | 'logged_out'; redirect_url: string; object: 'portal_session'
  id: string; expires_at: number; customer_id: string; created_at: number; access_url: string
}

/** Spec HostedPage (endpoint 11), Chargebee's hosted_page: state created → requested → succeeded | cancelled. */
export interface HostedPage {
  url: string; updated_at: number; type: string; state: 'created' | 'requested' | 'succeeded' | 'cancelled'
  resource_version: number; object: 'hosted_page'; id: string; expires_at: number; embed: boolean; created_at: number
}

/**
 * The port every billing engine implements. The service owns the stored subscription (the
 * `subscriptions` row is the mirror the company's fields are joined from), checks what is
 * refused (409) and what the catalogue does not know (400), and records events; a provider
 * only turns a valid request into the subscription's next state, locally or by calling its
 * API, and answers that state.
 *
 * Ids: the service makes the subscription id (a UUID) and uses the company id as the customer
 * id; a remote provider creates its objects with those ids (Chargebee accepts given ids), so
 * no mapping table is needed.
 *
 * Hosted pages (spec 1, 10, 11): `managerPage`, `portalSession`, `paymentPage`, each answering
 * the spec's shape (times in Unix seconds); the local provider serves them under `/hosted/`.
 *
 * A provider with `drivesTime` false reports its changes by webhook; chargebee-webhooks.service.ts maps
 * those events to the same `BillingState` and saves them.
 */
export interface BillingProvider {
  readonly name: ProviderName
  /**
   * True when this service's scheduler moves the subscription at its trial's and terms' ends
   * (the local engine); false when the provider does and reports it by webhook (Chargebee).
   */
  readonly drivesTime: boolean
  createSubscription(input: { subscription: BillingState; customer: BillingCustomer }): Promise<BillingState>
  retrieve(subscription: BillingState): Promise<BillingState>
  /** The invoice a change leads to, without changing anything. */
  estimate(subscription: BillingState, change: ChangeRequest): Promise<Estimate>
  /**
   * Applies a change; answers the new state and the estimate it applied (the same as `estimate`'s).
   * `billNow` (local engine): the change is billed now, the immediate invoice of the estimate;
   * `unusedCredit` the credit of the current term's unused part, which the ledger issues as a
   * credit note first. Neither when nothing is billed now here (a trial, a change of coupon alone).
   */
  changeSubscription(subscription: BillingState, change: ChangeRequest): Promise<{ state: BillingState; estimate: Estimate; billNow?: boolean; unusedCredit?: UnusedCredit }>
  cancel(subscription: BillingState, cancellation: Cancellation, now: Date): Promise<BillingState>
  /**
   * Undoes `createSubscription` when the company's creation failed here after the provider
   * created its objects (a remote provider: no orphan customer or subscription is left there).
   */
  abandonCustomer?(customerId: string): Promise<void>
  removeScheduledCancellation(subscription: BillingState, now: Date): Promise<BillingState>
  addPaymentSource(subscription: BillingState, card: PaymentSource, now: Date): Promise<BillingState>
  /** Spec 1: a page to choose and confirm a plan among the product's allowed plans. */
  managerPage(subject: HostedPageSubject, options: HostedPageOptions): Promise<SubscriptionManagerPage>
  /** Spec 10: a self-service portal session for the customer (see the subscription, cancel, undo, log out). */
  portalSession(subject: HostedPageSubject, options: HostedPageOptions): Promise<PortalSession>
  /** Spec 11: a page to add or replace the customer's card (only brand, last 4 digits and expiry are kept). */
  paymentPage(subject: HostedPageSubject, options: HostedPageOptions): Promise<HostedPage>
  /** Time-driven transitions, called by the scheduler when `drivesTime`; null: nothing to do. */
  atTrialEnd?(subscription: BillingState, unit: PeriodUnit): BillingState | null
  atTermEnd?(subscription: BillingState, unit: PeriodUnit): BillingState | null
}

/** The providers this process has, by the name a product's `subscription_manager` gives. */
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
 * Thrown by `createSubscription` when the customer id was used by an earlier attempt of the
 * creation whose customer the provider has deleted since (`abandonCustomer`) and still answers
 * for (an idempotent replay): the creation takes another id (src/modules/companies).
 */
export class CustomerIdSpent extends Error {
  constructor(readonly customerId: string) {
    super(`The customer id ${customerId} was used by an abandoned creation`)
  }
}
