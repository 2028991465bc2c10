import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TProperties, type TSchema } from 'typebox'
import { ValidationError } from '../core/errors.ts'
import { isRealDay } from '../core/days.ts'
import type { Page, Paged, SortKey } from '../core/paging.ts'

/**
 * Cursor paging shared by every list route (decisions: "Lists and paging").
 *
 * Without `limit` a list answers whole, as it always has. With it, one page of at most `limit`
 * items and, when more remain, `Link: <url>; rel="next"` whose URL is the request's own path
 * and query (relative: the service never trusts the request's Host) with `cursor` set to the
 * next page's. The cursor is opaque to clients: base64url of JSON holding the last row's sort
 * key, the page's number and a fingerprint of the list (route, path parameters, filters), so a
 * cursor altered, or carried to another list or another filter set, is a 400 naming `cursor`.
 * Repositories read the page by keyset (`src/db/keyset.ts`), never by OFFSET.
 */

export const MAX_LIMIT = 500

export const PageFields = {
  limit: Type.Optional(Type.Integer({
    minimum: 1, maximum: MAX_LIMIT,
    description: `At most this many items (1 to ${MAX_LIMIT}); when more remain, the Link header names the next page. Without it, the whole list.`,
  })),
  cursor: Type.Optional(Type.String({
    minLength: 1, maxLength: 2048,
    description: 'The next page, as the Link header of the previous page gave it (opaque; only with limit, the same filters and the same list).',
  })),
}

/** A list's query string: its filters and limit/cursor; nothing else is accepted. */
export const pageQuery = <T extends TProperties>(filters: T = {} as T) =>
  Type.Object({ ...filters, ...PageFields }, { additionalProperties: false })

/**
 * limit/cursor of a list that is never answered whole (a log that grows without bound: events,
 * delivery attempts): without `limit`, pages of `defaultLimit`. Pair with readPage's defaultLimit.
 */
export const pageFieldsWithDefault = (defaultLimit: number) => ({
  limit: Type.Optional(Type.Integer({
    minimum: 1, maximum: MAX_LIMIT,
    description: `At most this many items (1 to ${MAX_LIMIT}, default ${defaultLimit}); when more remain, the Link header names the next page.`,
  })),
  cursor: Type.Optional(Type.String({
    minLength: 1, maxLength: 2048,
    description: 'The next page, as the Link header of the previous page gave it (opaque; only with the same filters and the same list).',
  })),
})

const LINK_HEADER = {
  link: {
    type: 'string',
    description: 'With `limit`, when more items remain: `<url>; rel="next"` (RFC 8288), the same request with `cursor` set to the next page. The URL is relative to the service (path and query).',
    examples: ['</api/v1/companies/9b1f2c1e-4f7a-4c55-9a51-0f3c2d1e8a77/contracts?limit=50&cursor=WyJhIiwxLFsiUm9zc2kiXV0>; rel="next"'],
  },
}

/** A list route's 200 answer, with the Link header documented. */
export const listResponse = <T extends TSchema>(schema: T): T => ({ ...schema, headers: LINK_HEADER }) as T

/** What sort key values a list's cursor carries, checked when it comes back. `serial`: a bigserial position (beyond integer's range). */
export type KeyKind = 'text' | 'uuid' | 'int' | 'serial' | 'day' | 'time'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
// PostgreSQL's text of a timestamptz (ISO DateStyle), or an ISO 8601 instant.
const TIME = /^(\d{4}-\d{2}-\d{2})[ T]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?([+-]\d{2}(:?\d{2})?|Z)$/
/**
 * Whether a cursor's key value has the kind the list's sort key has. Strict, because the value
 * reaches SQL as a parameter: whatever PostgreSQL would refuse to cast (an impossible day, a
 * number beyond integer, a NUL) must be the cursor's 400 here, never a 500 there.
 */
const KIND_CHECK: Record<KeyKind, (v: unknown) => boolean> = {
  text: (v) => typeof v === 'string' && v.length <= 1000 && !v.includes('\u0000'),
  uuid: (v) => typeof v === 'string' && UUID.test(v),
  int: (v) => Number.isInteger(v) && Math.abs(v as number) <= 2_147_483_647,
  serial: (v) => Number.isSafeInteger(v) && (v as number) >= 0,
  day: (v) => typeof v === 'string' && isRealDay(v),
  time: (v) => {
    const match = typeof v === 'string' ? TIME.exec(v) : null
    return match !== null && isRealDay(match[1]!)
  },
}

/** Which list and which filters a cursor belongs to: route, path parameters, query but limit/cursor. */
function fingerprint(request: FastifyRequest): string {
  const query = { ...(request.query as Record<string, unknown> | undefined) }
  delete query.limit
  delete query.cursor
  const sorted = Object.keys(query).sort().map((key) => [key, query[key]])
  const params = request.params as Record<string, unknown> | undefined
  const paramList = Object.keys(params ?? {}).sort().map((key) => [key, String(params![key]).toLowerCase()])
  return createHash('sha256').update(JSON.stringify([request.routeOptions.url, paramList, sorted])).digest('base64url').slice(0, 16)
}

const badCursor = (why: string) => new ValidationError(`querystring/cursor ${why}`, [{ field: 'querystring/cursor', message: `querystring/cursor ${why}` }])

/**
 * The page a list request asks for; `kinds` are the list's sort key, checked in a cursor.
 * `defaultLimit`: the page size without `limit` (lists never answered whole; the query string's
 * fields from pageFieldsWithDefault), where otherwise a missing limit means the whole list.
 */
export function readPage(request: FastifyRequest, kinds: readonly KeyKind[], options: { defaultLimit?: number } = {}): Page {
  const { limit: asked, cursor } = request.query as { limit?: number; cursor?: string }
  const limit = asked ?? options.defaultLimit
  if (cursor === undefined) return { limit, number: 1 }
  if (limit === undefined) throw badCursor('needs limit (a cursor continues a paged list)')
  let decoded: unknown
  try {
    const bytes = Buffer.from(cursor, 'base64url')
    if (bytes.toString('base64url') !== cursor) throw new Error('not base64url')
    decoded = JSON.parse(bytes.toString('utf8'))
  } catch {
    throw badCursor('is not a cursor this service gave (altered or cut)')
  }
  const c = decoded as { f?: unknown; p?: unknown; k?: unknown }
  if (typeof decoded !== 'object' || decoded === null || typeof c.f !== 'string') throw badCursor('is not a cursor this service gave (altered or cut)')
  if (c.f !== fingerprint(request)) throw badCursor('belongs to another list or to other filters: page with the filters it was made with')
  if (!Number.isSafeInteger(c.p) || (c.p as number) < 2 || !Array.isArray(c.k) || c.k.length !== kinds.length
    || !c.k.every((value, i) => KIND_CHECK[kinds[i]!](value))) {
    throw badCursor('is not a cursor this service gave (altered or cut)')
  }
  return { limit, after: c.k as SortKey, number: c.p as number }
}

/** The items to answer; sets `Link: <...>; rel="next"` when another page follows. */
export function answerPage<T>(request: FastifyRequest, reply: FastifyReply, page: Page, paged: Paged<T>): T[] {
  linkNext(request, reply, page, paged.next)
  return paged.items
}

/** Sets `Link: <...>; rel="next"` when a paged request (with limit) has a next key: for answers that wrap their items (32, the inbox). */
export function linkNext(request: FastifyRequest, reply: FastifyReply, page: Page, next: SortKey | undefined) {
  const url = nextPageUrl(request, page, next)
  if (url) reply.header('link', `<${url}>; rel="next"`)
}

/** The next page's URL (the request's path and query with its cursor), when a paged request has a next key: for a link in a page. */
export function nextPageUrl(request: FastifyRequest, page: Page, next: SortKey | undefined): string | undefined {
  if (page.limit === undefined || !next) return undefined
  const cursor = Buffer.from(JSON.stringify({ f: fingerprint(request), p: page.number + 1, k: next })).toString('base64url')
  const [path, search = ''] = request.url.split('?', 2)
  const query = new URLSearchParams(search)
  query.set('cursor', cursor)
  return `${path}?${query.toString()}`
}
