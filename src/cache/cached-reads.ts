import type { FastifyInstance, FastifyReply, onSendHookHandler } from 'fastify'
import type { ReadCache } from './read-cache.ts'
import type { CachedRead } from './read-areas.ts'

/**
 * Answers a read from the cache; a miss is serialized by the route's own response schema, the same
 * bytes as uncached. `query` is what else the answer depends on (for a list, the request's URL).
 */
export async function replyCached<T>(
  reply: FastifyReply,
  cache: Pick<ReadCache, 'get'>,
  companyId: string,
  read: CachedRead,
  query: string,
  load: () => Promise<T>,
) {
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
 * A write's answer waits until its changes, named by the tables' triggers, are announced to every
 * instance, so no route declares what it changes and none can forget to. This instance forgets
 * them before answering, so a client reads its own writes. Refused or failed writes do not wait.
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
