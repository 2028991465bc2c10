import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TProperties, type TSchema } from 'typebox'
import { ValidationError } from '../core/errors.ts'
import { isRealDay } from '../core/days.ts'
import type { Page, Paged, SortKey } from '../core/paging.ts'

// Cursor paging: without `limit` a list answers whole; with it, a page and a relative `Link` rel="next".
// The opaque cursor carries the last sort key and a fingerprint of the list, so one altered or carried
// to another list is a 400 naming `cursor`. Repositories read by keyset (db/keyset.ts), never OFFSET.

export const MAX_LIMIT = 500

export const PageFields = {
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_LIMIT,
      description:
        `At most this many items (1 to ${MAX_LIMIT}); when more remain, the Link header names the next page. ` +
        `Without it, the whole list.`,
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'The next page, as the Link header of the previous page gave it (opaque; only with limit, the same ' +
        'filters and the same list).',
    }),
  ),
}

export const pageQuery = <T extends TProperties>(filters: T = {} as T) =>
  Type.Object({ ...filters, ...PageFields }, { additionalProperties: false })

/** For lists never answered whole (growing logs): without `limit`, pages of `defaultLimit`. */
export const pageFieldsWithDefault = (defaultLimit: number) => ({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_LIMIT,
      description:
        `At most this many items (1 to ${MAX_LIMIT}, default ${defaultLimit}); when more remain, the Link header ` +
        `names the next page.`,
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'The next page, as the Link header of the previous page gave it (opaque; only with the same filters and ' +
        'the same list).',
    }),
  ),
})

const LINK_HEADER = {
  link: {
    type: 'string',
    description:
      'With `limit`, when more items remain: `<url>; rel="next"` (RFC 8288), the same request with `cursor` set ' +
      'to the next page. The URL is relative to the service (path and query).',
    examples: [
      '</api/v1/companies/9b1f2c1e-4f7a-4c55-9a51-0f3c2d1e8a77/contracts?limit=50&cursor=WyJhIiwxLFsiUm9zc2kiXV0>; ' +
        'rel="next"',
    ],
  },
}

export const listResponse = <T extends TSchema>(schema: T): T => ({ ...schema, headers: LINK_HEADER }) as T

/** `serial`: a bigserial position, beyond integer's range. */
export type KeyKind = 'text' | 'uuid' | 'int' | 'serial' | 'day' | 'time'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const TIME = /^(\d{4}-\d{2}-\d{2})[ T]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?([+-]\d{2}(:?\d{2})?|Z)$/
// Strict: a key value reaches SQL as a parameter, so whatever PostgreSQL would refuse to cast must
// be the cursor's 400 here, never a 500 there.
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

function fingerprint(request: FastifyRequest): string {
  const query = { ...(request.query as Record<string, unknown> | undefined) }
  delete query.limit
  delete query.cursor
  const sorted = Object.keys(query)
    .sort()
    .map((key) => [key, query[key]])
  const params = request.params as Record<string, unknown> | undefined
  const paramList = Object.keys(params ?? {})
    .sort()
    .map((key) => [key, String(params![key]).toLowerCase()])
  return createHash('sha256')
    .update(JSON.stringify([request.routeOptions.url, paramList, sorted]))
    .digest('base64url')
    .slice(0, 16)
}

const badCursor = (why: string) =>
  new ValidationError(`querystring/cursor ${why}`, [
    { field: 'querystring/cursor', message: `querystring/cursor ${why}` },
  ])

/** The page a list request asks for; `kinds` are the list's sort key, checked in a cursor. */
export function readPage(
  request: FastifyRequest,
  kinds: readonly KeyKind[],
  options: { defaultLimit?: number } = {},
): Page {
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
  if (typeof decoded !== 'object' || decoded === null || typeof c.f !== 'string')
    throw badCursor('is not a cursor this service gave (altered or cut)')
  if (c.f !== fingerprint(request))
    throw badCursor('belongs to another list or to other filters: page with the filters it was made with')
  if (
    !Number.isSafeInteger(c.p) ||
    (c.p as number) < 2 ||
    !Array.isArray(c.k) ||
    c.k.length !== kinds.length ||
    !c.k.every((value, i) => KIND_CHECK[kinds[i]!](value))
  ) {
    throw badCursor('is not a cursor this service gave (altered or cut)')
  }
  return { limit, after: c.k as SortKey, number: c.p as number }
}

/** The items to answer; sets `Link: <...>; rel="next"` when another page follows. */
export function answerPage<T>(request: FastifyRequest, reply: FastifyReply, page: Page, paged: Paged<T>): T[] {
  linkNext(request, reply, page, paged.next)
  return paged.items
}

/** Sets the Link header for answers that wrap their items. */
export function linkNext(request: FastifyRequest, reply: FastifyReply, page: Page, next: SortKey | undefined) {
  const url = nextPageUrl(request, page, next)
  if (url) reply.header('link', `<${url}>; rel="next"`)
}

export function nextPageUrl(request: FastifyRequest, page: Page, next: SortKey | undefined): string | undefined {
  if (page.limit === undefined || !next) return undefined
  const cursor = Buffer.from(JSON.stringify({ f: fingerprint(request), p: page.number + 1, k: next })).toString(
    'base64url',
  )
  const [path, search = ''] = request.url.split('?', 2)
  const query = new URLSearchParams(search)
  query.set('cursor', cursor)
  return `${path}?${query.toString()}`
}
