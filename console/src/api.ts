import createClient from 'openapi-fetch'
import type { components, paths } from '../../clients/typescript/schema.d.ts'

export type Schemas = components['schemas']
export type Company = Schemas['Company']
export type Invoice = Schemas['Invoice']
export type ApiError = Schemas['Error']

/** What a call answers: its body, or the sentence to show. */
export type Result<T> = { ok: true; data: T; next: string | null } | { ok: false; message: string; status: number }

interface Session {
  token: string
  clientId: string
  clientSecret: string
  timer: ReturnType<typeof setTimeout>
}

// The token and the secret that renews it live in this module only: never in storage or a cookie,
// so closing the tab ends the session.
let session: Session | null = null
let onSignedOut: (() => void) | null = null

// No cookies: the token goes as a header. And 'omit' keeps the browser from prompting for the
// Basic challenge that a refused /oauth/token answers with.
export const api = createClient<paths>({ baseUrl: location.origin, credentials: 'omit' })
api.use({
  onRequest({ request }) {
    if (session) request.headers.set('authorization', `Bearer ${session.token}`)
    return request
  },
})

async function requestToken(clientId: string, clientSecret: string) {
  return api.POST('/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret },
  })
}

/** Renewed a minute before it expires (or at half its life when that is shorter). */
function schedule(clientId: string, clientSecret: string, token: string, expiresIn: number) {
  const lead = Math.min(60, expiresIn / 2)
  const timer = setTimeout(
    async () => {
      const { data } = await requestToken(clientId, clientSecret).catch(() => ({ data: undefined }))
      if (!session || session.clientId !== clientId) return
      if (data) schedule(clientId, clientSecret, data.access_token, data.expires_in)
      else signOut()
    },
    (expiresIn - lead) * 1000,
  )
  session = { token, clientId, clientSecret, timer }
}

/** Null when signed in, else the API's sentence. */
export async function signIn(clientId: string, clientSecret: string, networkError: string): Promise<string | null> {
  try {
    const { data, error } = await requestToken(clientId, clientSecret)
    if (!data) return sentence(error, networkError)
    schedule(clientId, clientSecret, data.access_token, data.expires_in)
    return null
  } catch {
    return networkError
  }
}

export function signOut() {
  if (session) clearTimeout(session.timer)
  session = null
  onSignedOut?.()
}

export const signedIn = () => session !== null
export const whenSignedOut = (fn: () => void) => {
  onSignedOut = fn
}
export const bearer = () => (session ? `Bearer ${session.token}` : '')

function sentence(error: unknown, fallback: string): string {
  const e = error as Partial<ApiError> | undefined
  return typeof e?.errors === 'string' && e.errors ? e.errors : fallback
}

/** The cursor of the Link header's rel="next", if any. */
export function nextCursor(response: Response): string | null {
  const link = response.headers.get('link')
  const target = link && /<([^>]+)>\s*;\s*rel="?next"?/.exec(link)?.[1]
  return target ? new URL(target, location.origin).searchParams.get('cursor') : null
}

/**
 * Awaits an openapi-fetch call and answers a Result: a failed call carries the API's `errors`
 * sentence (or, when the service did not answer, the given one).
 */
export async function call<T>(
  pending: Promise<{ data?: T; error?: unknown; response: Response }>,
  networkError: string,
): Promise<Result<T>> {
  try {
    const { data, error, response } = await pending
    if (response.status === 401 && session) signOut()
    if (error !== undefined || !response.ok) {
      return {
        ok: false,
        message: sentence(error, `${response.status} ${response.statusText}`),
        status: response.status,
      }
    }
    return { ok: true, data: data as T, next: nextCursor(response) }
  } catch {
    return { ok: false, message: networkError, status: 0 }
  }
}

/**
 * A route outside the generated types, typed by hand: the test clock, which the service documents
 * only where it enables it. Sent without an Idempotency-Key: an advance's jobs commit on their own,
 * and on PGlite a keyed advance waits on its own request's transaction.
 */
export async function untyped<T>(
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  body: unknown,
  networkError: string,
): Promise<Result<T>> {
  try {
    const response = await fetch(path, {
      method,
      credentials: 'omit',
      headers: {
        authorization: bearer(),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await response.text()
    const parsed = text ? JSON.parse(text) : undefined
    if (!response.ok) return { ok: false, message: sentence(parsed, `${response.status}`), status: response.status }
    return { ok: true, data: parsed as T, next: nextCursor(response) }
  } catch {
    return { ok: false, message: networkError, status: 0 }
  }
}

/**
 * Saves a document the API answers (an invoice's PDF, its FatturaPA XML) under `name`, else the
 * name its Content-Disposition gives; null when saved, else the API's sentence. A download, not a
 * new tab: a blob: page would inherit this page's policy, which leaves no room for a PDF viewer.
 */
export async function download(
  pending: Promise<{ data?: Blob; error?: unknown; response: Response }>,
  networkError: string,
  name?: string,
): Promise<string | null> {
  try {
    const { data, error, response } = await pending
    if (!data || !response.ok) return sentence(error, `${response.status}`)
    const given = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1]
    const url = URL.createObjectURL(data)
    const link = Object.assign(document.createElement('a'), { href: url, download: name ?? given ?? 'document' })
    link.click()
    setTimeout(() => URL.revokeObjectURL(url), 60_000)
    return null
  } catch {
    return networkError
  }
}

export const idempotencyKey = () => ({ 'idempotency-key': crypto.randomUUID() })
