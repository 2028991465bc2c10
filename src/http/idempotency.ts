import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely, Selectable } from 'kysely'
import type { DB, IdempotencyKeysTable } from '../db/tables.ts'
import type { Database } from '../db/database.ts'
import { enterRequestScope, type RequestTransaction } from '../db/request-transaction.ts'
import type { Clock } from '../clock.ts'
import type { Scheduler } from '../jobs/scheduler.ts'
import { Conflict } from './errors.ts'

declare module 'fastify' {
  interface FastifyRequest { idempotency: { owner: string; key: string; transaction: RequestTransaction } | null }
}

const REPLAYED_HEADERS = ['location', 'content-type', 'cache-control']
const KEY_LIFETIME_MS = 24 * 3_600_000
/** A claim kept without an answer this long is abandoned (see the comment of installIdempotency). */
const ABANDONED_AFTER_MS = 60_000
const PURGE_JOB = 'idempotency.purge'
const PURGE_EVERY_MS = 3_600_000
const WAIT_FOR_FIRST = '10s'
const LOCK_NOT_AVAILABLE = '55P03'

/**
 * `Idempotency-Key` on POST and PUT: the first request with a key runs and its answer is kept
 * for 24 h (by the service's clock); the same key and body (compared as JSON values: key order
 * and white space do not matter) replays that answer; another body is a 409. A 5xx is not kept,
 * so the client may retry. An answer marked `Cache-Control: no-store` holds a secret shown once
 * (a new client's secret): its body is never written down, and a replay is a 409 instead, so a
 * retry neither leaks the secret nor creates a second client. Routes that look at no token (the
 * token endpoint, operations) make no resources and ignore the header.
 *
 * The claim, the request's work and its answer are one transaction (src/db/request-transaction.ts):
 * the claim's row is written first in it, every statement of the request joins it, and the
 * answer is written to the row just before the commit. So a key is either answered, with its
 * work committed, or it is not claimed at all: an instance that dies mid-request (kill -9, a lost
 * connection) leaves nothing, PostgreSQL rolls its transaction back as soon as the connection
 * drops, and the retry runs as if it were the first. A request that arrives while the first
 * holds the key waits on the claim's row lock (up to 10 s, then a 409 "still running") and then
 * replays. An instance that hangs without dying loses its transaction after 60 s idle
 * (`idle_in_transaction_session_timeout`). A claim without an answer that was committed anyway
 * (by an earlier version of the service, which claimed in a transaction of its own) is
 * abandoned 60 s after it was made: the retry runs.
 */
export function installIdempotency(app: FastifyInstance, deps: { db: Kysely<DB>; database: Pick<Database, 'engine' | 'requestTransaction'>; clock: Clock; scheduler: Pick<Scheduler, 'register' | 'schedule'> }) {
  const { db, database, clock, scheduler } = deps
  app.decorateRequest('idempotency', null)
  const settings = [
    `SET LOCAL lock_timeout = '${WAIT_FOR_FIRST}'`,
    // A hung instance's transaction ends after 60 s; PGlite's one session is this process itself.
    ...(database.engine === 'postgres' ? [`SET LOCAL idle_in_transaction_session_timeout = '${ABANDONED_AFTER_MS / 1000}s'`] : []),
  ]

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
    route.preHandler = [...toArray(route.preHandler), scopeKeyed, claimKey]
    route.onSend = [...toArray(route.onSend), keep]
    route.onResponse = [...toArray(route.onResponse), free]
  })

  // The rest of a keyed request runs in a scope that can hold its transaction (callback style:
  // the scope must enclose the handler and the onSend hooks that follow).
  function scopeKeyed(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
    if (typeof request.headers['idempotency-key'] === 'string') enterRequestScope(done)
    else done()
  }

  const findKey = (owner: string, key: string) => db.selectFrom('idempotency_keys').selectAll().where('owner', '=', owner).where('key', '=', key).executeTakeFirst()

  async function claimKey(request: FastifyRequest, reply: FastifyReply) {
    if (request.method !== 'POST' && request.method !== 'PUT') return
    // Its length was checked with the route's headers (acceptKeyHeader).
    const key = request.headers['idempotency-key']
    if (typeof key !== 'string') return
    const owner = request.principal?.clientId ?? `ip:${request.ip}`
    const hash = requestHash(request)
    const now = clock.now()
    const live = (row: { status_code: number | null; created_at: Date } | undefined) =>
      row !== undefined && row.created_at.getTime() >= now.getTime() - (row.status_code === null ? ABANDONED_AFTER_MS : KEY_LIFETIME_MS)

    // An answer kept already is replayed without a transaction.
    const kept = await findKey(owner, key)
    if (live(kept)) return answerFrom(kept!, hash, reply)

    const transaction = await database.requestTransaction(settings)
    let claimed: unknown
    try {
      // Claims the key, or takes over one past its 24 hours or abandoned; waits while another
      // request's transaction holds it.
      claimed = await db.insertInto('idempotency_keys').values({ owner, key, request_hash: hash, created_at: now })
        .onConflict((oc) => oc.columns(['owner', 'key'])
          .doUpdateSet({ request_hash: hash, status_code: null, response_headers: null, response_body: null, created_at: now })
          .where((eb) => eb.or([
            eb('idempotency_keys.created_at', '<', new Date(now.getTime() - KEY_LIFETIME_MS)),
            eb.and([eb('idempotency_keys.status_code', 'is', null), eb('idempotency_keys.created_at', '<', new Date(now.getTime() - ABANDONED_AFTER_MS))]),
          ])))
        .returning('key').executeTakeFirst()
    } catch (err) {
      await transaction.end(false)
      if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) throw new Conflict('A request with this Idempotency-Key is still running')
      throw err
    }
    if (claimed) {
      request.idempotency = { owner, key, transaction }
      return
    }
    await transaction.end(false)
    const stored = await findKey(owner, key)
    if (!stored) throw new Conflict('The first request with this Idempotency-Key failed; send it again')
    return answerFrom(stored, hash, reply)
  }

  function answerFrom(stored: Selectable<IdempotencyKeysTable>, hash: string, reply: FastifyReply) {
    if (stored.request_hash !== hash) throw new Conflict('This Idempotency-Key was used with another request')
    if (stored.status_code === null) throw new Conflict('A request with this Idempotency-Key is still running')
    if (isSecret(stored.response_headers ?? {})) {
      throw new Conflict('The first request with this Idempotency-Key succeeded; its answer held a secret, which is shown only once')
    }
    reply.code(stored.status_code).header('idempotent-replayed', 'true')
    for (const [name, value] of Object.entries(stored.response_headers ?? {})) reply.header(name, value)
    return reply.send(stored.response_body ?? undefined)
  }

  // The answer is written in the request's transaction, which then commits: the work and its
  // answer together, before a byte of the answer leaves. A commit that fails turns the answer
  // into an error (thrown from here), and nothing of the request stays.
  async function keep(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const claim = request.idempotency
    if (!claim) return payload
    request.idempotency = null
    try {
      if (reply.statusCode >= 500) {
        // What committed before the failure stays committed, as without a key; the key is free again.
        await db.deleteFrom('idempotency_keys').where('owner', '=', claim.owner).where('key', '=', claim.key).execute()
      } else {
        const headers: Record<string, string> = {}
        for (const name of REPLAYED_HEADERS) {
          const value = reply.getHeader(name)
          if (value !== undefined) headers[name] = String(value)
        }
        const body = typeof payload === 'string' && !isSecret(headers) ? payload : null
        await db.updateTable('idempotency_keys')
          .set({ status_code: reply.statusCode, response_headers: JSON.stringify(headers), response_body: body })
          .where('owner', '=', claim.owner).where('key', '=', claim.key).execute()
      }
      await claim.transaction.end(true)
    } catch (err) {
      await claim.transaction.end(false).catch(() => {})
      throw err
    }
    return payload
  }

  // A request that ended before it answered (an aborted connection) rolls its work back and frees
  // its key; what its handler still tries to write afterwards fails rather than commit alone.
  async function free(request: FastifyRequest) {
    const claim = request.idempotency
    if (!claim) return
    request.idempotency = null
    await claim.transaction.end(false, true).catch(() => {})
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
  const hash = createHash('sha256').update(`${request.method} ${request.url}\n`)
  canonicalJson(request.body ?? null, (text) => hash.update(text))
  return hash.digest('hex')
}

class Text { constructor(readonly text: string) {} }

/**
 * Writes `value` as JSON with every object's keys in order (code unit order), and no white
 * space: two bodies that are the same JSON value write the same text. With a stack of its own
 * rather than recursion, so a deep body cannot overflow the call stack, and in time linear in
 * the body (besides sorting each object's keys).
 */
export function canonicalJson(value: unknown, write: (text: string) => void) {
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    let next = stack.pop()
    // As JSON.stringify would (a Date, a Buffer): bodies parsed from JSON have none.
    if (next !== null && typeof next === 'object' && typeof (next as { toJSON?: unknown }).toJSON === 'function') next = (next as { toJSON: () => unknown }).toJSON()
    if (next instanceof Text) {
      write(next.text)
    } else if (Array.isArray(next)) {
      write('[')
      stack.push(new Text(']'))
      for (let i = next.length - 1; i >= 0; i--) {
        stack.push(next[i] === undefined ? null : next[i])
        if (i > 0) stack.push(new Text(','))
      }
    } else if (next !== null && typeof next === 'object') {
      const record = next as Record<string, unknown>
      const keys = Object.keys(record).filter((k) => record[k] !== undefined).sort()
      write('{')
      stack.push(new Text('}'))
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push(record[keys[i]!])
        stack.push(new Text(`${i > 0 ? ',' : ''}${JSON.stringify(keys[i])}:`))
      }
    } else {
      write(JSON.stringify(next) ?? 'null')
    }
  }
}
