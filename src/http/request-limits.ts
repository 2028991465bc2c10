import type { FastifyInstance } from 'fastify'
import { ValidationError } from '../core/errors.ts'

/**
 * Bounds on what one request may make the service compute, beyond its size (docs/decisions.md,
 * "Limits on what one request may cost"). A megabyte of `[[[[...` or of `{"k1":1,"k2":1,...}`
 * is within the body limit, yet parsing it, and everything that walks the parsed value after
 * (validation, the Idempotency-Key hash, the services), holds the event loop for hundreds of
 * milliseconds; a value deeper than the stack is a 500 where JSON.stringify meets it. So a JSON
 * body is scanned once, in linear time, before it is parsed.
 */
export const JSON_MAX_DEPTH = 64
/** Array elements and object members in all: far above any body of the spec (1,000 ids at most per list). */
export const JSON_MAX_MEMBERS = 20_000
export const QUERY_MAX_PARAMETERS = 100

const OPEN_ARRAY = 0x5b, OPEN_OBJECT = 0x7b, CLOSE_ARRAY = 0x5d, CLOSE_OBJECT = 0x7d
const COMMA = 0x2c, QUOTE = 0x22, BACKSLASH = 0x5c

/**
 * Why a JSON text is refused before parsing, or undefined. Counts the brackets and commas that
 * are outside strings: a member is the first one of its container or follows a comma, so
 * containers plus commas bound the members. Malformed text is left to JSON.parse to refuse.
 */
export function jsonShapeProblem(text: string): string | undefined {
  let depth = 0
  let members = 0
  const length = text.length
  for (let i = 0; i < length; i++) {
    const ch = text.charCodeAt(i)
    if (ch === QUOTE) {
      // Skip the string: to the next quote that no backslash escapes.
      for (i++; i < length; i++) {
        const s = text.charCodeAt(i)
        if (s === BACKSLASH) i++
        else if (s === QUOTE) break
      }
    } else if (ch === OPEN_ARRAY || ch === OPEN_OBJECT) {
      if (++depth > JSON_MAX_DEPTH) return `The body is nested deeper than ${JSON_MAX_DEPTH} levels`
      if (++members > JSON_MAX_MEMBERS) return tooWide()
    } else if (ch === CLOSE_ARRAY || ch === CLOSE_OBJECT) {
      // Unbalanced: JSON.parse refuses it at this point, having read only what was checked.
      if (--depth < 0) return undefined
    } else if (ch === COMMA) {
      if (++members > JSON_MAX_MEMBERS) return tooWide()
    }
  }
  return undefined
}

const tooWide = () => `The body has more than ${JSON_MAX_MEMBERS} array elements and object members`

/**
 * The JSON parser of every route: the shape check above, then Fastify's own parser (which
 * refuses `__proto__` and `constructor.prototype` keys, and empty bodies, with its own errors).
 * Also refuses query strings of more than QUERY_MAX_PARAMETERS parameters: the URL is bounded
 * by Node's 16 KiB header limit, but thousands of repeated keys become arrays that validation
 * and the services would walk.
 */
export function installRequestLimits(app: FastifyInstance) {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  const parse = (request: Parameters<typeof parseJson>[0], body: string | Buffer, done: NonNullable<Parameters<typeof parseJson>[2]>) => {
    const problem = jsonShapeProblem(body as string)
    if (problem) return done(new ValidationError(problem), undefined)
    parseJson(request, body as string, done)
  }
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse)
  // A JSON merge patch (RFC 7396) is JSON: PATCH routes read it as their body (decisions: "Lists and paging").
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, parse)

  // Synchronous, and a few comparisons for a URL without a query: it runs on every request.
  app.addHook('onRequest', (request, _reply, done) => {
    const url = request.url
    const start = url.indexOf('?')
    if (start < 0) return done()
    let parameters = 1
    for (let i = url.indexOf('&', start); i >= 0; i = url.indexOf('&', i + 1)) {
      if (++parameters > QUERY_MAX_PARAMETERS) return done(new ValidationError(`The query string has more than ${QUERY_MAX_PARAMETERS} parameters`))
    }
    done()
  })
}
