import type { FastifyInstance } from 'fastify'
import { ValidationError } from '../core/errors.ts'

/**
 * Bounds on what one request may make the service compute: a megabyte of `[[[[...` fits the body
 * limit, yet parsing and walking it holds the event loop, and a value deeper than the stack is a
 * 500. So a JSON body is scanned once, in linear time, before it is parsed.
 */
export const JSON_MAX_DEPTH = 64
/** Array elements and object members in all: far above any body of the spec. */
export const JSON_MAX_MEMBERS = 20_000
export const QUERY_MAX_PARAMETERS = 100

const OPEN_ARRAY = 0x5b,
  OPEN_OBJECT = 0x7b,
  CLOSE_ARRAY = 0x5d,
  CLOSE_OBJECT = 0x7d
const COMMA = 0x2c,
  QUOTE = 0x22,
  BACKSLASH = 0x5c

/**
 * Counts brackets and commas outside strings: containers plus commas bound the members. Malformed
 * text is left to JSON.parse to refuse.
 */
export function jsonShapeProblem(text: string): string | undefined {
  let depth = 0
  let members = 0
  const length = text.length
  for (let i = 0; i < length; i++) {
    const ch = text.charCodeAt(i)
    if (ch === QUOTE) {
      for (i++; i < length; i++) {
        const s = text.charCodeAt(i)
        if (s === BACKSLASH) i++
        else if (s === QUOTE) break
      }
    } else if (ch === OPEN_ARRAY || ch === OPEN_OBJECT) {
      if (++depth > JSON_MAX_DEPTH) return `The body is nested deeper than ${JSON_MAX_DEPTH} levels`
      if (++members > JSON_MAX_MEMBERS) return tooWide()
    } else if (ch === CLOSE_ARRAY || ch === CLOSE_OBJECT) {
      // Unbalanced: JSON.parse refuses it here, having read only what was checked.
      if (--depth < 0) return undefined
    } else if (ch === COMMA) {
      if (++members > JSON_MAX_MEMBERS) return tooWide()
    }
  }
  return undefined
}

const tooWide = () => `The body has more than ${JSON_MAX_MEMBERS} array elements and object members`

/**
 * Every route's JSON parser: the shape check, then Fastify's own (which refuses `__proto__` keys).
 * Query strings are bounded in parameters too: thousands of repeated keys become arrays to walk.
 */
export function installRequestLimits(app: FastifyInstance) {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  const parse = (
    request: Parameters<typeof parseJson>[0],
    body: string | Buffer,
    done: NonNullable<Parameters<typeof parseJson>[2]>,
  ) => {
    const problem = jsonShapeProblem(body as string)
    if (problem) return done(new ValidationError(problem), undefined)
    parseJson(request, body as string, done)
  }
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse)
  // A JSON merge patch (RFC 7396) is JSON.
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, parse)

  // Synchronous and cheap: it runs on every request.
  app.addHook('onRequest', (request, _reply, done) => {
    const url = request.url
    const start = url.indexOf('?')
    if (start < 0) return done()
    let parameters = 1
    for (let i = url.indexOf('&', start); i >= 0; i = url.indexOf('&', i + 1)) {
      if (++parameters > QUERY_MAX_PARAMETERS)
        return done(new ValidationError(`The query string has more than ${QUERY_MAX_PARAMETERS} parameters`))
    }
    done()
  })
}
