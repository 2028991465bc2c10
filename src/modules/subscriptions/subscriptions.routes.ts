import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { App } from '../../http/app-types.ts'
import { principalOf } from '../../http/auth.ts'
import { CompanyParams, ErrorBody } from '../../http/schemas.ts'
import type { SubscriptionsService } from './subscriptions.service.ts'
import {
  CancelQuery,
  CompanyOrSubscriptionParams,
  CompanySubscriptionParams,
  EstimateParams,
  EstimateQuery,
  EstimateResponse,
  PaymentSourceInput,
  SubscriptionCancellationData,
  SubscriptionDetails,
  SubscriptionPause,
  SubscriptionResume,
  SubscriptionStatusBody,
  SubscriptionUpdate,
  UpdateResponse,
} from './subscriptions.schemas.ts'

const BASE = '/api/v1/subscription'
const NoBody = Type.Null({ description: 'No body' })

/** Spec §4: every request body is optional as a whole; none at all reads as `{}`. */
async function emptyBodyAsObject(request: FastifyRequest) {
  if (request.body === undefined || request.body === null) request.body = {}
}

/** The spec's "200 no body" of cancellation-related calls. */
function ok(reply: FastifyReply) {
  return reply.code(200).send()
}

/** A company's subscription: spec endpoints 2, 3, 6, 8, 9, 14, and the card used at the trial's end. */
export async function subscriptionsRoutes(app: App, { service }: { service: SubscriptionsService }) {
  const tags = ['Subscription']
  const company = { access: { area: 'company' } } as const
  // Routes that call the company's billing provider (docs/billing.md): it may fail on its own (502).
  const companyAtProvider = { ...company, billingProvider: true } as const

  app.put(
    `${BASE}/:company_id_or_subscription_id/cancel`,
    {
      config: companyAtProvider,
      preValidation: emptyBodyAsObject,
      schema: {
        operationId: 'cancelSubscription',
        tags,
        summary: 'Cancel the subscription (2), at the end of the term by default',
        description:
          'The path names the company or its subscription. end_of_term=true (default): an active subscription ' +
          'becomes non_renewing and ends at current_term_end; one in trial stays in_trial and ends cancelled at ' +
          "trial_end. end_of_term=false: cancelled now, and the unused share of the current term's paid invoice " +
          'is credited, tax included, as one refundable credit note (reason subscription_cancellation) unless ' +
          'the body says credit_option: none (a trial or an unpaid term credits nothing). 400 naming the field ' +
          'for a credit_option other than prorate or none. 409 when already cancelled, or (at end of term) when ' +
          'a cancellation is already scheduled. The body is optional as a whole (none reads as {}).',
        params: CompanyOrSubscriptionParams,
        querystring: CancelQuery,
        body: SubscriptionCancellationData,
        response: { 200: NoBody },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request)
      await service.cancel(
        request.params.company_id_or_subscription_id,
        principal.companyId,
        request.body,
        request.query.end_of_term ?? true,
        principal.clientId,
      )
      return ok(reply)
    },
  )

  app.put(
    `${BASE}/:company_id/remove_scheduled_cancellation/:subscription_id`,
    {
      config: companyAtProvider,
      schema: {
        operationId: 'removeScheduledCancellation',
        tags,
        summary: 'Undo a scheduled cancellation (3)',
        description:
          'non_renewing goes back to active; a trial cancelled at its end keeps going. 409 when no cancellation ' +
          'is scheduled.',
        params: CompanySubscriptionParams,
        response: { 200: NoBody },
      },
    },
    async (request, reply) => {
      await service.removeScheduledCancellation(
        request.params.company_id,
        request.params.subscription_id,
        principalOf(request).clientId,
      )
      return ok(reply)
    },
  )

  app.put(
    `${BASE}/companies/:company_id/update/:subscription_id`,
    {
      config: companyAtProvider,
      preValidation: emptyBodyAsObject,
      schema: {
        operationId: 'updateSubscription',
        tags,
        summary: 'Change plan, quantity, addons or coupon (6)',
        description:
          'Applies exactly what the estimate (9) of the same selection shows: for an active subscription, ' +
          "prorated against the current term with the unused share of what the term's invoice charged credited " +
          '(never more than it charged). A change of coupon alone bills and credits nothing: the coupon applies ' +
          'from the next invoice, which the estimate then shows. The body is optional as a whole (none reads as ' +
          '{}); omitted fields keep their value. Answers the details (8) and the estimate applied. 409 for a ' +
          'cancelled subscription; 400 for an unknown or not allowed plan, addon or coupon, a coupon expired or ' +
          "used up, or an addon, fixed-amount coupon or plan in another currency than the subscription's plan (a " +
          'subscription bills in one currency).',
        params: CompanySubscriptionParams,
        body: SubscriptionUpdate,
        response: { 200: UpdateResponse },
      },
    },
    async (request) =>
      service.update(
        request.params.company_id,
        request.params.subscription_id,
        request.body,
        principalOf(request).clientId,
      ),
  )

  app.put(
    `${BASE}/:company_id/remove_scheduled_changes`,
    {
      config: companyAtProvider,
      schema: {
        operationId: 'removeScheduledChanges',
        tags,
        summary: "Drop the change scheduled for the term's end",
        description: 'The renewal bills the current choice again. 409 when no change is scheduled.',
        params: CompanyParams,
        response: { 200: SubscriptionDetails },
      },
    },
    async (request) => {
      await service.removeScheduledChanges(request.params.company_id, principalOf(request).clientId)
      return service.details(request.params.company_id)
    },
  )

  app.put(
    `${BASE}/:company_id/pause`,
    {
      config: companyAtProvider,
      schema: {
        operationId: 'pauseSubscription',
        tags,
        summary: 'Pause the subscription, now or at the end of the term',
        description:
          'Paused: no invoices, and the plan features are withdrawn as for a cancelled subscription. ' +
          'immediately: paused now, nothing credited; end_of_term: the term ends paused instead of renewing ' +
          '(pause_date shows when; a change scheduled for then is dropped). resume_date resumes it by itself ' +
          'then. 400 for a resume_date not after the pause starts; 409 unless the subscription is active ' +
          '(cancelled, already paused, in trial, or set to cancel) or when a pause is already scheduled.',
        params: CompanyParams,
        body: SubscriptionPause,
        response: { 200: SubscriptionDetails },
      },
    },
    async (request) => {
      await service.pause(request.params.company_id, request.body, principalOf(request).clientId)
      return service.details(request.params.company_id)
    },
  )

  app.put(
    `${BASE}/:company_id/resume`,
    {
      config: companyAtProvider,
      preValidation: emptyBodyAsObject,
      schema: {
        operationId: 'resumeSubscription',
        tags,
        summary: 'Resume a paused subscription now',
        description:
          'active again with a new term from now, billed now in full; the plan features come back. 409 unless ' +
          'the subscription is paused. The body is optional as a whole.',
        params: CompanyParams,
        body: SubscriptionResume,
        response: { 200: SubscriptionDetails },
      },
    },
    async (request) => {
      await service.resume(request.params.company_id, principalOf(request).clientId)
      return service.details(request.params.company_id)
    },
  )

  app.get(
    `${BASE}/:company_id/details`,
    {
      config: company,
      schema: {
        operationId: 'getSubscriptionDetails',
        tags,
        summary: 'The subscription with its plan, product and customer (8)',
        params: CompanyParams,
        response: { 200: SubscriptionDetails },
      },
    },
    async (request) => service.details(request.params.company_id),
  )

  app.get(
    `${BASE}/:company_id/status`,
    {
      config: company,
      schema: {
        operationId: 'getSubscriptionStatus',
        tags,
        summary: "The subscription's status, terms and features (14)",
        params: CompanyParams,
        response: { 200: SubscriptionStatusBody },
      },
    },
    async (request) => service.status(request.params.company_id),
  )

  app.get(
    `${BASE}/:subscription_id/estimate`,
    {
      config: { access: 'public', billingProvider: true },
      schema: {
        operationId: 'estimateSubscription',
        tags,
        summary: 'Estimate a change of the subscription (9)',
        description:
          'Public. The stored subscription (its status, trial, addons, coupon and credits) is priced only for ' +
          "the company's own token or a platform token. Without a token, or with another company's, the query's " +
          'choice is priced from the catalogue as a new subscription: status in_trial, next_billing_at at the ' +
          "end of a new trial, the first full-term invoice of the query's plan, addons and coupon, no credit; " +
          'any product of the catalogue may be named. Without a token, coupon_code is refused with 401 (any ' +
          'value, before anything else is looked at), so that codes cannot be tried anonymously. For the own or ' +
          'platform token: in trial: the first full-term invoice at trial_end. Active: the immediate invoice of ' +
          "the change, prorated by the seconds left in the term, with the unused share of what the term's " +
          "invoice charged as credits_applied; for a change of coupon alone, the next renewal's invoice " +
          "(next_billing_at), nothing being billed now. Amounts in minor units of the plan's currency_code " +
          '(cents of EUR, yen of JPY), rounded half-up per line. 400 for an unknown product, plan, addon or ' +
          "coupon, a plan outside the product's allowed_plans, a coupon expired or used up, an addon or " +
          "fixed-amount coupon in another currency than the plan's, or (own or platform token) a plan in another " +
          "currency than the subscription's; 409 for a cancelled or paused subscription (own or platform token). " +
          '401 for ' +
          "coupon_code without a token. 404 when the path and company_id do not name a company's subscription.",
        params: EstimateParams,
        querystring: EstimateQuery,
        response: {
          200: EstimateResponse,
          401: {
            ...ErrorBody,
            description: 'A token was sent and is invalid, expired or revoked; or coupon_code was sent without a token',
          },
        },
      },
      // `addons=` (empty) asks for no addons, as `[]` does in 6's body; left out, the subscription's stay.
      preValidation: async (request) => {
        const query = request.query as { addons?: unknown }
        if (query.addons === '') query.addons = []
        else if (Array.isArray(query.addons)) query.addons = query.addons.filter((id) => id !== '')
      },
    },
    async (request) => service.estimateFor(request.params.subscription_id, request.query, request.principal),
  )

  app.put(
    `${BASE}/:company_id/payment_source`,
    {
      config: { access: 'platform', billingProvider: true },
      schema: {
        operationId: 'setPaymentSource',
        tags,
        summary: "Record the customer's card (platform only, until the hosted payment page)",
        description:
          'Keeps only brand, last 4 digits and expiry (and, for a test number, its test behaviour). Body: brand, ' +
          'last4 and expiry, or (test mode) number and expiry: 4000 0000 0000 0341 is accepted but every charge ' +
          'fails, 4000 0000 0000 0002 is declined (400 naming body/number). A trial ends active when a card ' +
          "valid in the trial's last month is on file, else cancelled. Invoices waiting for payment " +
          '(payment_due) are charged to the new card at once. 400 for an expired card.',
        params: CompanyParams,
        body: PaymentSourceInput,
        response: { 200: SubscriptionDetails },
      },
    },
    async (request) =>
      service.setPaymentSourceFromBody(request.params.company_id, request.body, principalOf(request).clientId),
  )
}
