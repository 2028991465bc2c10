import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { DB } from '../db/tables.ts'
import type { Database } from '../db/database.ts'
import { enterRequestScope, type RequestTransaction } from '../db/request-transaction.ts'
import type { Clock } from '../core/clock.ts'
import type { Scheduler } from '../jobs/scheduler.ts'
import { Conflict } from '../core/errors.ts'
import { AFTER_CLAIM, claimSettings, idempotencyRepository, isLockNotAvailable, purgeKeys, type KeptKey } from './idempotency.repository.ts'
import { secretsByStatus, withoutSecrets } from './secret-fields.ts'

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: { owner: string; key: string; transaction: RequestTransaction } | null
    /**
     * A digest of a body that is not in `request.body` (an uploaded file, read before the
     * claim by the route's own preValidation hook): part of the request's hash, so another
     * file under the same key is a 409, not a replay.
     */
    idempotencyDigest: string | null
  }
}

const REPLAYED_HEADERS = ['location', 'content-type', 'cache-control']
const KEY_LIFETIME_MS = 24 * 3_600_000
/** A claim kept without an answer this long is abandoned (see the comment of installIdempotency). */
const ABANDONED_AFTER_MS = 60_000
const PURGE_JOB = 'idempotency.purge'
const PURGE_EVERY_MS = 3_600_000
/** How long a request waits, in all, for the request that holds its key. */
const WAIT_FOR_FIRST_MS = 10_000
/** How long one attempt at the claim waits on the key's row before giving its connection back. */
const CLAIM_LOCK_TIMEOUT_MS = 50
/** The pauses between attempts, without a connection: growing, to at most the last. */
const RETRY_DELAYS_MS = [10, 25, 50, 100, 200, 400]

/**
 * `Idempotency-Key` on POST and PUT: the first request with a key runs and its answer is kept
 * for 24 h (of real time, never moved by a test clock); the same key and body (compared as JSON values: key order
 * and white space do not matter; an uploaded file by its name, type and bytes) replays that
 * answer; another body is a 409. A 5xx is not kept, so the client may retry; nor is an answer
 * to a client that went away before it (an aborted upload's 400, or any answer its connection
 * closed before): the request rolls back and the key is free. Every replay carries
 * `Idempotent-Replayed: true`, as Stripe's do. A field the route's answer schema declares a
 * secret (`SecretString`, src/http/secret-fields.ts) is kept as `null`: the answer that made the
 * secret is the only one that shows it, and is `Cache-Control: no-store`, as its replays are. So
 * a retry gets the same status and resource without the secret, and creates nothing twice.
 * Routes that look at no token (the token endpoint, operations) make no resources and ignore the header.
 *
 * The claim, the request's work and its answer are one transaction (src/db/request-transaction.ts):
 * the claim's row is written first in it, every statement of the request joins it, and the
 * answer is written to the row just before the commit. So a key is either answered, with its
 * work committed, or it is not claimed at all: an instance that dies mid-request (kill -9, a lost
 * connection) leaves nothing, PostgreSQL rolls its transaction back as soon as the connection
 * drops, and the retry runs as if it were the first. The claim happens in a preHandler hook, once
 * the whole body has been read (a JSON body is parsed before preValidation; an upload is read by
 * its route's preValidation hook), so no transaction is held while a client is still sending.
 * A request that arrives while the first holds the key tries its claim with a short
 * lock_timeout and, on "locked", gives its connection back and tries again after a pause, for up
 * to 10 s in all (then a 409 "still running"): waiters hold no connection of the pool. Once the
 * first ends, a waiter replays its answer (or runs, if the first rolled back). An instance that
 * hangs without dying loses its transaction after 60 s idle (`idle_in_transaction_session_timeout`).
 * A claim without an answer that was committed anyway (by an earlier version of the service,
 * which claimed in a transaction of its own) is abandoned 60 s after it was made: the retry runs.
 */
export function installIdempotency(app: FastifyInstance, deps: { db: Kysely<DB>; database: Pick<Database, 'engine' | 'requestTransaction'>; clock: Clock; scheduler: Pick<Scheduler, 'register' | 'schedule'> }) {
  const { db, database, clock, scheduler } = deps
  const keys = idempotencyRepository(db)
  app.decorateRequest('idempotency', null)
  app.decorateRequest('idempotencyDigest', null)
  const settings = claimSettings(database.engine, CLAIM_LOCK_TIMEOUT_MS, ABANDONED_AFTER_MS)

  // Keys past their 24 hours are deleted hourly; one job per hour (its key), each scheduling the next.
  const purgeKey = (at: Date) => new Date(Math.floor(at.getTime() / PURGE_EVERY_MS) * PURGE_EVERY_MS).toISOString()
  // Real time, not the business clock a test clock moves (docs/test-clock.md): keys live 24 hours
  // of real time, and an advance of a year must not run the purge 8,760 times on its way.
  scheduler.register(PURGE_JOB, async ({ trx, now }) => {
    await purgeKeys(trx, new Date(now.getTime() - KEY_LIFETIME_MS))
    const next = new Date(now.getTime() + PURGE_EVERY_MS)
    await scheduler.schedule(trx, { kind: PURGE_JOB, key: purgeKey(next), runAt: next })
  }, { realTime: true })
  app.addHook('onReady', async () => {
    await scheduler.schedule(db, { kind: PURGE_JOB, key: purgeKey(clock.now()), runAt: clock.now() })
  })

  // The hooks go on the POST and PUT routes only: a read pays nothing for them (three async
  // hooks on every request were a visible share of a read's CPU in the profile, bench/RESULTS.md).
  // preHandler: after the body is read and validated, and after the route's own preValidation
  // hooks (an upload is read there).
  app.addHook('onRoute', (route) => {
    // An answer carrying a secret is never cached, whether or not the route takes a key.
    const secrets = secretsByStatus((route.schema as { response?: unknown } | undefined)?.response)
    if (secrets.size > 0) route.onSend = [...toArray(route.onSend), noStoreFor(secrets)]
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!methods.some((m) => m === 'POST' || m === 'PUT')) return
    const access = route.config?.access
    if (access === undefined || access === 'none') return
    acceptKeyHeader((route.schema ??= {}) as Record<string, any>)
    route.preHandler = [...toArray(route.preHandler), scopeKeyed, claimKey]
    route.onSend = [...toArray(route.onSend), keepFor(secrets)]
    route.onResponse = [...toArray(route.onResponse), abandon]
  })

  // The rest of a keyed request runs in a scope that can hold its transaction (callback style:
  // the scope must enclose the handler and the onSend hooks that follow).
  function scopeKeyed(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
    if (typeof request.headers['idempotency-key'] === 'string') enterRequestScope(done)
    else done()
  }

  async function claimKey(request: FastifyRequest, reply: FastifyReply) {
    if (request.method !== 'POST' && request.method !== 'PUT') return
    // Its length was checked with the route's headers (acceptKeyHeader).
    const key = request.headers['idempotency-key']
    if (typeof key !== 'string') return
    const owner = request.principal?.clientId ?? `ip:${request.ip}`
    const hash = requestHash(request)
    const now = clock.now()
    const expiredBefore = new Date(now.getTime() - KEY_LIFETIME_MS)
    const abandonedBefore = new Date(now.getTime() - ABANDONED_AFTER_MS)
    const live = (row: KeptKey | undefined): row is KeptKey =>
      row !== undefined && row.created_at.getTime() >= (row.status_code === null ? abandonedBefore : expiredBefore).getTime()

    // An answer kept already is replayed without a transaction.
    const kept = await keys.find(owner, key)
    if (live(kept)) return answerFrom(kept, hash, reply)

    // Waits measure real time, not the service's clock: they are about other requests running.
    const deadline = performance.now() + WAIT_FOR_FIRST_MS
    for (let attempt = 0; ; attempt++) {
      const transaction = await database.requestTransaction(settings)
      let claimed: boolean
      try {
        claimed = await keys.claim({ owner, key, hash, now, expiredBefore, abandonedBefore })
        if (claimed) await transaction.query(AFTER_CLAIM)
      } catch (err) {
        await transaction.end(false).catch(() => {})
        if (!isLockNotAvailable(err)) throw err
        // Another request's transaction holds the key: wait without a connection, then try again.
        const pause = RETRY_DELAYS_MS[Math.min(attempt, RETRY_DELAYS_MS.length - 1)]!
        if (performance.now() + pause >= deadline) throw new Conflict('A request with this Idempotency-Key is still running')
        await sleep(pause)
        continue
      }
      if (claimed) {
        request.idempotency = { owner, key, transaction }
        // A client that goes away before its answer: the request's work is rolled back (below).
        reply.raw.once('close', () => { if (!reply.raw.writableFinished) void abandon(request) })
        return
      }
      await transaction.end(false)
      break
    }
    const stored = await keys.find(owner, key)
    if (!stored) throw new Conflict('The first request with this Idempotency-Key failed; send it again')
    return answerFrom(stored, hash, reply)
  }

  function answerFrom(stored: KeptKey, hash: string, reply: FastifyReply) {
    if (stored.request_hash !== hash) throw new Conflict('This Idempotency-Key was used with another request')
    if (stored.status_code === null) throw new Conflict('A request with this Idempotency-Key is still running')
    reply.code(stored.status_code)
    for (const [name, value] of Object.entries(stored.response_headers ?? {})) reply.header(name, value)
    reply.header('idempotent-replayed', 'true')
    return reply.send(stored.response_body ?? undefined)
  }

  // The answer is written in the request's transaction, which then commits: the work and its
  // answer together, before a byte of the answer leaves. A commit that fails turns the answer
  // into an error (thrown from here), and nothing of the request stays.
  const keepFor = (secrets: Map<number, string[]>) => async function keep(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const claim = request.idempotency
    if (!claim) return payload
    // An answer no one will read (the client went away; an aborted upload's 400 is one) is not
    // kept: the retry must run.
    if (clientGone(request, reply)) {
      await abandon(request)
      return payload
    }
    request.idempotency = null
    try {
      if (reply.statusCode >= 500) {
        // What committed before the failure stays committed, as without a key; the key is free again.
        await keys.release(claim.owner, claim.key)
      } else {
        const headers: Record<string, string> = {}
        for (const name of REPLAYED_HEADERS) {
          const value = reply.getHeader(name)
          if (value !== undefined) headers[name] = String(value)
        }
        const fields = secrets.get(reply.statusCode)
        const body = typeof payload !== 'string' ? null : fields ? withoutSecrets(payload, fields) : payload
        await keys.keepAnswer(claim.owner, claim.key, { status: reply.statusCode, headers, body })
      }
      await claim.transaction.end(true)
    } catch (err) {
      await claim.transaction.end(false).catch(() => {})
      throw err
    }
    return payload
  }

  // A request that ended before it answered (a closed connection; onResponse too, as a last
  // resort) rolls its work back and frees its key; what its handler still tries to write
  // afterwards fails rather than commit alone.
  async function abandon(request: FastifyRequest) {
    const claim = request.idempotency
    if (!claim) return
    request.idempotency = null
    await claim.transaction.end(false, true).catch(() => {})
  }
}

/** The onSend hook of a route whose answers of some statuses carry secrets: those answers are `no-store`. */
function noStoreFor(secrets: Map<number, string[]>) {
  return async function noStore(_request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    if (secrets.has(reply.statusCode)) reply.header('cache-control', 'no-store')
    return payload
  }
}

/** Whether the client of `request` is gone: its request was aborted, or its connection closed before the answer. */
function clientGone(request: FastifyRequest, reply: FastifyReply): boolean {
  return request.raw.aborted === true || request.raw.socket?.destroyed === true || reply.raw.destroyed === true
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
  const header = { type: 'string', minLength: 1, maxLength: 255, description: 'The same key and body within 24 h replays the first answer, with Idempotent-Replayed: true and any secret field null; another body is a 409' }
  if (!schema.headers) schema.headers = { type: 'object', properties: { 'idempotency-key': header } }
  else if (schema.headers.type === 'object') schema.headers.properties = { 'idempotency-key': header, ...schema.headers.properties }
  else throw new Error('A POST or PUT route that takes Idempotency-Key needs an object headers schema')
}

function requestHash(request: FastifyRequest): string {
  const hash = createHash('sha256').update(`${request.method} ${request.url}\n`)
  canonicalJson(request.body ?? null, (text) => hash.update(text))
  // Only when there is one, so the hash of every other request is what it was.
  if (request.idempotencyDigest !== null) hash.update(`\n${request.idempotencyDigest}`)
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
