import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'

// Hop-by-hop and framing headers belong to the inner answer, not to the one relayed.
const NOT_RELAYED = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'date'])

/**
 * The API reference page at /docs (Scalar, reading /openapi.json). Scalar's Fastify plugin
 * carries its 4 MB browser bundle as a string and an OpenAPI parser: about 40 MB of memory and
 * half a second of every start for a page few requests ask for. It is loaded on the first visit
 * instead, into a small Fastify instance of its own that these two routes hand requests to.
 */
export function installDocs(app: FastifyInstance) {
  let reference: Promise<FastifyInstance> | undefined

  async function load() {
    const { default: scalar } = await import('@scalar/fastify-api-reference')
    const docs = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true } })
    await docs.register(scalar, { routePrefix: '/docs', configuration: { url: '/openapi.json' } })
    await docs.ready()
    return docs
  }

  async function relay(request: FastifyRequest, reply: FastifyReply) {
    // A failed load (say, a missing package) is tried again at the next visit.
    reference ??= load().catch((err: unknown) => { reference = undefined; throw err })
    const docs = await reference
    const answer = await docs.inject({ method: request.method as 'GET' | 'HEAD', url: request.url, headers: { host: request.headers.host ?? 'localhost' } })
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !NOT_RELAYED.has(name)) reply.header(name, value)
    }
    return reply.code(answer.statusCode).send(answer.rawPayload)
  }

  for (const url of ['/docs', '/docs/*']) {
    app.route({ method: 'GET', url, schema: { hide: true }, config: { access: 'none' }, handler: relay })
  }
}
