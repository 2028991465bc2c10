import { Type, type Static } from 'typebox'
import type { FastifyError } from 'fastify'
import { answerPage, listResponse, pageQuery, readPage } from '../../http/pagination.ts'
import type { App } from '../../http/app-types.ts'
import { CompanyParams, ErrorBody } from '../../http/schemas.ts'
import { lingerOnRefusedBody, toAppError } from '../../http/error-handler.ts'
import { headersOf, statusOf } from '../../http/error-status.ts'
import { principalOf } from '../../http/auth.ts'
import { OAuthError, type OauthService } from './oauth.service.ts'
import type { TokenKeys } from './oauth.tokens.ts'
import { WRONG_SECRETS_LIMIT } from './oauth.guesses.ts'
import {
  Client,
  ClientInput,
  ClientParams,
  CreatedClient,
  Jwks,
  TokenError,
  TokenRequest,
  TokenResponse,
} from './oauth.schemas.ts'

const RETRY_AFTER_HEADER = { type: 'integer', minimum: 1, description: 'Seconds to wait before retrying' }

/** Room for four short parameters, even with a scope naming every scope of the service. */
export const TOKEN_BODY_LIMIT_BYTES = 8192

/** Their own scope: they speak OAuth's error format and take forms. */
export async function tokenRoutes(
  app: App,
  { service, keys, bodyLimit }: { service: OauthService; keys: TokenKeys; bodyLimit: number },
) {
  const limit = Math.min(TOKEN_BODY_LIMIT_BYTES, bodyLimit)
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    const params = new URLSearchParams(body as string)
    // RFC 6749 §3.2: a parameter sent twice is an invalid request.
    const seen = new Set<string>()
    for (const key of params.keys()) {
      if (seen.has(key)) return done(new OAuthError('invalid_request', `The parameter ${key} is repeated`), undefined)
      seen.add(key)
    }
    done(null, Object.fromEntries(params))
  })

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const oauth = err instanceof OAuthError ? err : undefined
    if (!oauth) {
      const mapped = toAppError(err)
      const mappedStatus = statusOf(mapped)
      if (mappedStatus !== 400) {
        for (const [name, value] of Object.entries(headersOf(mapped))) reply.header(name, value)
        if (mappedStatus === 413 && !request.raw.complete) lingerOnRefusedBody(request, reply)
        const message =
          mappedStatus === 413 ? `The request body is larger than the limit of ${limit} bytes` : mapped.message
        return reply.code(mappedStatus).header('cache-control', 'no-store').send({ errors: message, code: mapped.code })
      }
    }
    const error = oauth?.error ?? 'invalid_request'
    const description = oauth?.message ?? toAppError(err).message
    const status = error === 'invalid_client' ? 401 : 400
    if (status === 401) reply.header('www-authenticate', 'Basic realm="oauth"')
    request.log.info({ error }, 'token refused')
    return reply
      .code(status)
      .header('cache-control', 'no-store')
      .send({
        error,
        error_description: description,
        errors: description,
        code: status === 401 ? 'unauthorized' : error === 'unauthorized_client' ? 'forbidden' : 'validation_failed',
      })
  })

  app.post(
    '/oauth/token',
    {
      config: { access: 'none' },
      bodyLimit: limit,
      schema: {
        operationId: 'issueToken',
        tags: ['OAuth'],
        summary: 'Get an access token (client credentials)',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: TokenRequest,
        description:
          `A token for the client's id and secret (HTTP Basic or the body). After ${WRONG_SECRETS_LIMIT} wrong ` +
          `secrets within a minute for one client_id (an unknown id counts alike), that client_id answers 429 with ` +
          `Retry-After for a minute, whatever the secret, the right one too; tokens issued before keep working.`,
        response: {
          200: TokenResponse,
          400: TokenError,
          401: TokenError,
          413: { ...ErrorBody, description: `The body is larger than ${limit} bytes` },
          429: {
            ...ErrorBody,
            description:
              `${WRONG_SECRETS_LIMIT} wrong secrets for this client_id within a minute (then every request for it, ` +
              `for a minute), or the rate limit of the caller's address; see Retry-After`,
            headers: { 'Retry-After': RETRY_AFTER_HEADER },
          },
          503: {
            ...ErrorBody,
            description:
              'The service is overloaded, the database is unavailable, or too many platform client secrets are ' +
              'being checked at once; see Retry-After',
            headers: { 'Retry-After': RETRY_AFTER_HEADER },
          },
        },
      },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as Static<typeof TokenRequest>
      const basic = parseBasic(request.headers.authorization)
      if (basic && body.client_id && basic.id !== body.client_id)
        throw new OAuthError('invalid_request', 'Two different client ids were sent')
      if (basic && body.client_secret !== undefined)
        throw new OAuthError('invalid_request', 'Send the client secret either in HTTP Basic or in the body, not both')
      const result = await service.issueToken({
        ...body,
        ...(basic ? { client_id: basic.id, client_secret: basic.secret } : {}),
      })
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
      return result
    },
  )

  app.get(
    '/.well-known/jwks.json',
    {
      config: { access: 'none' },
      schema: {
        operationId: 'getJwks',
        tags: ['OAuth'],
        summary: 'Public keys that verify access tokens',
        response: { 200: Jwks },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300')
      return keys.jwks()
    },
  )
}

/** The secret is shown once, at creation. */
export async function clientRoutes(app: App, { service }: { service: OauthService }) {
  const tags = ['Companies']
  const base = '/api/v1/companies/:company_id/clients'

  app.post(
    base,
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'createCompanyClient',
        tags,
        summary: 'Create a company client',
        params: CompanyParams,
        body: ClientInput,
        response: { 201: CreatedClient },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request)
      const client = await service.createCompanyClient(
        request.params.company_id,
        request.body,
        principal.companyId === null ? null : principal.scopes,
      )
      reply
        .code(201)
        .header('location', `${base.replace(':company_id', request.params.company_id)}/${client.client_id}`)
      return client
    },
  )

  app.get(
    base,
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'listCompanyClients',
        tags,
        summary: "List a company's clients",
        description:
          "The company's live (not revoked) clients, oldest first, then client_id; secrets are never shown. " +
          'Pages with `limit` and `cursor`; without `limit`, the whole list.',
        params: CompanyParams,
        querystring: pageQuery(),
        response: { 200: listResponse(Type.Array(Client)) },
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['time', 'text'])
      return answerPage(request, reply, page, await service.listCompanyClients(request.params.company_id, page))
    },
  )

  app.get(
    `${base}/:client_id`,
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'getCompanyClient',
        tags,
        summary: 'Get a company client (without its secret)',
        params: ClientParams,
        response: { 200: Client },
      },
    },
    async (request) => service.getCompanyClient(request.params.company_id, request.params.client_id),
  )

  app.delete(
    `${base}/:client_id`,
    {
      config: { access: { area: 'company', mode: 'write' } },
      schema: {
        operationId: 'revokeCompanyClient',
        tags,
        summary: 'Revoke a company client',
        params: ClientParams,
        response: { 204: Type.Null({ description: 'Revoked; its tokens stop working at once' }) },
      },
    },
    async (request, reply) => {
      await service.revokeCompanyClient(request.params.company_id, request.params.client_id)
      return reply.code(204).send(null)
    },
  )
}

function parseBasic(header: string | undefined): { id: string; secret: string } | undefined {
  const match = header && /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header)
  if (!match) return undefined
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) return undefined
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) }
  } catch {
    throw new OAuthError('invalid_client', 'The Basic credentials are not valid percent-encoding')
  }
}
