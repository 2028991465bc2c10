import type { FastifyRequest } from 'fastify'
import type { App } from '../../http/app-types.ts'
import { principalOf } from '../../http/auth.ts'
import { NotFound } from '../../core/errors.ts'
import { CompanyParams } from '../../http/schemas.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'
import { checkRedirectUrl } from './hosted.redirect.ts'
import type { HostedService } from './hosted.service.ts'
import { CustomerParams, HostedPage, PortalSession, RedirectQuery, SubscriptionManagerPage } from './hosted.schemas.ts'

const BASE = '/api/v1/subscription'

// Opening a hosted page lets a session change or cancel the subscription: `write:company`.
export async function hostedApiRoutes(
  app: App,
  deps: {
    subscriptions: Pick<SubscriptionsService, 'hostedPage'>
    hosted: Pick<HostedService, 'checkCompany'>
    allowedHosts: Set<string>
    ttlSeconds: number
    /** Never the request's Host. */
    baseUrl: () => string
  },
) {
  const tags = ['Subscription']
  const access = { access: { area: 'company', mode: 'write' }, billingProvider: true } as const
  const scope =
    'Needs write:company (it opens a session that changes the subscription); a company token only for its own ' +
    'company (404 otherwise); none for a disabled company (403, also to the platform).'
  const redirect =
    'redirect_url must be an absolute https URL (http only on localhost) on an allowed host, without ' +
    'credentials, backslashes or control characters: otherwise 400.'

  const options = (request: FastifyRequest, redirectUrl: string) => ({
    redirectUrl: checkRedirectUrl(redirectUrl, deps.allowedHosts),
    ttlSeconds: deps.ttlSeconds,
    baseUrl: deps.baseUrl().replace(/\/+$/, ''),
    clientId: principalOf(request).clientId,
  })
  /** None for a disabled company (403). */
  const opened = async <K extends 'managerPage' | 'portalSession' | 'paymentPage'>(
    request: FastifyRequest,
    companyId: string,
    kind: K,
    redirectUrl: string,
  ) => {
    const given = options(request, redirectUrl)
    await deps.hosted.checkCompany(companyId)
    return deps.subscriptions.hostedPage(kind, companyId, given)
  }
  // The answers carry a bearer capability URL: no cache may keep them.
  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store')
  })
  const noStore = 'Sent with Cache-Control: no-store (the URL is a capability).'
  // A company token names only its own customer id (else 404, as for a missing company).
  const ownCustomer = async (request: FastifyRequest) => {
    const tenant = principalOf(request).companyId
    const id = (request.params as { subscription_customer_id?: string }).subscription_customer_id
    if (tenant !== null && tenant !== id) throw new NotFound('Company')
  }

  app.get(
    `${BASE}/:company_id/manager_page`,
    {
      config: access,
      schema: {
        operationId: 'openSubscriptionManagerPage',
        tags,
        summary: 'A page to choose and confirm a plan (1)',
        description:
          `The page lists the product's allowed plans with their prices and the estimate of the change; confirming ` +
          `applies it (as 6) and sends the browser to redirect_url with id and state=succeeded. It works until ` +
          `expires_at (HOSTED_PAGE_TTL_SECONDS) and once. ${redirect} ${scope} ${noStore}`,
        params: CompanyParams,
        querystring: RedirectQuery,
        response: { 200: SubscriptionManagerPage },
      },
    },
    async (request) => opened(request, request.params.company_id, 'managerPage', request.query.redirect_url),
  )

  app.get(
    `${BASE}/:subscription_customer_id/portal`,
    {
      config: access,
      onRequest: ownCustomer,
      schema: {
        operationId: 'openPortalSession',
        tags,
        summary: 'A self-service portal session for the customer (10)',
        description:
          `access_url shows the subscription, its next charge and card, and lets the customer cancel at the end of ` +
          `the term, undo a scheduled cancellation and log out (which sends the browser to redirect_url). Status ` +
          `created → logged_in → logged_out; refused after expires_at. ${redirect} ${scope} ${noStore}`,
        params: CustomerParams,
        querystring: RedirectQuery,
        response: { 200: PortalSession },
      },
    },
    async (request) =>
      opened(request, request.params.subscription_customer_id, 'portalSession', request.query.redirect_url),
  )

  app.get(
    `${BASE}/:subscription_customer_id/payment_page`,
    {
      config: access,
      onRequest: ownCustomer,
      schema: {
        operationId: 'openPaymentPage',
        tags,
        summary: "A page to add the customer's card (11)",
        description:
          `Test mode: the card number is checked (Luhn) and only brand, last 4 digits and expiry are kept; the ` +
          `page becomes succeeded and sends the browser to redirect_url with id and state. A trial ends active ` +
          `when a usable card is on file. State created → requested → succeeded | cancelled; refused after ` +
          `expires_at. ${redirect} ${scope} ${noStore}`,
        params: CustomerParams,
        querystring: RedirectQuery,
        response: { 200: HostedPage },
      },
    },
    async (request) =>
      opened(request, request.params.subscription_customer_id, 'paymentPage', request.query.redirect_url),
  )
}
