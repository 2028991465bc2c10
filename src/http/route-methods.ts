// The methods of each path, for the 405 and `Allow` of a known path called with another method
// (Fastify's router sends that to the not-found handler).
import Router, { type HTTPMethod } from 'find-my-way'
import type { FastifyInstance } from 'fastify'

export interface PathMatching {
  ignoreTrailingSlash?: boolean
  maxParamLength?: number
}

export interface RouteMethods {
  of(url: string): string[]
}

const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
const rank = (method: string) => {
  const i = ORDER.indexOf(method)
  return i === -1 ? ORDER.length : i
}
const noop = () => {}

// A second router fed by an onRoute hook matches a path exactly as Fastify's does; it must be
// installed before any route is added.
export function indexRouteMethods(app: FastifyInstance, matching: PathMatching): RouteMethods {
  const router = Router({ ...matching })
  const methods = new Set<HTTPMethod>()
  // A catch-all route (the preflight's `OPTIONS *`) adds its methods to every existing path.
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
