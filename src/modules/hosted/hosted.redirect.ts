import { ValidationError } from '../../core/errors.ts'

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])

const PRINTABLE = /^[\x21-\x5b\x5d-\x7e]+$/
/** Encoded line breaks or NUL: response splitting, header injection. */
const ENCODED_CONTROL = /%(0[0-9a-f]|1[0-9a-f]|7f)/i

export function parseAllowedHosts(setting: string): Set<string> {
  return new Set(
    setting
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  )
}

/**
 * A hosted page's redirect URL, or a 400 that never repeats the value: absolute https (http on
 * loopback) on an allowed host, no credentials, normalised as a browser follows it. Refused before
 * parsing: `//`, `javascript:`/`data:`, backslashes, whitespace and control characters, even encoded.
 */
export function checkRedirectUrl(value: string, allowed: Set<string>, field = 'querystring/redirect_url'): string {
  const refuse = (why: string) => new ValidationError(`${field} ${why}`)
  if (value.length > 2000) throw refuse('must be at most 2000 characters')
  if (!PRINTABLE.test(value) || ENCODED_CONTROL.test(value))
    throw refuse('must be a URL without spaces, backslashes or control characters')
  if (!/^https?:\/\/[^/]/i.test(value)) throw refuse('must be an absolute https URL')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw refuse('must be an absolute https URL')
  }
  if (url.username || url.password) throw refuse('must not contain credentials')
  const host = url.hostname.toLowerCase()
  if (url.protocol === 'http:' && !LOOPBACK.has(host)) throw refuse('must use https (http only for localhost)')
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refuse('must be an absolute https URL')
  if (!allowed.has(host)) throw refuse('must be on a host allowed by REDIRECT_ALLOWED_HOSTS')
  return url.href
}

/** The stored redirect URL with the page's id and state, as Chargebee does. */
export function finishedRedirect(redirectUrl: string, params: Record<string, string>): string {
  const url = new URL(redirectUrl)
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
  return url.href
}

/** For the CSP's form-action: a form's redirect must be allowed. */
export function originOf(redirectUrl: string): string {
  return new URL(redirectUrl).origin
}
