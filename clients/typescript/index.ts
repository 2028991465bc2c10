/**
 * The typed client of the Company Administration API: openapi-fetch over the types that
 * openapi-typescript generates from /openapi.json (schema.d.ts; `npm run generate:client`).
 *
 *   const platform = createClient({ baseUrl, token: await getToken(baseUrl, id, secret) })
 *   const { data, error } = await platform.GET('/api/v1/companies/{company_id}', { params: { path: { company_id } } })
 *
 * Every path, parameter, body and answer is typed; `data` is the 2xx body, `error` the Error
 * body of a 4xx/5xx (its `code` one of the documented codes).
 */
import createFetchClient from 'openapi-fetch'
import type { components, paths } from './schema.js'

export type { components, paths }
export type Schemas = components['schemas']
export type Company = Schemas['Company']
export type Team = Schemas['Team']
export type Contract = Schemas['Contract']
export type Communication = Schemas['Communication']
export type ApiError = Schemas['Error']

export interface ClientOptions {
  /** The service's origin, such as http://localhost:8080 (the paths start with /api/v1). */
  baseUrl: string
  /** An access token, or a function giving one (called before each request). */
  token?: string | (() => string | Promise<string>)
  fetch?: typeof globalThis.fetch
}

export function createClient(options: ClientOptions) {
  const client = createFetchClient<paths>({
    baseUrl: options.baseUrl,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  })
  const { token } = options
  if (token !== undefined) {
    client.use({
      async onRequest({ request }) {
        request.headers.set('authorization', `Bearer ${typeof token === 'function' ? await token() : token}`)
        return request
      },
    })
  }
  return client
}

export type Client = ReturnType<typeof createClient>

/** A client-credentials token (POST /oauth/token); `scope` narrows it to some of the client's scopes. */
export async function getToken(
  baseUrl: string,
  clientId: string,
  clientSecret: string,
  scope?: string,
): Promise<string> {
  const { data, error } = await createClient({ baseUrl }).POST('/oauth/token', {
    body: {
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
      ...(scope ? { scope } : {}),
    },
  })
  if (!data) throw new Error(`token for ${clientId}: ${JSON.stringify(error)}`)
  return data.access_token
}

/** The id at the end of a creation's `Location` header (202 and 201 answers). */
export function createdId(response: Response): string {
  const location = response.headers.get('location')
  if (!location) throw new Error(`${response.status} ${response.url}: no Location header`)
  return location.slice(location.lastIndexOf('/') + 1)
}
