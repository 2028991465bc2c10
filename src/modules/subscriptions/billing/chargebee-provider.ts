import Chargebee from 'chargebee'
import type { Config } from '../../../config.ts'
import type { PaymentSource } from '../../../db/tables.ts'
import { ProviderError } from '../../../http/errors.ts'
import { callChargebee } from './chargebee-errors.ts'
import { cardOf, estimateFrom, itemsParams, stateFrom, type CbCard, type CbEstimate, type CbSubscription } from './chargebee-mapping.ts'
import type { BillingState } from './lifecycle.ts'
import type { BillingProvider, ChangeRequest, HostedPage, PortalSession } from './provider.ts'
import { unixSeconds } from './terms.ts'

export interface ChargebeeSettings {
  site: string
  apiKey: string
  /** The SDK's host is `<protocol>://<site><hostSuffix>:<port>`; the defaults reach Chargebee, tests point them at a local server. */
  protocol?: 'https' | 'http'
  hostSuffix?: string
  port?: number
  timeoutMs?: number
}

/** What Chargebee answers for a subscription (`card` only when the customer has one). */
interface SubscriptionAnswer { subscription: CbSubscription; card?: CbCard }

/** The provider, and Chargebee's own view of a subscription (for the webhooks: its resource_version included). */
export type ChargebeeProvider = BillingProvider & { fetchSubscription(id: string): Promise<{ subscription: CbSubscription; card: PaymentSource | null }> }

/**
 * The Chargebee provider, on the official SDK (v3). Chargebee holds the subscription and moves
 * time (trial ends, renewals), reported by webhook; each call here answers the state Chargebee
 * reports after it, mapped onto the stored row (chargebee-mapping.ts). The customer and the
 * subscription are created with our ids (the company id, the subscription UUID).
 *
 * Failures become `provider_error` answers (chargebee-errors.ts); the SDK's own retries are off
 * because every call runs inside the transaction holding the subscription's row lock.
 */
export function createChargebeeProvider(settings: ChargebeeSettings): ChargebeeProvider {
  const cb = new Chargebee({
    site: settings.site,
    apiKey: settings.apiKey,
    protocol: settings.protocol ?? 'https',
    hostSuffix: settings.hostSuffix ?? '.chargebee.com',
    port: settings.port ?? 443,
    timeout: settings.timeoutMs ?? 15_000,
    retryConfig: { enabled: false },
    sdkTelemetryEnabled: false,
  })

  const answer = (a: unknown) => a as SubscriptionAnswer
  const next = (stored: BillingState, a: SubscriptionAnswer) => stateFrom(stored, a.subscription, cardOf(a.card))

  async function estimateOf(s: BillingState, change: ChangeRequest) {
    const result = await callChargebee('estimate the change', () =>
      cb.estimate.updateSubscriptionForItems({ subscription: { id: s.id }, ...itemsParams(change) }))
    return estimateFrom((result as unknown as { estimate: CbEstimate }).estimate, { status: s.status, currency: change.currency })
  }

  return {
    name: 'chargebee',
    drivesTime: false,

    async createSubscription({ subscription: s, customer }) {
      await callChargebee('create the customer', () => cb.customer.create({
        id: customer.id, company: customer.name, ...(customer.email ? { email: customer.email } : {}),
        billing_address: { company: customer.name, country: customer.country },
      }))
      const created = await callChargebee('create the subscription', () => cb.subscription.createWithItems(customer.id, {
        id: s.id,
        subscription_items: [{ item_price_id: s.plan_sku, quantity: s.plan_quantity }],
        ...(s.trial_end ? { trial_end: unixSeconds(s.trial_end)! } : {}),
      }))
      return next(s, answer(created))
    },

    async fetchSubscription(id) {
      const a = answer(await callChargebee('read the subscription', () => cb.subscription.retrieve(id)))
      return { subscription: a.subscription, card: cardOf(a.card) }
    },

    async retrieve(s) {
      return next(s, answer(await callChargebee('read the subscription', () => cb.subscription.retrieve(s.id))))
    },

    estimate: estimateOf,

    async changeSubscription(s, change) {
      // The estimate of the very change applied: what the client is answered it pays.
      const estimate = await estimateOf(s, change)
      const updated = await callChargebee('change the subscription', () =>
        cb.subscription.updateForItems(s.id, { ...itemsParams(change), prorate: true, invoice_immediately: true }))
      return { state: next(s, answer(updated)), estimate }
    },

    async cancel(s, cancellation) {
      const cancelled = await callChargebee('cancel the subscription', () =>
        cb.subscription.cancelForItems(s.id, { cancel_option: cancellation.endOfTerm ? 'end_of_term' : 'immediately' }))
      // Chargebee's reason codes are a configured list; our free-text reason and message stay here.
      return next({ ...s, cancellation_reason: cancellation.reason, cancellation_message: cancellation.message }, answer(cancelled))
    },

    async removeScheduledCancellation(s) {
      return next(s, answer(await callChargebee('remove the scheduled cancellation', () => cb.subscription.removeScheduledCancellation(s.id, {}))))
    },

    async addPaymentSource() {
      // Chargebee takes a card only from its own pages or a gateway token, never brand and last 4 digits.
      throw new ProviderError('A Chargebee subscription takes cards through the payment page (GET /api/v1/subscription/{subscription_customer_id}/payment_page/)', 409)
    },

    async managerPage({ subscription: s }, { redirectUrl }) {
      const result = await callChargebee('open the subscription page', () => cb.hostedPage.checkoutExistingForItems({
        subscription: { id: s.id },
        subscription_items: [{ item_price_id: s.plan_sku, quantity: s.plan_quantity }, ...s.addons.map((a) => ({ item_price_id: a.id, quantity: a.quantity }))],
        redirect_url: redirectUrl,
      }))
      const page = (result as unknown as { hosted_page: HostedPage }).hosted_page
      return { url: page.url, expires_at: page.expires_at }
    },

    async portalSession({ customer }, { redirectUrl }) {
      const result = await callChargebee('open a portal session', () => cb.portalSession.create({ customer: { id: customer.id }, redirect_url: redirectUrl }))
      const p = (result as unknown as { portal_session: PortalSession }).portal_session
      return {
        token: p.token, status: p.status, redirect_url: p.redirect_url ?? redirectUrl, object: 'portal_session', id: p.id,
        expires_at: p.expires_at, customer_id: p.customer_id, created_at: p.created_at, access_url: p.access_url,
      }
    },

    async paymentPage({ customer }, { redirectUrl }) {
      const result = await callChargebee('open the payment page', () => cb.hostedPage.managePaymentSources({ customer: { id: customer.id }, redirect_url: redirectUrl }))
      const h = (result as unknown as { hosted_page: HostedPage }).hosted_page
      return {
        url: h.url, updated_at: h.updated_at, type: h.type, state: h.state, resource_version: h.resource_version,
        object: 'hosted_page', id: h.id, expires_at: h.expires_at, embed: h.embed, created_at: h.created_at,
      }
    },
  }
}

/** The Chargebee provider when CHARGEBEE_SITE and CHARGEBEE_API_KEY are configured; otherwise none (its products answer 502). */
export function chargebeeFromConfig(config: Pick<Config, 'CHARGEBEE_SITE' | 'CHARGEBEE_API_KEY' | 'CHARGEBEE_PROTOCOL' | 'CHARGEBEE_HOST_SUFFIX' | 'CHARGEBEE_PORT' | 'CHARGEBEE_TIMEOUT_MS'>): ChargebeeProvider | undefined {
  if (!config.CHARGEBEE_SITE || !config.CHARGEBEE_API_KEY) return undefined
  return createChargebeeProvider({
    site: config.CHARGEBEE_SITE, apiKey: config.CHARGEBEE_API_KEY, protocol: config.CHARGEBEE_PROTOCOL,
    hostSuffix: config.CHARGEBEE_HOST_SUFFIX, port: config.CHARGEBEE_PORT, timeoutMs: config.CHARGEBEE_TIMEOUT_MS,
  })
}
