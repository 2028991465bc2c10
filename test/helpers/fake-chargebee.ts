import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { fakeChargebeeSync } from './fake-chargebee-sync.ts'
import { fakeChargebeeMoney } from './fake-chargebee-money.ts'
import { fakeChargebeeSchedules } from './fake-chargebee-schedules.ts'
import { addPeriod, CbError, fakeChargebeeBilling, seconds } from './fake-chargebee-billing.ts'

/**
 * A fake Chargebee site on 127.0.0.1 (a random port) that speaks the API v2 protocol the
 * official SDK uses: HTTP Basic with the API key as user name, form-encoded bodies in
 * Chargebee's bracket notation (`subscription_items[item_price_id][0]=...`), answers wrapped
 * by resource (`{"subscription": {...}, "customer": {...}}`), its error JSON
 * (`{message, type, api_error_code, error_code, http_status_code}`) and 429 with Retry-After.
 *
 * It keeps customers, subscriptions, item prices and coupons in memory, records every request,
 * can be told to fail the next matching requests, and builds webhook events from its state.
 * Times come from the test's clock, so that they agree with the app's.
 */
/** Item price object (apidocs.chargebee.com/docs/api/item_prices): `tiers[]` for tiered, volume and stairstep. */
export interface FakeItemPrice {
  id: string
  price: number
  period_unit: 'month' | 'year'
  item_type: 'plan' | 'addon'
  pricing_model?: 'flat_fee' | 'per_unit' | 'tiered' | 'volume' | 'stairstep'
  /** The last tier has no ending_unit. */
  tiers?: { starting_unit: number; ending_unit?: number; price: number }[]
}
export interface FakeCoupon {
  id: string
  discount_type: 'percentage' | 'fixed_amount'
  discount_percentage?: number
  discount_amount?: number
  /** Coupon object (apidocs.chargebee.com/docs/api/coupons): forever (default), one_time, limited_period for `duration_month` months. */
  duration_type?: 'forever' | 'one_time' | 'limited_period'
  duration_month?: number
}
export interface FakeRequest {
  method: string
  path: string
  params: Record<string, any>
  apiKey: string | null
  idempotencyKey?: string
}
/**
 * An injected failure. `when: 'after'`: the request is applied first (and its answer kept under
 * its idempotency key), then the failure is answered: Chargebee failing after it committed.
 * `hang`: no answer at all (the connection stays open; the client's timeout ends it), applied or
 * not by `when`. Otherwise (`when: 'before'`, the default) nothing is applied.
 */
export interface FakeFailure {
  status: number
  api_error_code?: string
  type?: string
  message?: string
  retryAfter?: number
  match?: RegExp
  times?: number
  when?: 'before' | 'after'
  hang?: boolean
}

type Obj = Record<string, any>

/** How long Chargebee keeps an answer under its idempotency key. */
const KEY_LIFETIME_MS = 24 * 3_600_000

/** `a[b][0]=x` → `{a: [{b: 'x'}]}`, `a[0]=x` → `{a: ['x']}`, `a[b]=x` → `{a: {b: 'x'}}`: Chargebee's form notation. */
export function parseForm(body: string): Obj {
  const out: Obj = {}
  for (const [key, value] of new URLSearchParams(body)) {
    const [name, ...rest] = key.replace(/\]/g, '').split('[') as [string, ...string[]]
    if (rest.length === 0) out[name] = value
    else if (rest.length === 1 && /^\d+$/.test(rest[0]!)) (out[name] ??= [])[Number(rest[0])] = value
    else if (rest.length === 1) (out[name] ??= {})[rest[0]!] = value
    else if (/^\d+$/.test(rest[1]!)) (((out[name] ??= [])[Number(rest[1])] ??= {}) as Obj)[rest[0]!] = value
    else ((out[name] ??= {})[rest[0]!] ??= {})[rest[1]!] = value
  }
  return out
}

export async function startFakeChargebee(options: { apiKey: string; now: () => Date; site?: string }) {
  const site = options.site ?? 'acme-test'
  const customers = new Map<string, Obj>()
  const subscriptions = new Map<string, Obj>()
  const cards = new Map<string, Obj>()
  const itemPrices = new Map<string, FakeItemPrice>()
  const coupons = new Map<string, FakeCoupon>()
  const requests: FakeRequest[] = []
  const failures: FakeFailure[] = []
  // Answers kept by idempotency key (see the request handler), with when they were kept (real time).
  const idempotent = new Map<string, { status: number; body: unknown; at: number }>()
  // The ids of deleted customers and subscriptions: taken for good (the stricter reading of Chargebee, which our code must survive).
  const deletedIds = new Set<string>()
  const hanging = new Set<http.ServerResponse>()
  let version = 0
  let sequence = 0
  const now = () => seconds(options.now())
  // Chargebee's resource_version: a millisecond time stamp, increasing with every change.
  const nextVersion = () => (version = Math.max(version + 1, options.now().getTime()))
  const nextId = (prefix: string) => `${prefix}_${(++sequence).toString(36)}${randomBytes(4).toString('hex')}`

  const notFound = (what: string, param?: string) =>
    new CbError(404, 'resource_not_found', `${what} not found`, 'invalid_request', param)
  const invalidState = (message: string) => new CbError(409, 'invalid_state_for_request', message, 'invalid_request')
  // Items, coupons and what a change bills: fake-chargebee-billing.ts.
  const { itemsFrom, couponsFrom, mergedItems, mergedCoupons, invoiceFor, changeBilling } = fakeChargebeeBilling({
    itemPrices,
    coupons,
    customers,
    now,
  })

  function touch(s: Obj) {
    s.resource_version = nextVersion()
    s.updated_at = now()
    return s
  }

  function wrap(s: Obj): Obj {
    const customer = customers.get(s.customer_id)
    const card = cards.get(s.customer_id)
    return { subscription: s, customer, ...(card ? { card } : {}) }
  }

  function subscriptionOf(id: string): Obj {
    const s = subscriptions.get(id)
    if (!s) throw notFound(`Subscription ${id}`)
    return s
  }

  const routes: [string, RegExp, (m: RegExpMatchArray, p: Obj) => Obj][] = [
    // Create a customer (apidocs.chargebee.com/docs/api/customers#create_a_customer): a given id that exists is 400 duplicate_entry.
    [
      'POST',
      /^\/customers$/,
      (_m, p) => {
        if (p.id && (customers.has(p.id) || deletedIds.has(p.id)))
          throw new CbError(400, 'duplicate_entry', `The value ${p.id} is already present.`, 'invalid_request', 'id')
        const customer = {
          id: p.id ?? nextId('cus'),
          company: p.company,
          email: p.email,
          billing_address: p.billing_address,
          auto_collection: 'on',
          created_at: now(),
          updated_at: now(),
          resource_version: nextVersion(),
          deleted: false,
          object: 'customer',
          card_status: 'no_card',
        }
        customers.set(customer.id, customer)
        return { customer }
      },
    ],
    // Retrieve a customer (apidocs.chargebee.com/docs/api/customers#retrieve_a_customer): 404 resource_not_found when unknown.
    [
      'GET',
      /^\/customers\/([^/]+)$/,
      (m) => {
        const customer = customers.get(decodeURIComponent(m[1]!))
        if (!customer) throw notFound(`Customer ${decodeURIComponent(m[1]!)}`)
        return { customer, ...(cards.has(customer.id) ? { card: cards.get(customer.id) } : {}) }
      },
    ],
    // Delete a customer (apidocs.chargebee.com/docs/api/customers#delete_a_customer): its subscriptions are deleted with it.
    [
      'POST',
      /^\/customers\/([^/]+)\/delete$/,
      (m) => {
        const id = decodeURIComponent(m[1]!)
        const customer = customers.get(id)
        if (!customer) throw notFound(`Customer ${id}`)
        customers.delete(id)
        deletedIds.add(id)
        for (const [sid, sub] of subscriptions)
          if (sub.customer_id === id) {
            subscriptions.delete(sid)
            deletedIds.add(sid)
          }
        return { customer: { ...customer, deleted: true } }
      },
    ],
    // Create subscription for items (apidocs.chargebee.com/docs/api/subscriptions#create_subscription_for_items): in_trial until a future
    // trial_end, else active for a term; an unknown item price is 404 resource_not_found naming the parameter.
    [
      'POST',
      /^\/customers\/([^/]+)\/subscription_for_items$/,
      (m, p) => {
        const customerId = decodeURIComponent(m[1]!)
        if (!customers.has(customerId)) throw notFound(`Customer ${customerId}`)
        if (p.id && (subscriptions.has(p.id) || deletedIds.has(p.id)))
          throw new CbError(400, 'duplicate_entry', `The value ${p.id} is already present.`, 'invalid_request', 'id')
        const items = itemsFrom(p)
        const plan = items.find((i) => i.item_type === 'plan')
        if (!plan)
          throw new CbError(
            400,
            'param_wrong_value',
            'subscription_items : A plan item price is required',
            'invalid_request',
            'subscription_items',
          )
        const start = now()
        const trialEnd = p.trial_end ? Number(p.trial_end) : undefined
        const unit = itemPrices.get(plan.item_price_id)!.period_unit
        const s: Obj = {
          id: p.id ?? nextId('sub'),
          customer_id: customerId,
          status: trialEnd && trialEnd > start ? 'in_trial' : 'active',
          subscription_items: items,
          coupons: couponsFrom(p),
          currency_code: 'EUR',
          billing_period: 1,
          billing_period_unit: unit,
          created_at: start,
          started_at: start,
          deleted: false,
          object: 'subscription',
          due_invoices_count: 0,
          has_scheduled_changes: false,
        }
        if (s.status === 'in_trial')
          Object.assign(s, {
            trial_start: start,
            trial_end: trialEnd,
            current_term_start: start,
            current_term_end: trialEnd,
            next_billing_at: trialEnd,
          })
        else
          Object.assign(s, {
            current_term_start: start,
            current_term_end: addPeriod(start, unit),
            next_billing_at: addPeriod(start, unit),
            activated_at: start,
          })
        subscriptions.set(s.id, touch(s))
        return wrap(s)
      },
    ],
    // Retrieve a subscription (apidocs.chargebee.com/docs/api/subscriptions#retrieve_a_subscription): with its customer and card.
    ['GET', /^\/subscriptions\/([^/]+)$/, (m) => wrap(subscriptionOf(decodeURIComponent(m[1]!)))],
    // Update subscription for items (apidocs.chargebee.com/docs/api/subscriptions#update_subscription_for_items): answers the subscription and the
    // invoice and credit notes the change made; a cancelled subscription is 409 invalid_state_for_request.
    [
      'POST',
      /^\/subscriptions\/([^/]+)\/update_for_items$/,
      (m, p) => {
        const s = subscriptionOf(decodeURIComponent(m[1]!))
        if (s.status === 'cancelled') throw invalidState('The subscription is cancelled and cannot be changed')
        const items = mergedItems(s, p)
        const couponList = mergedCoupons(s, p)
        if (p.change_option === 'end_of_term') return schedules.scheduleChange(s, items, couponList)
        schedules.unschedule(s)
        const billed = changeBilling(s, items, couponList, p)
        s.subscription_items = items
        s.coupons = couponList
        // The documents the change made: the invoice and credit notes its estimate announced.
        const invoice = billed.invoice_estimate
          ? { ...billed.invoice_estimate, object: 'invoice', id: nextId('inv'), subscription_id: s.id }
          : undefined
        const notes = ((billed.credit_note_estimates ?? []) as Obj[]).map((c) => ({
          ...c,
          object: 'credit_note',
          id: nextId('cn'),
          subscription_id: s.id,
        }))
        // Kept with the sync half's documents, so that the list and retrieve calls answer them too.
        if (invoice) sync.invoices.set(invoice.id as string, touch({ date: now(), ...invoice }))
        for (const note of notes) sync.creditNotes.set(note.id as string, touch({ date: now(), ...note }))
        // A coupon that discounted the invoice counts it; a one_time coupon is spent and leaves the subscription.
        if (invoice) {
          const used = new Set((invoice.discounts as Obj[]).map((d) => d.entity_id))
          for (const c of s.coupons as Obj[]) if (used.has(c.coupon_id)) c.applied_count += 1
          s.coupons = (s.coupons as Obj[]).filter(
            (c) => !(used.has(c.coupon_id) && coupons.get(c.coupon_id)?.duration_type === 'one_time'),
          )
        }
        return {
          ...wrap(touch(s)),
          ...(invoice ? { invoice } : {}),
          ...(notes.length > 0 ? { credit_notes: notes } : {}),
        }
      },
    ],
    // Cancel subscription for items (apidocs.chargebee.com/docs/api/subscriptions#cancel_subscription_for_items): end_of_term keeps a future
    // cancelled_at (non_renewing, or in_trial ending at the trial's end); immediately cancels now.
    [
      'POST',
      /^\/subscriptions\/([^/]+)\/cancel_for_items$/,
      (m, p) => {
        const s = subscriptionOf(decodeURIComponent(m[1]!))
        if (s.status === 'cancelled') throw invalidState('The subscription is already cancelled')
        const endOfTerm = p.cancel_option ? p.cancel_option === 'end_of_term' : p.end_of_term === 'true'
        schedules.unschedule(s)
        if (endOfTerm) {
          if (s.status === 'in_trial') s.cancelled_at = s.trial_end
          else
            Object.assign(s, { status: 'non_renewing', cancelled_at: s.current_term_end, next_billing_at: undefined })
          s.cancel_schedule_created_at = now()
        } else {
          Object.assign(s, {
            status: 'cancelled',
            cancelled_at: now(),
            next_billing_at: undefined,
            current_term_start: undefined,
            current_term_end: undefined,
          })
        }
        return wrap(touch(s))
      },
    ],
    // Remove scheduled cancellation (apidocs.chargebee.com/docs/api/subscriptions#remove_scheduled_cancellation): none scheduled is 409.
    [
      'POST',
      /^\/subscriptions\/([^/]+)\/remove_scheduled_cancellation$/,
      (m) => {
        const s = subscriptionOf(decodeURIComponent(m[1]!))
        if (s.status === 'cancelled' || s.cancelled_at === undefined)
          throw invalidState('No cancellation is scheduled for this subscription')
        if (s.status === 'non_renewing') Object.assign(s, { status: 'active', next_billing_at: s.current_term_end })
        delete s.cancelled_at
        delete s.cancel_schedule_created_at
        return wrap(touch(s))
      },
    ],
    // Update subscription for items estimate (apidocs.chargebee.com/docs/api/estimates#update_subscription_for_items_estimate): the same
    // parameters as the update, nothing changed; what it bills as changeBilling says.
    [
      'POST',
      /^\/estimates\/update_subscription_for_items$/,
      (_m, p) => {
        const s = subscriptionOf(p.subscription?.id)
        if (s.status === 'cancelled') throw invalidState('The subscription is cancelled and cannot be changed')
        return {
          estimate: {
            object: 'estimate',
            created_at: now(),
            subscription_estimate: {
              id: s.id,
              status: s.status,
              next_billing_at: s.next_billing_at ?? undefined,
              currency_code: 'EUR',
              object: 'subscription_estimate',
            },
            ...(p.change_option === 'end_of_term'
              ? { next_invoice_estimate: invoiceFor(mergedItems(s, p), mergedCoupons(s, p)) }
              : changeBilling(s, mergedItems(s, p), mergedCoupons(s, p), p)),
          },
        }
      },
    ],
    // Checkout existing subscription and Manage payment sources (apidocs.chargebee.com/docs/api/hosted_pages): a hosted_page in state created.
    [
      'POST',
      /^\/hosted_pages\/(checkout_existing_for_items|manage_payment_sources)$/,
      (m, p) => {
        const type = m[1] === 'manage_payment_sources' ? 'manage_payment_sources' : 'checkout_existing'
        if (type === 'checkout_existing') {
          subscriptionOf(p.subscription?.id)
          itemsFrom(p)
        } else if (!customers.has(p.customer?.id)) throw notFound(`Customer ${p.customer?.id}`)
        const id = nextId('hp')
        const created = now()
        return {
          hosted_page: {
            id,
            type,
            url: `https://${site}.chargebee.com/pages/v4/${id}/`,
            state: 'created',
            embed: false,
            created_at: created,
            expires_at: created + 3 * 86_400,
            updated_at: created,
            resource_version: nextVersion(),
            object: 'hosted_page',
          },
        }
      },
    ],
    // Create a portal session (apidocs.chargebee.com/docs/api/portal_sessions#create_a_portal_session): valid for an hour until first used.
    [
      'POST',
      /^\/portal_sessions$/,
      (_m, p) => {
        const customerId = p.customer?.id
        if (!customers.has(customerId)) throw notFound(`Customer ${customerId}`)
        const token = randomBytes(16).toString('hex')
        const created = now()
        return {
          portal_session: {
            id: nextId('portal'),
            token,
            access_url: `https://${site}.chargebee.com/portal/v2/access/${token}`,
            redirect_url: p.redirect_url,
            status: 'created',
            created_at: created,
            expires_at: created + 3600,
            object: 'portal_session',
            customer_id: customerId,
          },
        }
      },
    ],
  ]

  // The sync half's objects (invoices, credit notes, Product Catalog 1.0 copies): fake-chargebee-sync.ts.
  const schedules = fakeChargebeeSchedules({ routes, now, touch, wrap, subscriptionOf })
  const sync = fakeChargebeeSync({ routes, touch, nextId, now, notFound, subscriptionOf, invoiceFor })
  // Payments, voids, write-offs, refunds, credit notes, credits, charges: fake-chargebee-money.ts.
  const money = fakeChargebeeMoney({ routes, touch, nextId, now, notFound, customers, cards, subscriptionOf, ...sync })

  function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'content-type': 'application/json;charset=utf-8', ...headers })
    res.end(JSON.stringify(body))
  }

  /** Chargebee's error JSON (apidocs.chargebee.com/docs/api/error_handling): message, type, api_error_code, param, error_code, http_status_code; 429 with Retry-After. */
  function sendError(
    res: http.ServerResponse,
    status: number,
    code: string,
    message: string,
    type?: string,
    param?: string,
    headers: Record<string, string> = {},
  ) {
    send(
      res,
      status,
      {
        message,
        ...(type ? { type } : {}),
        api_error_code: code,
        ...(param ? { param } : {}),
        error_code: code,
        http_status_code: status,
      },
      headers,
    )
  }

  const server = http.createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk) => {
      body += chunk
    })
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake')
      const auth = /^Basic (.+)$/.exec(req.headers.authorization ?? '')
      const apiKey = auth ? Buffer.from(auth[1]!, 'base64').toString('utf8').replace(/:$/, '') : null
      const path = url.pathname.replace(/^\/api\/v2/, '')
      const params = req.method === 'GET' ? parseForm(url.search.slice(1)) : parseForm(body)
      const key = req.method === 'POST' ? (req.headers['chargebee-idempotency-key'] as string | undefined) : undefined
      requests.push({ method: req.method ?? 'GET', path, params, apiKey, ...(key ? { idempotencyKey: key } : {}) })
      if (apiKey !== options.apiKey)
        return sendError(
          res,
          401,
          'api_authentication_failed',
          'Sorry, authentication failed. Invalid api key',
          undefined,
        )
      if (!url.pathname.startsWith('/api/v2/'))
        return sendError(res, 404, 'resource_not_found', 'Sorry, we could not find that resource')
      const failure = failures.find((f) => !f.match || f.match.test(`${req.method} ${path}`))
      if (failure && --failure.times! <= 0) failures.splice(failures.indexOf(failure), 1)
      const fail = () => {
        if (failure!.hang) {
          // Closed by the client (its timeout): no longer pending.
          res.on('close', () => hanging.delete(res))
          return void hanging.add(res)
        }
        const headers: Record<string, string> =
          failure!.retryAfter !== undefined ? { 'retry-after': String(failure!.retryAfter) } : {}
        sendError(
          res,
          failure!.status,
          failure!.api_error_code ?? 'internal_error',
          failure!.message ?? 'Injected failure',
          failure!.type,
          undefined,
          headers,
        )
      }
      if (failure && failure.when !== 'after') return fail()
      // Idempotency (apidocs.chargebee.com/docs/api/idempotency, as the SDK's README links it): a POST
      // repeated with a key Chargebee has answered gets that first answer again, with the header
      // chargebee-idempotency-replayed: true (read by the SDK as isIdempotencyReplayed,
      // chargebee/cjs/coreCommon.js), and is not applied again, even when what it made was deleted
      // since (a replay changes nothing). A key is kept 24 h; a 5xx is not kept: the retry runs.
      const stored = key ? idempotent.get(key) : undefined
      const kept = stored && Date.now() - stored.at < KEY_LIFETIME_MS ? stored : undefined
      if (kept && !failure) {
        res.writeHead(kept.status, {
          'content-type': 'application/json;charset=utf-8',
          'chargebee-idempotency-replayed': 'true',
        })
        return void res.end(JSON.stringify(kept.body))
      }
      const route = routes.find(([method, pattern]) => method === req.method && pattern.test(path))
      if (!route) return sendError(res, 404, 'resource_not_found', `No API ${req.method} ${path}`)
      let status = 200
      let answer: unknown
      try {
        answer = kept ? kept.body : route[2](path.match(route[1])!, params)
      } catch (err) {
        if (!(err instanceof CbError))
          return sendError(res, 500, 'internal_error', `Fake failure: ${(err as Error).message}`, 'internal_error')
        status = err.status
        answer = {
          message: err.message,
          type: err.type,
          api_error_code: err.code,
          ...(err.param ? { param: err.param } : {}),
          error_code: err.code,
          http_status_code: err.status,
        }
      }
      if (key && !kept) idempotent.set(key, { status, body: answer, at: Date.now() })
      if (failure) return fail()
      send(res, status, answer)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port

  return {
    port,
    site,
    /** App settings that point the SDK here: `http://127.0.0.1:<port>/api/v2` (site "127.0.0.1", empty host suffix). */
    config: {
      CHARGEBEE_SITE: '127.0.0.1',
      CHARGEBEE_HOST_SUFFIX: '',
      CHARGEBEE_PROTOCOL: 'http' as const,
      CHARGEBEE_PORT: port,
      CHARGEBEE_API_KEY: options.apiKey,
    },
    requests,
    customers,
    subscriptions,
    addItemPrice(p: FakeItemPrice) {
      itemPrices.set(p.id, p)
    },
    addCoupon(c: FakeCoupon) {
      coupons.set(c.id, c)
    },
    /** The next `times` (default 1) requests matching `match` (`POST /subscriptions/...`) answer this error. */
    fail(failure: FakeFailure) {
      failures.push({ times: 1, ...failure })
    },
    clearFailures() {
      failures.length = 0
    },
    /** Chargebee-side changes (its scheduler, its pages, its UI): mutate a subscription, bumping its resource_version. */
    change(id: string, fn: (s: Obj) => void) {
      const s = subscriptionOf(id)
      fn(s)
      return structuredClone(touch(s))
    },
    addCard(customerId: string, card: { brand: string; last4: string; expiry_month: number; expiry_year: number }) {
      const stored = {
        object: 'card',
        customer_id: customerId,
        card_type: card.brand,
        last4: card.last4,
        expiry_month: card.expiry_month,
        expiry_year: card.expiry_year,
        status: 'valid',
        gateway: 'chargebee',
      }
      cards.set(customerId, stored)
      return {
        id: nextId('pm'),
        customer_id: customerId,
        type: 'card',
        status: 'valid',
        object: 'payment_source',
        card: {
          brand: card.brand,
          last4: card.last4,
          expiry_month: card.expiry_month,
          expiry_year: card.expiry_year,
          funding_type: 'credit',
          object: 'card',
        },
      }
    },
    ...sync,
    ...money,
    /** A webhook event as Chargebee posts it, with a snapshot of the subscription as it is now (or the given content). */
    event(
      eventType: string,
      content: {
        subscription?: Obj
        subscriptionId?: string
        customerId?: string
        payment_source?: Obj
        card?: Obj
        invoice?: Obj
        credit_note?: Obj | Obj[]
        transaction?: Obj
      },
      occurredAt = now(),
    ) {
      const s =
        content.subscription ??
        (content.subscriptionId ? structuredClone(subscriptionOf(content.subscriptionId)) : undefined)
      const customerId = s?.customer_id ?? content.customerId
      return {
        id: nextId('ev'),
        occurred_at: occurredAt,
        source: 'scheduled_job',
        object: 'event',
        api_version: 'v2',
        event_type: eventType,
        webhook_status: 'scheduled',
        content: {
          ...(s ? { subscription: s } : {}),
          ...(customerId && customers.has(customerId) ? { customer: structuredClone(customers.get(customerId)) } : {}),
          ...(content.payment_source ? { payment_source: content.payment_source } : {}),
          // Payment, invoice and credit note events (the SDK's WebhookEvent.d.ts, e.g. PaymentFailedContent: transaction, invoice, customer, subscription, card).
          ...(content.card ? { card: content.card } : {}),
          ...(content.invoice ? { invoice: content.invoice } : {}),
          ...(content.credit_note ? { credit_note: content.credit_note } : {}),
          ...(content.transaction ? { transaction: content.transaction } : {}),
        },
      }
    },
    /** Ends the requests left hanging by a `hang` failure (their clients timed out long ago). */
    /** The requests a `hang` failure holds unanswered whose client still waits. */
    pendingHanging: () => hanging.size,
    /** Chargebee's 24 h of a kept idempotency key passed, for every key. */
    expireIdempotencyKeys() {
      for (const entry of idempotent.values()) entry.at = -Infinity
    },
    releaseHanging() {
      for (const res of hanging) res.destroy()
      hanging.clear()
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

export type FakeChargebee = Awaited<ReturnType<typeof startFakeChargebee>>
