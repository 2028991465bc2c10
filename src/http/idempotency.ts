import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { DB } from '../db/tables.ts'
import type { Clock } from '../clock.ts'
import type { Scheduler } from '../jobs/scheduler.ts'
import { Conflict } from './errors.ts'

declare module 'fastify' {
  interface FastifyRequest { idempotency: { owner: string; key: string } | null }
}

const REPLAYED_HEADERS = ['location', 'content-type', 'cache-control']
const KEY_LIFETIME_MS = 24 * 3_600_000
const PURGE_JOB = 'idempotency.purge'
const PURGE_EVERY_MS = 3_600_000
const WAIT_FOR_FIRST_MS = 10_000

/**
 * `Idempotency-Key` on POST and PUT: the first request with a key runs and its answer is kept
 * for 24 h (by the service's clock); the same key and body replays that answer; another body is a 409. A request that
 * arrives while the first is still running waits for its answer. A 5xx is not kept, so the
 * client may retry. An answer marked `Cache-Control: no-store` holds a secret shown once (a new
 * client's secret): its body is never written down, and a replay is a 409 instead, so a retry
 * neither leaks the secret nor creates a second client. Routes that look at no token (the token
 * endpoint, operations) make no resources and ignore the header.
 */
export function installIdempotency(app: FastifyInstance, deps: { db: Kysely<DB>; clock: Clock; scheduler: Pick<Scheduler, 'register' | 'schedule'> }) {
  const { db, clock, scheduler } = deps
  app.decorateRequest('idempotency', null)

  // Keys past their 24 hours are deleted hourly; one job per hour (its key), each scheduling the next.
  const purgeKey = (at: Date) => new Date(Math.floor(at.getTime() / PURGE_EVERY_MS) * PURGE_EVERY_MS).toISOString()
  scheduler.register(PURGE_JOB, async ({ trx, now }) => {
    await trx.deleteFrom('idempotency_keys').where('created_at', '<', new Date(now.getTime() - KEY_LIFETIME_MS)).execute()
    const next = new Date(now.getTime() + PURGE_EVERY_MS)
    await scheduler.schedule(trx, { kind: PURGE_JOB, key: purgeKey(next), runAt: next })
  })
  app.addHook('onReady', async () => {
    await scheduler.schedule(db, { kind: PURGE_JOB, key: purgeKey(clock.now()), runAt: clock.now() })
  })

  // The hooks go on the POST and PUT routes only: a read pays nothing for them (three async
  // hooks on every request were a visible share of a read's CPU in the profile, bench/RESULTS.md).
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!methods.some((m) => m === 'POST' || m === 'PUT')) return
    const access = route.config?.access
    if (access === undefined || access === 'none') return
    acceptKeyHeader((route.schema ??= {}) as Record<string, any>)
    route.preHandler = [...toArray(route.preHandler), claimKey]
    route.onSend = [...toArray(route.onSend), keep]
    route.onResponse = [...toArray(route.onResponse), free]
  })

  async function claimKey(request: FastifyRequest, reply: FastifyReply) {
    if (request.method !== 'POST' && request.method !== 'PUT') return
    // Its length was checked with the route's headers (acceptKeyHeader).
    const key = request.headers['idempotency-key']
    if (typeof key !== 'string') return
    const owner = request.principal?.clientId ?? `ip:${request.ip}`
    const hash = requestHash(request)
    // Claims the key, or takes over one whose 24 hours are over.
    const now = clock.now()
    const claimed = await db.insertInto('idempotency_keys').values({ owner, key, request_hash: hash, created_at: now })
      .onConflict((oc) => oc.columns(['owner', 'key'])
        .doUpdateSet({ request_hash: hash, status_code: null, response_headers: null, response_body: null, created_at: now })
        .where('idempotency_keys.created_at', '<', new Date(now.getTime() - KEY_LIFETIME_MS)))
      .returning('key').executeTakeFirst()
    if (claimed) {
      request.idempotency = { owner, key }
      return
    }
    const deadline = Date.now() + WAIT_FOR_FIRST_MS
    for (;;) {
      const stored = await db.selectFrom('idempotency_keys').selectAll().where('owner', '=', owner).where('key', '=', key).executeTakeFirst()
      if (!stored) throw new Conflict('The first request with this Idempotency-Key failed; send it again')
      if (stored.request_hash !== hash) throw new Conflict('This Idempotency-Key was used with another request')
      if (stored.status_code !== null) {
        if (isSecret(stored.response_headers ?? {})) {
          throw new Conflict('The first request with this Idempotency-Key succeeded; its answer held a secret, which is shown only once')
        }
        reply.code(stored.status_code).header('idempotent-replayed', 'true')
        for (const [name, value] of Object.entries(stored.response_headers ?? {})) reply.header(name, value)
        return reply.send(stored.response_body ?? undefined)
      }
      if (Date.now() > deadline) throw new Conflict('A request with this Idempotency-Key is still running')
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }

  async function keep(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const claim = request.idempotency
    if (!claim) return payload
    request.idempotency = null
    if (reply.statusCode >= 500) {
      await db.deleteFrom('idempotency_keys').where('owner', '=', claim.owner).where('key', '=', claim.key).execute()
      return payload
    }
    const headers: Record<string, string> = {}
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name)
      if (value !== undefined) headers[name] = String(value)
    }
    const body = typeof payload === 'string' && !isSecret(headers) ? payload : null
    await db.updateTable('idempotency_keys')
      .set({ status_code: reply.statusCode, response_headers: JSON.stringify(headers), response_body: body })
      .where('owner', '=', claim.owner).where('key', '=', claim.key).execute()
    return payload
  }

  // A request that failed before it answered (an aborted connection) frees its key.
  async function free(request: FastifyRequest) {
    const claim = request.idempotency
    if (!claim) return
    await db.deleteFrom('idempotency_keys').where('owner', '=', claim.owner).where('key', '=', claim.key)
      .where('status_code', 'is', null).execute().catch(() => {})
  }
}

function toArray<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return []
  return Array.isArray(value) ? value : [value]
}

/**
 * The route's headers schema takes `Idempotency-Key`: validated with the rest of the request
 * (1 to 255 characters, else a 400 naming it) and documented in /openapi.json by the same schema.
 */
function acceptKeyHeader(schema: Record<string, any>) {
  const header = { type: 'string', minLength: 1, maxLength: 255, description: 'The same key and body within 24 h replays the first answer; another body is a 409' }
  if (!schema.headers) schema.headers = { type: 'object', properties: { 'idempotency-key': header } }
  else if (schema.headers.type === 'object') schema.headers.properties = { 'idempotency-key': header, ...schema.headers.properties }
  else throw new Error('A POST or PUT route that takes Idempotency-Key needs an object headers schema')
}

function isSecret(headers: Record<string, string>): boolean {
  return /no-store/.test(headers['cache-control'] ?? '')
}

function requestHash(request: FastifyRequest): string {
  return createHash('sha256').update(`${request.method} ${request.url}\n${JSON.stringify(request.body ?? null)}`).digest('hex')
}
