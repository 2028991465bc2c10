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
import {
  AFTER_CLAIM,
  claimSettings,
  idempotencyRepository,
  isLockNotAvailable,
  purgeKeys,
  type KeptKey,
} from './idempotency.repository.ts'
import { secretsByStatus, withoutSecrets } from './secret-fields.ts'

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: { owner: string; key: string; transaction: RequestTransaction } | null
    /** A digest of a body not in `request.body` (an uploaded file): another file under the same key is a 409. */
    idempotencyDigest: string | null
  }
}

const REPLAYED_HEADERS = ['location', 'content-type', 'cache-control']
const KEY_LIFETIME_MS = 24 * 3_600_000
const ABANDONED_AFTER_MS = 60_000
const PURGE_JOB = 'idempotency.purge'
const PURGE_EVERY_MS = 3_600_000
const WAIT_FOR_FIRST_MS = 10_000
/** How long one claim attempt waits on the key's row before giving its connection back. */
const CLAIM_LOCK_TIMEOUT_MS = 50
const RETRY_DELAYS_MS = [10, 25, 50, 100, 200, 400]

/**
 * `Idempotency-Key` on POST and PUT, as Stripe's: the same key and body replays the kept answer for
 * 24 h, another body is a 409; a 5xx is not kept, secrets are kept as `null`. Claim, work and answer
 * share one transaction, so a key is answered with its work committed or not claimed at all.
 */
export function installIdempotency(
  app: FastifyInstance,
  deps: {
    db: Kysely<DB>
    database: Pick<Database, 'engine' | 'requestTransaction'>
    clock: Clock
    scheduler: Pick<Scheduler, 'register' | 'schedule'>
  },
) {
  const { db, database, clock, scheduler } = deps
  const keys = idempotencyRepository(db)
  app.decorateRequest('idempotency', null)
  app.decorateRequest('idempotencyDigest', null)
  const settings = claimSettings(database.engine, CLAIM_LOCK_TIMEOUT_MS, ABANDONED_AFTER_MS)

  // Expired keys are purged hourly: one job per hour (its key), each scheduling the next.
  const purgeKey = (at: Date) => new Date(Math.floor(at.getTime() / PURGE_EVERY_MS) * PURGE_EVERY_MS).toISOString()
  // Real time: keys live 24 real hours, and a test clock's advance must not run the purge on its way.
  scheduler.register(
    PURGE_JOB,
    async ({ trx, now }) => {
      await purgeKeys(trx, new Date(now.getTime() - KEY_LIFETIME_MS))
      const next = new Date(now.getTime() + PURGE_EVERY_MS)
      await scheduler.schedule(trx, { kind: PURGE_JOB, key: purgeKey(next), runAt: next })
    },
    { realTime: true },
  )
  app.addHook('onReady', async () => {
    await scheduler.schedule(db, { kind: PURGE_JOB, key: purgeKey(clock.now()), runAt: clock.now() })
  })

  // Hooks only on POST and PUT, so reads pay nothing. preHandler: after the body is read and
  // validated and after a route's own preValidation (an upload is read there).
  app.addHook('onRoute', (route) => {
    const secrets = secretsByStatus((route.schema as { response?: unknown } | undefined)?.response)
    if (secrets.size > 0) route.onSend = [...toArray(route.onSend), noStoreFor(secrets)]
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!methods.some((m) => m === 'POST' || m === 'PUT')) return
    const access = route.config?.access
    if (access === undefined || access === 'none' || route.config?.idempotencyKeys === false) return
    acceptKeyHeader((route.schema ??= {}) as Record<string, any>)
    route.preHandler = [...toArray(route.preHandler), scopeKeyed, claimKey]
    route.onSend = [...toArray(route.onSend), keepFor(secrets)]
    route.onResponse = [...toArray(route.onResponse), abandon]
  })

  // The scope must enclose the handler and the onSend hooks, hence callback style.
  function scopeKeyed(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
    if (typeof request.headers['idempotency-key'] === 'string') enterRequestScope(done)
    else done()
  }

  async function claimKey(request: FastifyRequest, reply: FastifyReply) {
    if (request.method !== 'POST' && request.method !== 'PUT') return
    const key = request.headers['idempotency-key']
    if (typeof key !== 'string') return
    const owner = request.principal?.clientId ?? `ip:${request.ip}`
    const hash = requestHash(request)
    const now = clock.now()
    const expiredBefore = new Date(now.getTime() - KEY_LIFETIME_MS)
    const abandonedBefore = new Date(now.getTime() - ABANDONED_AFTER_MS)
    const live = (row: KeptKey | undefined): row is KeptKey =>
      row !== undefined &&
      row.created_at.getTime() >= (row.status_code === null ? abandonedBefore : expiredBefore).getTime()

    const kept = await keys.find(owner, key)
    if (live(kept)) return answerFrom(kept, hash, reply)

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
        const pause = RETRY_DELAYS_MS[Math.min(attempt, RETRY_DELAYS_MS.length - 1)]!
        if (performance.now() + pause >= deadline)
          throw new Conflict('A request with this Idempotency-Key is still running')
        await sleep(pause)
        continue
      }
      if (claimed) {
        request.idempotency = { owner, key, transaction }
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) void abandon(request)
        })
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

  // The answer is written in the request's transaction, which then commits: a failing commit
  // turns the answer into an error and nothing of the request stays.
  const keepFor = (secrets: Map<number, string[]>) =>
    async function keep(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
      const claim = request.idempotency
      if (!claim) return payload
      // An answer no one will read is not kept: the retry must run.
      if (clientGone(request, reply)) {
        await abandon(request)
        return payload
      }
      request.idempotency = null
      try {
        if (reply.statusCode >= 500) {
          // What committed before the failure stays committed, as without a key.
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

  // A request that ended before its answer rolls back and frees its key; later writes of its handler fail.
  async function abandon(request: FastifyRequest) {
    const claim = request.idempotency
    if (!claim) return
    request.idempotency = null
    await claim.transaction.end(false, true).catch(() => {})
  }
}

function noStoreFor(secrets: Map<number, string[]>) {
  return async function noStore(_request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    if (secrets.has(reply.statusCode)) reply.header('cache-control', 'no-store')
    return payload
  }
}

function clientGone(request: FastifyRequest, reply: FastifyReply): boolean {
  return request.raw.aborted === true || request.raw.socket?.destroyed === true || reply.raw.destroyed === true
}

function toArray<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return []
  return Array.isArray(value) ? value : [value]
}

// The key is validated (1 to 255 characters) and documented with the route's headers schema.
function acceptKeyHeader(schema: Record<string, any>) {
  const header = {
    type: 'string',
    minLength: 1,
    maxLength: 255,
    description:
      'The same key and body within 24 h replays the first answer, with Idempotent-Replayed: true and any secret ' +
      'field null; another body is a 409',
  }
  if (!schema.headers) schema.headers = { type: 'object', properties: { 'idempotency-key': header } }
  else if (schema.headers.type === 'object')
    schema.headers.properties = { 'idempotency-key': header, ...schema.headers.properties }
  else throw new Error('A POST or PUT route that takes Idempotency-Key needs an object headers schema')
}

function requestHash(request: FastifyRequest): string {
  const hash = createHash('sha256').update(`${request.method} ${request.url}\n`)
  canonicalJson(request.body ?? null, (text) => hash.update(text))
  // Only when present, so other requests' hashes are unchanged.
  if (request.idempotencyDigest !== null) hash.update(`\n${request.idempotencyDigest}`)
  return hash.digest('hex')
}

class Text {
  constructor(readonly text: string) {}
}

/**
 * Writes `value` as JSON with sorted keys and no white space, so equal JSON values give equal
 * text. Iterative, so a deep body cannot overflow the call stack.
 */
export function canonicalJson(value: unknown, write: (text: string) => void) {
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    let next = stack.pop()
    if (next !== null && typeof next === 'object' && typeof (next as { toJSON?: unknown }).toJSON === 'function')
      next = (next as { toJSON: () => unknown }).toJSON()
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
      const keys = Object.keys(record)
        .filter((k) => record[k] !== undefined)
        .sort()
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
