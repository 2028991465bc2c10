import type { FastifyInstance, FastifyReply, onSendHookHandler } from 'fastify'
import type { ReadCache } from './read-cache.ts'
import type { CachedRead } from './read-areas.ts'

/**
 * Answers a read from the cache (src/cache/read-cache.ts): on a miss, `load` runs and its result is
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
 * A write's answer waits until what it changed is announced to every instance. What it changed
 * is what the database saw written: the tables' triggers name it to the writing connection, and
 * the read cache forgets it here and announces it as soon as the work commits
 * (src/cache/read-cache-changes.ts), so no route declares it and none can forget to. This instance
 * has forgotten it before the answer leaves, so a client reads its own writes; once a client
 * holds a write's success, the notice is in PostgreSQL's queue, and a read served by another
 * instance is stale only for the notice's travel there. A refused (4xx) or failed (5xx) write
 * does not wait: it announces whatever it did write all the same.
 */
export function installCacheForgetting(app: FastifyInstance, cache: Pick<ReadCache, 'announced'>) {
  const announced: onSendHookHandler = async (_request, reply) => {
    if (reply.statusCode < 400) await cache.announced()
  }
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat()
    if (methods.every((method) => READS.has(method))) return
    route.onSend = [...[route.onSend ?? []].flat(), announced]
  })
}
