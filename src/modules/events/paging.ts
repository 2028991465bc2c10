import { ValidationError } from '../../http/errors.ts'

/**
 * Keyset paging for the event log and the delivery attempts, newest first: a cursor is the
 * position (a sequence number) after which the next page starts, opaque to the client. Small
 * on purpose: the shared paging of every list (decisions §8.2) replaces it at merge.
 */
export const DEFAULT_LIMIT = 100

export function encodeCursor(position: number): string {
  return Buffer.from(`p:${position}`).toString('base64url')
}

export function decodeCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined
  const match = /^p:(\d{1,18})$/.exec(Buffer.from(cursor, 'base64url').toString())
  if (!match) throw new ValidationError('querystring/cursor is not a cursor this list gave (take it from the Link header)')
  return Number(match[1])
}

/** `Link: <url>; rel="next"` (RFC 8288): the request's own path and query with the next cursor. */
export function nextLink(requestUrl: string, cursor: string): string {
  const url = new URL(requestUrl, 'http://x')
  url.searchParams.set('cursor', cursor)
  return `<${url.pathname}${url.search}>; rel="next"`
}
