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
 * about (a write outside a company's paths, such as the catalogue, a webhook or a hosted page,
 * every company's; issuing a token none). Every instance, this one included, also hears of the
 * change from the database: its commit announces it (migrations 0008 and 0012), so a writer
 * that dies right after committing cannot leave the others stale. Forgetting here first is what
 * lets a client read its own writes: the announcement comes back to this process on another
 * connection, possibly after the client's next read.
 */
export function installCacheForgetting(app: FastifyInstance, cache: Pick<ReadCache, 'forget'>) {
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat()
    if (methods.every((method) => READS.has(method)) || route.url.startsWith('/oauth/')) return
    const forget: onSendHookHandler = async (request) => {
      cache.forget((request.params as { company_id?: string } | undefined)?.company_id)
    }
    route.onSend = [...[route.onSend ?? []].flat(), forget]
  })
}
