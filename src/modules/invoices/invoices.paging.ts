import { ValidationError } from '../../http/errors.ts'
import type { ListPosition } from './invoices.repository.ts'

/**
 * Cursor paging of the ledger's lists (decisions §8.2: `limit` and `cursor`, `Link: <url>;
 * rel="next"` when more remain). Kept small and local on purpose: a shared helper for every list
 * is being written, and this one is meant to be swapped for it.
 *
 * The cursor is the last row's position (date in ms, insertion order), base64url-encoded: opaque to
 * clients, stable while rows are added (new rows come before it in a newest-first list).
 */
export function encodeCursor(position: ListPosition): string {
  return Buffer.from(`${position.date.getTime()}.${position.seq}`).toString('base64url')
}

export function decodeCursor(cursor: string | undefined): ListPosition | undefined {
  if (cursor === undefined) return undefined
  const match = /^(\d{1,15})\.(\d{1,18})$/.exec(Buffer.from(cursor, 'base64url').toString())
  if (!match) throw new ValidationError('querystring/cursor is not a cursor this list gave (take it from the Link rel="next" header)')
  return { date: new Date(Number(match[1])), seq: Number(match[2]) }
}

/**
 * One page: fetches `limit + 1` rows to learn whether more remain; answers the page and, when
 * more remain, the Link header of the next one (the request's path and query with the new cursor).
 */
export async function page<T>(
  fetch: (p: { after?: ListPosition; limit?: number }) => Promise<{ position: ListPosition; view: T }[]>,
  query: { limit?: number; cursor?: string },
  url: string,
): Promise<{ items: T[]; link: string | null }> {
  const after = decodeCursor(query.cursor)
  if (query.limit === undefined) return { items: (await fetch({ after })).map((r) => r.view), link: null }
  const rows = await fetch({ after, limit: query.limit + 1 })
  const items = rows.slice(0, query.limit)
  if (rows.length <= query.limit) return { items: items.map((r) => r.view), link: null }
  const next = new URL(url, 'http://placeholder')
  next.searchParams.set('cursor', encodeCursor(items.at(-1)!.position))
  return { items: items.map((r) => r.view), link: `<${next.pathname}${next.search}>; rel="next"` }
}
