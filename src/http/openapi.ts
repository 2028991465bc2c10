import type { FastifyInstance, RouteOptions } from 'fastify'
import swagger from '@fastify/swagger'
import { ErrorBody } from './schemas.ts'
import { scopeNeeded, type Access } from './auth.ts'
import { ALL_SCOPE_STRINGS } from '../modules/oauth/scopes.ts'

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input: `errors` names the field',
  401: 'No token, or an invalid, expired or revoked one',
  403: 'The token lacks the scope, or its company is disabled',
  404: 'Not found, or belonging to another company',
  409: 'Conflicts with the current state, or an Idempotency-Key reused with another body (for an upload, another file)',
  413: 'The body is larger than the limit (1 MiB by default)',
  414: 'A path segment is longer than 200 characters',
  415: 'The body is not JSON',
  429: 'Rate limit reached; see Retry-After',
  500: 'Internal error',
  503: 'The database is unavailable; see Retry-After',
}

declare module 'fastify' {
  /** billingProvider: the route calls the company's billing provider (Chargebee), which can fail on its own (502) or rate limit (503). */
  interface FastifyContextConfig { billingProvider?: boolean }
}

const PROVIDER_DESCRIPTIONS: Record<number, string> = {
  502: 'The billing provider failed, or is not configured on this service (`provider_error`)',
  503: 'The database is unavailable, or the billing provider is rate limiting this service; see Retry-After',
}

/**
 * The OpenAPI 3.1 document, generated from the route schemas. Every route gets the error
 * answers it can give and its security requirement, so the document says what the code does.
 */
export async function installOpenApi(app: FastifyInstance, options: { serverUrl?: string }) {
  app.addHook('onRoute', (route) => documentRoute(route))
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Company Administration and Subscription Management API',
        version: '1.0.0',
        description: 'Companies, teams, holidays, communications and subscription billing. Get a token with POST /oauth/token (client credentials), then send `Authorization: Bearer <token>`.',
      },
      servers: options.serverUrl ? [{ url: options.serverUrl }] : [],
      // The reference page lists the areas in this order: getting a token first, operations last.
      tags: [
        { name: 'OAuth', description: 'Tokens (client credentials) and the keys that verify them' },
        { name: 'Companies', description: 'Companies, their subsidiaries, authorized scopes and clients' },
        { name: 'Contracts', description: 'The employees of a company' },
        { name: 'Teams', description: 'Teams, their members and leaders' },
        { name: 'Holidays', description: 'Company and subsidiary holidays, merged with public calendars' },
        { name: 'Communications', description: 'Messages to teams and subsidiaries, scheduled and recurrent' },
        { name: 'Communication messages', description: 'The recipients\' side: inbox, open, acknowledge' },
        { name: 'Catalogue', description: 'Plans, products, addons and coupons' },
        { name: 'Subscription', description: 'A company\'s subscription, its estimate and hosted billing pages' },
        { name: 'Operations', description: 'Health, readiness and metrics' },
      ],
      components: {
        securitySchemes: {
          oauth2: {
            type: 'oauth2',
            flows: { clientCredentials: { tokenUrl: '/oauth/token', scopes: Object.fromEntries(ALL_SCOPE_STRINGS.map((s) => [s, s.replace(/^(\w+):(.*)$/, '$2 $1')])) } },
          },
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        },
      },
    },
  })
}

function documentRoute(route: RouteOptions) {
  const schema = (route.schema ??= {}) as Record<string, any>
  if (schema.hide) return
  const methods = Array.isArray(route.method) ? route.method : [route.method]
  const method = methods[0]!
  const access: Access = route.config?.access ?? 'none'
  schema.operationId ??= defaultOperationId(method, route.url)
  const responses = (schema.response ??= {}) as Record<string, unknown>
  const add = (status: number) => { responses[status] ??= { ...ErrorBody, description: ERROR_DESCRIPTIONS[status] } }
  // Every route: a query string of more than 100 parameters is refused (http/request-limits.ts).
  add(400)
  if (access !== 'none') add(401)
  if (access === 'platform' || typeof access === 'object') add(403)
  if (route.url.includes(':')) { add(404); add(414) }
  if (method === 'POST' || method === 'PUT') { add(409); add(413); add(415) }
  if (!['/health', '/ready', '/metrics'].includes(route.url)) add(429)
  add(500)
  if (route.config?.billingProvider) for (const status of [502, 503]) responses[status] ??= { ...ErrorBody, description: PROVIDER_DESCRIPTIONS[status] }
  if (access !== 'none' || route.url === '/ready') add(503)
  if (access === 'public') schema.security ??= [{}, { bearer: [] }]
  // A platform route is for platform tokens only; its writes name the scope they need as a role (OpenAPI 3.1).
  else if (access === 'platform') schema.security ??= [{ bearer: method === 'GET' ? [] : [scopeNeeded(access, method)!] }]
  else if (typeof access === 'object') schema.security ??= [{ oauth2: [scopeNeeded(access, method)] }, { bearer: [] }]
}

function defaultOperationId(method: string, url: string): string {
  const words = url.split(/[/_\-.]+/).filter(Boolean).map((w) => w.startsWith(':') ? `by ${w.slice(1)}` : w)
  const camel = words.join(' ').split(' ').map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('')
  return method.toLowerCase() + camel
}
