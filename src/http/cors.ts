import cors from '@fastify/cors'
import type { FastifyInstance, FastifyRequest } from 'fastify'

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']
const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id']
// Headers a browser hides from scripts unless exposed; Link is the lists' paging header.
const EXPOSED_HEADERS = [
  'Location',
  'Retry-After',
  'X-Request-Id',
  'Idempotent-Replayed',
  'Link',
  'WWW-Authenticate',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Content-Disposition',
]
const PREFLIGHT_MAX_AGE_SECONDS = 600

/**
 * CORS for CORS_ORIGINS (none by default: nothing installed). Installed first, so a preflight is
 * answered before authentication and limits. Other origins and the hosted pages (same-origin forms
 * with a CSRF token) get no CORS header; their preflight ends in a 404.
 */
export async function installCors(app: FastifyInstance, origins: readonly string[]) {
  if (origins.length === 0) return
  const allowed = new Set(origins)
  await app.register(cors, {
    hideOptionsRoute: true,
    delegator: (request: FastifyRequest, callback) => {
      const origin = request.headers.origin
      const ok = origin !== undefined && allowed.has(origin) && !isHostedPage(request.url)
      // Spelled out, not spread: adding properties after a spread is slow on V8, and this runs per request.
      callback(null, {
        origin: ok ? origin : false,
        methods: METHODS,
        allowedHeaders: ALLOWED_HEADERS,
        exposedHeaders: EXPOSED_HEADERS,
        maxAge: PREFLIGHT_MAX_AGE_SECONDS,
        strictPreflight: false,
      })
    },
  })
}

function isHostedPage(url: string): boolean {
  return url === '/hosted' || url.startsWith('/hosted/') || url.startsWith('/hosted?')
}
