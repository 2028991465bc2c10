import { randomUUID } from 'node:crypto'
import type { Config } from '../../config.ts'
import type { PaymentSource } from '../../db/tables.ts'
import { ProviderError } from '../../core/errors.ts'
import { cardOf, estimateFrom, itemModels, type CbEstimate, type CbSubscription } from './chargebee.mapping.ts'
import { chargebeeSdk, timedFetchClient } from './chargebee.sdk.ts'
import { createReadBack, type SubscriptionAnswer } from './chargebee.read-back.ts'
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './chargebee.retry.ts'
import { createMoneyCalls, type MoneyCalls } from './chargebee.money.ts'
import { changeParams, createWriter, holdsChange, needsChargebeeLists, stateOf } from './chargebee.writes.ts'
import {
  type BillingState,
  CustomerIdSpent,
  type BillingProvider,
  type ChangeRequest,
  type HostedPage,
  type PortalSession,
  unixSeconds,
} from '../billing/index.ts'

export interface ChargebeeSettings {
  site: string
  apiKey: string
  /** The SDK's host is `<protocol>://<site><hostSuffix>:<port>`; tests point it at a local server. */
  protocol?: 'https' | 'http'
  hostSuffix?: string
  port?: number
  timeoutMs?: number
  retry?: Partial<RetryPolicy>
}

type EstimateParams = Parameters<
  InstanceType<ReturnType<typeof chargebeeSdk>>['estimate']['updateSubscriptionForItems']
>[0]

type WithParams = {
  removeScheduledChanges(id: string, params: object, headers: Record<string, string>): Promise<unknown>
}

export type ChargebeeProvider = BillingProvider & {
  fetchSubscription(id: string): Promise<{ subscription: CbSubscription; card: PaymentSource | null }>
  /** Invoices, credit notes, credits and charges (decisions §9.2); reads back what they compare with. */
  money: MoneyCalls & Pick<ReturnType<typeof createReadBack>, 'invoice' | 'creditNote' | 'customerBalances'>
} & Required<Pick<BillingProvider, 'abandonCustomer'>>

/**
 * The Chargebee provider on the official SDK. Chargebee holds the subscription and moves time,
 * reported by webhook; each call answers Chargebee's state mapped onto the stored row. The SDK's
 * retries are off: writes go through chargebee.writes.ts (idempotency keys, retries, read-back).
 */
export function createChargebeeProvider(settings: ChargebeeSettings): ChargebeeProvider {
  const Chargebee = chargebeeSdk()
  const cb = new Chargebee({
    site: settings.site,
    apiKey: settings.apiKey,
    protocol: settings.protocol ?? 'https',
    hostSuffix: settings.hostSuffix ?? '.chargebee.com',
    port: settings.port ?? 443,
    timeout: settings.timeoutMs ?? 15_000,
    retryConfig: { enabled: false },
    sdkTelemetryEnabled: false,
    httpClient: timedFetchClient,
  })

  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...settings.retry }
  const readBack = createReadBack(cb, policy)
  const write = createWriter(policy)
  const answer = (a: unknown) => a as SubscriptionAnswer
  const next = (stored: BillingState, a: SubscriptionAnswer, prefer?: string | null) => stateOf(stored, a, prefer)
  const current = (id: string) => readBack.subscription(id)

  /** Chargebee's lists are read first when something is taken off. */
  async function paramsOf(s: BillingState, change: ChangeRequest) {
    const needed = needsChargebeeLists(s, change)
    const lists = needed ? await current(s.id) : null
    if (needed && !lists) throw new ProviderError(`Chargebee does not know the subscription ${s.id}`)
    return changeParams(s, change, lists?.subscription ?? null)
  }

  async function estimateWith(s: BillingState, change: ChangeRequest, params: Record<string, unknown>) {
    const result = await retried('estimate the change', () =>
      cb.estimate.updateSubscriptionForItems({ subscription: { id: s.id }, ...params } as EstimateParams),
    )
    return estimateFrom((result as unknown as { estimate: CbEstimate }).estimate, {
      status: s.status,
      currency: change.currency,
      models: itemModels(change.selection),
    })
  }

  /** For calls whose repetition does no harm: retried, never settled. */
  function retried<T>(action: string, call: (headers: Record<string, string>) => Promise<T>): Promise<T> {
    return write(action, randomUUID(), call, async () => null)
  }

  return {
    name: 'chargebee',
    drivesTime: false,
    money: {
      ...createMoneyCalls(cb, write, readBack),
      invoice: readBack.invoice,
      creditNote: readBack.creditNote,
      customerBalances: readBack.customerBalances,
    },

    async createSubscription({ subscription: s, customer }) {
      // Keys derive from our ids, so a retry is the same request at Chargebee. A replay may be of an
      // attempt whose customer was deleted since: read back, a missing customer means the id is spent.
      const exists = async () => ((await readBack.customerExists(customer.id)) ? {} : null)
      const made = await write(
        'create the customer',
        `customer-create:${customer.id}`,
        (headers) =>
          cb.customer.create(
            {
              id: customer.id,
              company: customer.name,
              ...(customer.email ? { email: customer.email } : {}),
              billing_address: { company: customer.name, country: customer.country },
            },
            headers,
          ),
        exists,
      ).catch(async (err: Error) => {
        // Made by an earlier attempt whose key Chargebee no longer keeps: found by id, or spent if deleted.
        if (!/duplicate_entry/.test(err.message)) throw err
        if (!(await readBack.customerExists(customer.id))) throw new CustomerIdSpent(customer.id)
        return {}
      })
      if (isReplay(made) && !(await readBack.customerExists(customer.id))) throw new CustomerIdSpent(customer.id)
      const created = await write(
        'create the subscription',
        `subscription-create:${s.id}`,
        (headers) =>
          cb.subscription
            .createWithItems(
              customer.id,
              {
                id: s.id,
                subscription_items: [{ item_price_id: s.plan_sku, quantity: s.plan_quantity }],
                ...(s.trial_end ? { trial_end: unixSeconds(s.trial_end)! } : {}),
              },
              headers,
            )
            .then(answer),
        () => current(s.id),
      ).catch(async (err: Error) => {
        if (!/duplicate_entry/.test(err.message)) throw err
        const earlier = await current(s.id)
        if (!earlier) throw new CustomerIdSpent(customer.id)
        if (earlier.subscription.customer_id !== customer.id) throw err
        return earlier
      })
      if (isReplay(created) && !(await current(s.id))) throw new CustomerIdSpent(customer.id)
      return next(s, answer(created))
    },

    async abandonCustomer(customerId) {
      // Chargebee deletes a customer's subscriptions with it.
      await write(
        'delete the customer',
        `customer-delete:${customerId}`,
        (headers) => cb.customer.delete(customerId, {}, headers),
        async () => ((await readBack.customerExists(customerId)) ? null : {}),
      ).catch((err) => {
        if (!/resource_not_found/.test(String((err as Error).message))) throw err
      })
    },

    async fetchSubscription(id) {
      const a = answer(await retried('read the subscription', () => cb.subscription.retrieve(id)))
      return { subscription: a.subscription, card: cardOf(a.card) }
    },

    async retrieve(s) {
      return next(s, answer(await retried('read the subscription', () => cb.subscription.retrieve(s.id))))
    },

    async estimate(s, change) {
      return estimateWith(s, change, await paramsOf(s, change))
    },

    async changeSubscription(s, change) {
      // The estimate of the very change applied: what the client is told it pays.
      const params = await paramsOf(s, change)
      const estimate = await estimateWith(s, change, params)
      const updated = await write(
        'change the subscription',
        randomUUID(),
        (headers) => cb.subscription.updateForItems(s.id, params, headers).then(answer),
        async () => {
          const now = await current(s.id)
          return now && holdsChange(now.subscription, s, change) ? now : null
        },
      )
      return { state: next(s, answer(updated), change.selection.coupon?.code ?? null), estimate }
    },

    async scheduleChange(s, change, scheduled) {
      const params = { ...(await paramsOf(s, change)), change_option: 'end_of_term' as const }
      const { prorate: _, invoice_immediately: __, ...atTermEnd } = params
      const estimate = await estimateWith(s, change, atTermEnd)
      const updated = await write(
        'schedule the change',
        randomUUID(),
        (headers) => cb.subscription.updateForItems(s.id, atTermEnd, headers).then(answer),
        async () => {
          const now = await current(s.id)
          return now?.subscription.has_scheduled_changes ? now : null
        },
      )
      return {
        state: { ...next({ ...s, scheduled_change: scheduled }, answer(updated)), scheduled_change: scheduled },
        estimate,
      }
    },

    async removeScheduledChanges(s) {
      const removed = await write(
        'remove the scheduled changes',
        randomUUID(),
        // The SDK's types leave out the parameters its request takes before the headers.
        (headers) => (cb.subscription as unknown as WithParams).removeScheduledChanges(s.id, {}, headers).then(answer),
        async () => {
          const now = await current(s.id)
          return now && !now.subscription.has_scheduled_changes ? now : null
        },
      )
      return { ...next(s, answer(removed)), scheduled_change: null }
    },

    async pause(s, pause) {
      const params = {
        pause_option: pause.option,
        ...(pause.resumeDate ? { resume_date: unixSeconds(pause.resumeDate)! } : {}),
      }
      const paused = await write(
        'pause the subscription',
        randomUUID(),
        (headers) => cb.subscription.pause(s.id, params, headers).then(answer),
        async () => {
          const now = await current(s.id)
          return now && (now.subscription.status === 'paused' || typeof now.subscription.pause_date === 'number')
            ? now
            : null
        },
      )
      return next(s, answer(paused))
    },

    async resume(s) {
      // Chargebee starts the new term and invoices it; the invoice arrives by webhook.
      const resumed = await write(
        'resume the subscription',
        randomUUID(),
        (headers) =>
          cb.subscription
            .resume(s.id, { resume_option: 'immediately', charges_handling: 'invoice_immediately' }, headers)
            .then(answer),
        async () => {
          const now = await current(s.id)
          return now && now.subscription.status === 'active' ? now : null
        },
      )
      return next(s, answer(resumed))
    },

    async cancel(s, cancellation) {
      const endOfTerm = cancellation.endOfTerm
      // Chargebee credits the unused part itself (copied back by webhook); at term end nothing is unused.
      const params = endOfTerm
        ? { cancel_option: 'end_of_term' as const }
        : { cancel_option: 'immediately' as const, credit_option_for_current_term_charges: cancellation.creditOption }
      const cancelled = await write(
        'cancel the subscription',
        randomUUID(),
        (headers) => cb.subscription.cancelForItems(s.id, params, headers).then(answer),
        async () => {
          const now = await current(s.id)
          const done =
            now &&
            (now.subscription.status === 'cancelled' ||
              (endOfTerm && typeof now.subscription.cancelled_at === 'number'))
          return done ? now : null
        },
      )
      // Chargebee's reason codes are a configured list; ours stay here.
      return next(
        { ...s, cancellation_reason: cancellation.reason, cancellation_message: cancellation.message },
        answer(cancelled),
      )
    },

    async removeScheduledCancellation(s) {
      const removed = await write(
        'remove the scheduled cancellation',
        randomUUID(),
        (headers) => cb.subscription.removeScheduledCancellation(s.id, {}, headers).then(answer),
        async () => {
          const now = await current(s.id)
          return now && now.subscription.status !== 'cancelled' && now.subscription.cancelled_at === undefined
            ? now
            : null
        },
      )
      return next(s, answer(removed))
    },

    async addPaymentSource() {
      // Chargebee takes a card only from its own pages or a gateway token.
      throw new ProviderError(
        'A Chargebee subscription takes cards through the payment page (GET ' +
          '/api/v1/subscription/{subscription_customer_id}/payment_page/)',
        'conflict',
      )
    },

    async managerPage({ subscription: s }, { redirectUrl }) {
      const result = await retried('open the subscription page', (headers) =>
        cb.hostedPage.checkoutExistingForItems(
          {
            subscription: { id: s.id },
            subscription_items: [
              { item_price_id: s.plan_sku, quantity: s.plan_quantity },
              ...s.addons.map((a) => ({ item_price_id: a.id, quantity: a.quantity })),
            ],
            redirect_url: redirectUrl,
          },
          headers,
        ),
      )
      const page = (result as unknown as { hosted_page: HostedPage }).hosted_page
      return { url: page.url, expires_at: page.expires_at }
    },

    async portalSession({ customer }, { redirectUrl }) {
      const result = await retried('open a portal session', (headers) =>
        cb.portalSession.create({ customer: { id: customer.id }, redirect_url: redirectUrl }, headers),
      )
      const p = (result as unknown as { portal_session: PortalSession }).portal_session
      return {
        token: p.token,
        status: p.status,
        redirect_url: p.redirect_url ?? redirectUrl,
        object: 'portal_session',
        id: p.id,
        expires_at: p.expires_at,
        customer_id: p.customer_id,
        created_at: p.created_at,
        access_url: p.access_url,
      }
    },

    async paymentPage({ customer }, { redirectUrl }) {
      const result = await retried('open the payment page', (headers) =>
        cb.hostedPage.managePaymentSources({ customer: { id: customer.id }, redirect_url: redirectUrl }, headers),
      )
      const h = (result as unknown as { hosted_page: HostedPage }).hosted_page
      return {
        url: h.url,
        updated_at: h.updated_at,
        type: h.type,
        state: h.state,
        resource_version: h.resource_version,
        object: 'hosted_page',
        id: h.id,
        expires_at: h.expires_at,
        embed: h.embed,
        created_at: h.created_at,
      }
    },
  }
}

function isReplay(result: unknown): boolean {
  const flag = (result as { isIdempotencyReplayed?: unknown } | null)?.isIdempotencyReplayed
  return flag === true || flag === 'true'
}

/** Configured by CHARGEBEE_SITE and CHARGEBEE_API_KEY; otherwise none (its products answer 502). */
export function chargebeeFromConfig(
  config: Pick<
    Config,
    | 'CHARGEBEE_SITE'
    | 'CHARGEBEE_API_KEY'
    | 'CHARGEBEE_PROTOCOL'
    | 'CHARGEBEE_HOST_SUFFIX'
    | 'CHARGEBEE_PORT'
    | 'CHARGEBEE_TIMEOUT_MS'
    | 'CHARGEBEE_RETRIES'
    | 'CHARGEBEE_RETRY_DELAY_MS'
  >,
): ChargebeeProvider | undefined {
  if (!config.CHARGEBEE_SITE || !config.CHARGEBEE_API_KEY) return undefined
  return createChargebeeProvider({
    site: config.CHARGEBEE_SITE,
    apiKey: config.CHARGEBEE_API_KEY,
    protocol: config.CHARGEBEE_PROTOCOL,
    hostSuffix: config.CHARGEBEE_HOST_SUFFIX,
    port: config.CHARGEBEE_PORT,
    timeoutMs: config.CHARGEBEE_TIMEOUT_MS,
    retry: { attempts: config.CHARGEBEE_RETRIES + 1, delayMs: config.CHARGEBEE_RETRY_DELAY_MS },
  })
}
