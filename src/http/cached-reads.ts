import type { FastifyInstance, FastifyReply, onSendHookHandler } from 'fastify'
import type { ReadCache } from '../db/read-cache.ts'
import type { Area, CachedRead } from '../db/read-areas.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The tables a write route may change, among those cached reads show (src/db/read-areas.ts):
     * its write forgets and announces only the answers that show them; [] for a route that
     * changes none of them. Left out: every cached answer of the company (or, for a route
     * outside a company's paths, of every company).
     */
    changes?: readonly Area[]
  }
}

/**
 * Answers a read from the cache (src/db/read-cache.ts): on a miss, `load` runs and its result is
 * serialized by the route's own response schema, the same bytes an uncached answer would have,
 * with the Link header `load` set (a page); Fastify sends a JSON string as it is. `query` is
 * what else the answer depends on besides the company (for a list: the request's URL, whose
 * query picks the page and whose path and query the Link header repeats).
 */
export async function replyCached<T>(reply: FastifyReply, cache: Pick<ReadCache, 'get'>, companyId: string, read: CachedRead, query: string, load: () => Promise<T>) {
  const answer = await cache.get(companyId, read, query, async () => {
    const body = reply.serialize(await load()) as string
    const link = reply.getHeader('link')
    return typeof link === 'string' ? { body, link } : { body }
  })
  if (answer.link !== undefined) reply.header('link', answer.link)
  return reply.type('application/json; charset=utf-8').send(answer.body)
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * Before it answers a write, an instance forgets the cached reads the write changes: those that
 * show a table the route's `changes` names, or, when it names none, every read of the company
 * the write was about; then, after the write's commit and before its answer leaves, it announces
 * the change to every instance (src/db/read-cache.ts, together with other writes' announcements
 * of the same few milliseconds; the service's own sessions leave announcing to it, migration 0008
 * says why). So once a client has a write's success, the notice is on its way to every instance:
 * a read elsewhere is stale only for the notice's travel to that instance. Forgetting locally
 * first is what lets a client read its own writes: the announcement comes back to this process
 * on another connection, possibly after the client's next read. A write outside a company's
 * paths (the catalogue, a webhook, a hosted page) concerns every company; issuing a token
 * changes none. A refused request (4xx) wrote nothing and announces nothing; a failed one (5xx)
 * announces without holding its answer back, the database being likely unwell.
 *
 * A route's `changes` that leaves out a table it writes would leave other instances' answers
 * stale until the record of the commit is read (200 ms), and this instance's too:
 * test/read-cache-areas.test.ts compares each declaring route's `changes` with the tables its
 * commits recorded.
 */
export function installCacheForgetting(app: FastifyInstance, cache: Pick<ReadCache, 'forget' | 'announce'>) {
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat()
    if (methods.every((method) => READS.has(method)) || route.url.startsWith('/oauth/')) return
    const areas = route.config?.changes
    if (areas?.length === 0) return
    const announce: onSendHookHandler = async (request, reply) => {
      const companyId = (request.params as { company_id?: string } | undefined)?.company_id
      cache.forget(companyId, areas)
      if (reply.statusCode >= 400 && reply.statusCode < 500) return
      const sent = cache.announce(companyId, areas).catch((err: unknown) => {
        // The write stands: the others hear of it from the record its commit left (read-cache-changes.ts).
        request.log.warn({ err }, 'could not announce a change to cached reads')
      })
      if (reply.statusCode < 500) await sent
    }
    route.onSend = [...[route.onSend ?? []].flat(), announce]
  })
}
