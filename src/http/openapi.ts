import type { FastifyInstance, RouteOptions } from 'fastify'
import swagger from '@fastify/swagger'
import { ErrorBody } from './schemas.ts'
import { scopeNeeded, type Access } from './auth.ts'
import { scopeDescription } from '../modules/oauth/scopes.ts'
import { finishDocument } from './openapi-document.ts'
import { NEVER_SHED } from './load-shedding.ts'
import { PACKAGE_VERSION } from '../version.ts'

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
  503: 'The service is overloaded, or the database is unavailable; see Retry-After',
}

declare module 'fastify' {
  /** The route calls the billing provider, which can fail on its own (502) or rate limit (503). */
  interface FastifyContextConfig {
    billingProvider?: boolean
    /** false: the route takes no Idempotency-Key (one sent is ignored); it is idempotent by itself. */
    idempotencyKeys?: false
  }
}

const PROVIDER_DESCRIPTIONS: Record<number, string> = {
  502: 'The billing provider failed, or is not configured on this service (`provider_error`)',
  503:
    'The service is overloaded, the database is unavailable, or the billing provider is rate limiting this ' +
    'service; see Retry-After',
}

export const API_TITLE = 'Company Administration and Subscription Management API'

/** The OpenAPI 3.1 document from the route schemas; every route gets its error answers and security requirement. */
export async function installOpenApi(app: FastifyInstance, options: { serverUrl?: string }) {
  // /docs offers only the scopes some route checks.
  const usedScopes = new Set<string>()
  app.addHook('onRoute', (route) => documentRoute(route, usedScopes))
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: API_TITLE,
        version: PACKAGE_VERSION,
        description:
          'Companies, teams, holidays, communications and subscription billing. Get a token with POST ' +
          '/oauth/token (client credentials), then send `Authorization: Bearer <token>`. A path called with a ' +
          'method it does not have answers `405` (`code: "method_not_allowed"`) with `Allow` listing its ' +
          'methods; an unknown path answers `404`.',
        contact: { name: 'Company Admin API maintainers' },
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      },
      // Without PUBLIC_BASE_URL the document is relative to where it was read from.
      servers: [
        options.serverUrl
          ? { url: options.serverUrl, description: 'This service (PUBLIC_BASE_URL)' }
          : { url: '/', description: 'This service (the origin this document was read from)' },
      ],
      // The reference page lists the areas in this order.
      tags: [
        { name: 'OAuth', description: 'Tokens (client credentials) and the keys that verify them' },
        { name: 'Companies', description: 'Companies, their subsidiaries, authorized scopes and clients' },
        { name: 'Contracts', description: 'The employees of a company' },
        { name: 'Teams', description: 'Teams, their members and leaders' },
        { name: 'Holidays', description: 'Company and subsidiary holidays, merged with public calendars' },
        { name: 'Communications', description: 'Messages to teams and subsidiaries, scheduled and recurrent' },
        { name: 'Communication messages', description: "The recipients' side: inbox, open, acknowledge" },
        { name: 'Catalogue', description: 'Plans, products, addons and coupons' },
        { name: 'Subscription', description: "A company's subscription, its estimate and hosted billing pages" },
        {
          name: 'Invoices',
          description: "The invoices and credit notes of a company's subscription (local billing engine)",
        },
        { name: 'Analytics', description: 'MRR, its movements, churn and retention (platform)' },
        { name: 'Events', description: 'The log of every change: what happened, to which object, when' },
        {
          name: 'Webhooks',
          description: 'Endpoints that receive the events, signed (Standard Webhooks), with their delivery attempts',
        },
        {
          name: 'Test clock',
          description: 'Test environments only: move the business time forward and run what falls due',
        },
        { name: 'Operations', description: 'Health, readiness and metrics' },
      ],
      components: {
        // One way to authorize: a token from /oauth/token. Scopes are filled in once every route is known;
        // /docs leaves the Chargebee webhook's scheme out (docs/adr/0011-versions-and-offered-scopes.md).
        securitySchemes: {
          oauth2: {
            type: 'oauth2',
            description:
              "A token from POST /oauth/token for your client's id and secret (client credentials): a company's " +
              'client sees only its company, a platform client every company',
            flows: { clientCredentials: { tokenUrl: '/oauth/token', scopes: {} } },
          },
          chargebeeBasic: {
            type: 'http',
            scheme: 'basic',
            description:
              "CHARGEBEE_WEBHOOK_USER and CHARGEBEE_WEBHOOK_PASSWORD, as configured in Chargebee's webhook settings",
          },
        },
      },
    },
    // Once: @fastify/swagger caches the result.
    transformObject: (documentObject) =>
      'openapiObject' in documentObject
        ? offerUsedScopes(shareErrorResponses(finishDocument(documentObject.openapiObject)), usedScopes)
        : documentObject.swaggerObject,
  })
}

function offerUsedScopes(doc: Record<string, any>, usedScopes: ReadonlySet<string>) {
  const flow = doc.components.securitySchemes.oauth2.flows.clientCredentials
  flow.scopes = Object.fromEntries([...usedScopes].sort().map((scope) => [scope, scopeDescription(scope)]))
  return doc
}

function documentRoute(route: RouteOptions, usedScopes: Set<string>) {
  const schema = (route.schema ??= {}) as Record<string, any>
  if (schema.hide) return
  const methods = Array.isArray(route.method) ? route.method : [route.method]
  const method = methods[0]!
  const access: Access = route.config?.access ?? 'none'
  schema.operationId ??= defaultOperationId(method, route.url)
  const responses = (schema.response ??= {}) as Record<string, unknown>
  const add = (status: number) => {
    responses[status] ??= { ...ErrorBody, description: ERROR_DESCRIPTIONS[status] }
  }
  // Every route refuses a query string of more than 100 parameters.
  add(400)
  if (access !== 'none') add(401)
  if (access === 'platform' || typeof access === 'object') add(403)
  if (route.url.includes(':')) {
    add(404)
    add(414)
  }
  if (method === 'POST' || method === 'PUT') {
    add(409)
    add(413)
    add(415)
  }
  if (!NEVER_SHED.has(route.url)) add(429)
  add(500)
  if (route.config?.billingProvider)
    for (const status of [502, 503]) responses[status] ??= { ...ErrorBody, description: PROVIDER_DESCRIPTIONS[status] }
  // Every route but the probes: load shedding, or the database gone.
  if (route.url === '/ready')
    responses[503] ??= {
      ...ErrorBody,
      description:
        'Not ready: the database does not answer, a migration is pending, or the instance is stopping; see Retry-After',
    }
  else if (!NEVER_SHED.has(route.url)) add(503)
  const scope = scopeNeeded(access, method)
  if (scope) usedScopes.add(scope)
  if (access === 'none') schema.security ??= []
  // `public` takes no token, but one sent must be valid (401) and may show more.
  else if (access === 'public') schema.security ??= [{}, { oauth2: [] }]
  else schema.security ??= [{ oauth2: scope ? [scope] : [] }]
  // A company's token is refused whatever its scopes: a scheme cannot say that, so the operation does.
  if (access === 'platform') schema['x-platform-only'] = true
  schema.description = describe(schema, access, method)
}

// Who may call an operation comes from the route's access, so it cannot drift from what auth.ts enforces.
function describe(schema: Record<string, any>, access: Access, method: string): string {
  const what = schema.description ?? `${String(schema.summary ?? '').replace(/\s*\(\d+\)$/, '')}.`
  const scope = scopeNeeded(access, method)
  const own = (schema.security as Array<Record<string, unknown>> | undefined)?.flatMap((s) => Object.keys(s)) ?? []
  const who =
    own.length > 0 && access === 'none'
      ? `Only callers with the credentials of the security scheme ${own.map((s) => `\`${s}\``).join(' or ')}; ` +
        'not a bearer token.'
      : access === 'none'
        ? 'Anyone: no token is needed or looked at.'
        : access === 'public'
          ? 'Anyone, without a token; a token that is sent must be valid (401 otherwise).'
          : access === 'platform'
            ? "Platform clients only (a company's token is refused with 403)" +
              `${scope ? `, with the scope \`${scope}\`` : ''}.`
            : "A platform client, or a client of the company itself (another company's resources answer 404), " +
              `with the scope \`${scope}\`.`
  const statuses = Object.keys(schema.response ?? {})
  const changes =
    method === 'GET' || method === 'HEAD'
      ? scope?.startsWith('write:')
        ? null
        : 'Reads only; changes nothing.'
      : statuses.includes('201') || (method === 'POST' && statuses.includes('202'))
        ? 'Creates the resource; `Location` is its URL.'
        : method === 'DELETE'
          ? 'Deletes the resource.'
          : 'Applies the change at once; the answer has no body.'
  const already = /\*\*Who may call\*\*/.test(what)
  return already
    ? what
    : [what, `**Who may call:** ${who}`, ...(changes && !schema.description ? [`**Changes:** ${changes}`] : [])].join(
        '\n\n',
      )
}

const RESPONSE_NAMES: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  413: 'PayloadTooLarge',
  414: 'UriTooLong',
  415: 'UnsupportedMediaType',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
}
const PROVIDER_RESPONSE_NAMES: Record<number, string> = { 502: 'ProviderError', 503: 'ProviderUnavailable' }
const ERROR_EXAMPLES: Record<number, { errors: string; code: string }> = {
  401: { errors: 'The access token has expired', code: 'unauthorized' },
  403: { errors: 'The token lacks the scope write:team', code: 'insufficient_scope' },
  404: { errors: 'Team not found', code: 'not_found' },
  409: { errors: 'A team with the code WH already exists', code: 'conflict' },
  413: { errors: 'The request body is larger than the limit', code: 'payload_too_large' },
  414: { errors: 'A path segment is longer than 200 characters', code: 'validation_failed' },
  415: { errors: 'The request body must be application/json', code: 'unsupported_media_type' },
  429: { errors: 'Too many requests; retry in 12 s', code: 'rate_limited' },
  500: { errors: 'Internal error', code: 'internal' },
  502: { errors: 'The billing provider failed: Chargebee answered 500', code: 'provider_error' },
  503: { errors: 'The database is unavailable; retry shortly', code: 'unavailable' },
}
const RETRY_AFTER = { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 1 } }

// Standard error answers become shared `components.responses`, said once instead of per operation.
function shareErrorResponses(doc: Record<string, any>) {
  const shared: Record<string, unknown> = (doc.components.responses ??= {})
  const standard = new Map<string, string>()
  for (const [status, name] of Object.entries(RESPONSE_NAMES))
    standard.set(`${status} ${ERROR_DESCRIPTIONS[Number(status)]}`, name)
  for (const [status, name] of Object.entries(PROVIDER_RESPONSE_NAMES))
    standard.set(`${status} ${PROVIDER_DESCRIPTIONS[Number(status)]}`, name)
  for (const item of Object.values(doc.paths ?? {}) as Array<Record<string, any>>) {
    for (const op of Object.values(item)) {
      for (const [status, response] of Object.entries((op?.responses ?? {}) as Record<string, any>)) {
        const content = response.content?.['application/json']
        if (content?.schema?.$ref === '#/components/schemas/Error' && ERROR_EXAMPLES[Number(status)])
          content.example = ERROR_EXAMPLES[Number(status)]
        const name = standard.get(`${status} ${response.description}`)
        if (
          !name ||
          response.headers ||
          Object.keys(response.content ?? {}).length !== 1 ||
          content?.schema?.$ref !== '#/components/schemas/Error'
        )
          continue
        shared[name] ??= {
          ...response,
          ...(status === '429' || status === '503' ? { headers: { 'Retry-After': RETRY_AFTER } } : {}),
        }
        op.responses[status] = { $ref: `#/components/responses/${name}` }
      }
    }
  }
  return doc
}

function defaultOperationId(method: string, url: string): string {
  const words = url
    .split(/[/_\-.]+/)
    .filter(Boolean)
    .map((w) => (w.startsWith(':') ? `by ${w.slice(1)}` : w))
  const camel = words
    .join(' ')
    .split(' ')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')
  return method.toLowerCase() + camel
}
