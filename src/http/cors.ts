import cors from '@fastify/cors'
import type { FastifyInstance, FastifyRequest } from 'fastify'

/** What a browser script may send: the methods of the API and the request headers it reads. */
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']
const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id']
/**
 * The response headers the service sends that a browser hides from scripts unless exposed
 * (Cache-Control, Content-Type and Content-Language are readable anyway). Link is the paging
 * header of the lists.
 */
const EXPOSED_HEADERS = [
  'Location', 'Retry-After', 'X-Request-Id', 'Idempotent-Replayed', 'Link', 'WWW-Authenticate',
  'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Content-Disposition',
]
/** How long a browser may reuse a preflight's answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600

/**
 * CORS for the browser origins of CORS_ORIGINS (none by default: then nothing is installed and
 * no answer carries a CORS header). Installed before every other request hook, so a preflight is
 * answered before authentication, the rate limit and the request limits see it (a browser sends
 * no Authorization header with a preflight).
 *
 * An origin not listed, a request without Origin, and any request to the hosted pages (browser
 * forms served and posted on their own origin, protected by a CSRF token) get no CORS header
 * at all; their preflight is not answered by CORS and ends in the not-found handler: 404
 * `{errors, code: "not_found"}` (not a 405: the preflight route gives every path OPTIONS). The
 * browser then refuses the cross-origin request.
 */
export async function installCors(app: FastifyInstance, origins: readonly string[]) {
  if (origins.length === 0) return
  const allowed = new Set(origins)
  await app.register(cors, {
    hideOptionsRoute: true,
    delegator: (request: FastifyRequest, callback) => {
      const origin = request.headers.origin
      const ok = origin !== undefined && allowed.has(origin) && !isHostedPage(request.url)
      // Spelled out, not spread from shared options: on Node 20 a property added after a spread
      // costs over a microsecond, on every request (docs/performance.md).
      callback(null, {
        origin: ok ? origin : false, methods: METHODS, allowedHeaders: ALLOWED_HEADERS, exposedHeaders: EXPOSED_HEADERS,
        maxAge: PREFLIGHT_MAX_AGE_SECONDS, strictPreflight: false,
      })
    },
  })
}

function isHostedPage(url: string): boolean {
  return url === '/hosted' || url.startsWith('/hosted/') || url.startsWith('/hosted?')
}
