import type { PaymentSource } from '../../../db/tables.ts'
import { ProviderError } from '../../../http/errors.ts'
import type { Estimate, PricedSelection, TaxRate } from './estimate.ts'
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
export interface ChangeRequest { selection: PricedSelection; current: PricedSelection; tax: TaxRate | null; currency: string; now: Date }

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
 * Still to come on this port (hosted pages, spec 1, 10, 11): `checkoutPage`, `portalSession`,
 * `paymentPage`, each answering the spec's shape; and, for a provider with `drivesTime` false,
 * its webhook events mapped to the same `BillingState` and saved by the service.
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
  /** Applies a change; answers the new state and the estimate it applied (the same as `estimate`'s). */
  changeSubscription(subscription: BillingState, change: ChangeRequest): Promise<{ state: BillingState; estimate: Estimate }>
  cancel(subscription: BillingState, cancellation: Cancellation, now: Date): Promise<BillingState>
  removeScheduledCancellation(subscription: BillingState, now: Date): Promise<BillingState>
  addPaymentSource(subscription: BillingState, card: PaymentSource, now: Date): Promise<BillingState>
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
