import { createHash, createHmac, timingSafeEqual } from 'node:crypto'

/**
 * CSRF protection of the hosted forms, three checks: a hidden per-page token derived from the URL's
 * token; the same value in a path-scoped SameSite=Strict cookie; and an Origin of this service
 * (`null`, sent under no-referrer, only with `Sec-Fetch-Site: same-origin`).
 */
export const CSRF_COOKIE = 'hosted_csrf'
export const CSRF_FIELD = 'csrf'

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex')

export function csrfFor(pageToken: string): string {
  return createHmac('sha256', pageToken).update('hosted-page-csrf').digest('base64url')
}

export function csrfCookie(value: string, path: string, secure: boolean): string {
  return `${CSRF_COOKIE}=${value}; Path=${path}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

function same(a: string | undefined, b: string): boolean {
  if (a === undefined) return false
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

export interface CsrfRequest {
  host: string
  origin?: string
  secFetchSite?: string
  cookie?: string
  field?: string
}

/** Null when the form was posted by the page itself; otherwise why it is refused (for the log, never shown raw). */
export function csrfRefusal(pageToken: string, request: CsrfRequest, publicOrigin: string | undefined): string | null {
  const site = request.secFetchSite
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return 'cross-site request'
  const origin = request.origin
  if (origin !== undefined) {
    if (origin === 'null') {
      if (site !== 'same-origin') return 'opaque origin'
    } else {
      // Compared as URLs, so that a default port written or not (localhost:80, localhost) is the same host.
      let from: URL
      try {
        from = new URL(origin)
      } catch {
        return 'malformed origin'
      }
      // Any other scheme has the opaque origin 'null', which would equal the host's under it.
      if (from.protocol !== 'http:' && from.protocol !== 'https:') return 'foreign origin'
      const own = [publicOrigin ? new URL(publicOrigin).origin : undefined, hostOrigin(from.protocol, request.host)]
      if (!own.includes(from.origin)) return 'foreign origin'
    }
  }
  const expected = csrfFor(pageToken)
  if (!same(request.field, expected)) return 'missing or wrong form token'
  if (!same(cookieValue(request.cookie, CSRF_COOKIE), expected)) return 'missing or wrong cookie'
  return null
}

function hostOrigin(protocol: string, host: string): string | undefined {
  try {
    return new URL(`${protocol}//${host}`).origin
  } catch {
    return undefined
  }
}
