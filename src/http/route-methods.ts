/**
 * The methods each path of the service has, for the `405` and `Allow` of a known path called with
 * another method (Fastify's router answers that with its not-found handler, as for an unknown path).
 */
import Router, { type HTTPMethod } from 'find-my-way'
import type { FastifyInstance } from 'fastify'

/** The options of Fastify's router that decide whether a path matches a route; both routers get them. */
export interface PathMatching { ignoreTrailingSlash?: boolean; maxParamLength?: number }

export interface RouteMethods {
  /** The methods of the routes matching the request URL (query string ignored), in a fixed order; none for an unknown path. */
  of(url: string): string[]
}

const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
const rank = (method: string) => { const i = ORDER.indexOf(method); return i === -1 ? ORDER.length : i }
const noop = () => {}

/**
 * Installs an onRoute hook feeding a second router with every route's method and path, so a path
 * matches here exactly as it does in Fastify's (parameters, static segments beside them, a trailing
 * slash, a query string). Must be installed before any route is added.
 */
export function indexRouteMethods(app: FastifyInstance, matching: PathMatching): RouteMethods {
  // No onBadUrl nor onMaxParamLength: a path this router cannot match is simply not found here.
  const router = Router({ ...matching })
  const methods = new Set<HTTPMethod>()
  // A catch-all route (the CORS preflight's `OPTIONS *`) adds its methods to every path that
  // exists, without making any path exist.
  const everywhere = new Set<string>()
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat() as HTTPMethod[]) {
      if (route.url === '*' || route.url === '/*') everywhere.add(method)
      else if (!router.hasRoute(method, route.url)) {
        router.on(method, route.url, noop)
        methods.add(method)
      }
    }
  })
  return {
    of(url) {
      const found: string[] = [...methods].filter((method) => router.find(method, url) !== null)
      if (found.length === 0) return []
      return [...new Set([...found, ...everywhere])].sort((a, b) => rank(a) - rank(b))
    },
  }
}
