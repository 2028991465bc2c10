import type { FastifyInstance, FastifyReply, onSendHookHandler } from 'fastify'
import type { ReadCache } from '../db/read-cache.ts'

/**
 * Answers a read from the cache (src/db/read-cache.ts): on a miss, `load` runs and its result is
 * serialized by the route's own response schema, the same bytes an uncached answer would have;
 * Fastify sends a JSON string as it is.
 */
export async function replyCached<T>(reply: FastifyReply, cache: Pick<ReadCache, 'get'>, companyId: string, read: string, load: () => Promise<T>) {
  const body = await cache.get(companyId, read, async () => reply.serialize(await load()) as string)
  return reply.type('application/json; charset=utf-8').send(body)
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * Before it answers a write, an instance forgets the cached reads of the company the write was
 * about; as it answers, it announces the change to every instance (src/db/read-cache.ts, sent
 * within a few milliseconds together with other writes' announcements; the service's own
 * sessions leave announcing to it, migration 0008 says why). Forgetting locally first is what
 * lets a client read its own writes: the announcement comes back to this process on another
 * connection, possibly after the client's next read. A write outside a company's paths (the
 * catalogue, a webhook, a hosted page) concerns every company; issuing a token changes none. A
 * refused request (4xx) wrote nothing and announces nothing.
 */
export function installCacheForgetting(app: FastifyInstance, cache: Pick<ReadCache, 'forget' | 'announce'>) {
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat()
    if (methods.every((method) => READS.has(method)) || route.url.startsWith('/oauth/')) return
    const announce: onSendHookHandler = async (request, reply) => {
      const companyId = (request.params as { company_id?: string } | undefined)?.company_id
      cache.forget(companyId)
      if (reply.statusCode >= 400 && reply.statusCode < 500) return
      cache.announce(companyId).catch((err: unknown) => {
        // The write stands; other instances lose their LISTEN connection with the database, and with it their cache.
        request.log.warn({ err }, 'could not announce a change to cached reads')
      })
    }
    route.onSend = [...[route.onSend ?? []].flat(), announce]
  })
}
