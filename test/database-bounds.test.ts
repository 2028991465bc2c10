import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { sql } from 'kysely'
import { buildApp, type BuiltApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { buildTestApp, type TestApp } from './helpers/app.ts'
import { withDatabase } from './helpers/databases.ts'
import { company, type CompanyFixture } from './helpers/factories.ts'
import { has, requires } from './helpers/requires.ts'
import { eventually } from './helpers/eventually.ts'

/**
 * The database behind a network that hangs instead of failing: every statement of a request is
 * bounded (DATABASE_STATEMENT_TIMEOUT_MS), so a request answers 503 `unavailable` instead of
 * waiting for as long as the network does, /ready says so quickly, and once the network carries
 * bytes again requests succeed, on connections that are all sound. PostgreSQL only: PGlite has
 * no network.
 */

/** The bound the instance under test runs with: short, so that a test waits little. */
const BOUND_MS = 500

/**
 * A TCP proxy between the service and PostgreSQL that can be told to hold: it then swallows
 * every byte, both ways, and closes nothing, as a network that hangs does.
 */
async function holdingProxy(target: URL) {
  let holding = false
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    for (const socket of [client, upstream]) sockets.add(socket)
    client.on('data', (chunk) => {
      if (!holding) upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      if (!holding) client.write(chunk)
    })
    const close = () => {
      for (const socket of [client, upstream]) {
        socket.destroy()
        sockets.delete(socket)
      }
    }
    for (const socket of [client, upstream]) {
      socket.on('close', close)
      socket.on('error', close)
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(target)
  url.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`
  return {
    url: url.toString(),
    hold() {
      holding = true
    },
    pass() {
      holding = false
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe('the database behind a network that holds its bytes', () => {
  let t: TestApp
  let proxy: Awaited<ReturnType<typeof holdingProxy>>
  let app: BuiltApp
  let c: CompanyFixture
  let databaseName: string
  before(async () => {
    if (!has('postgres')) return // its tests show as skipped, with the reason
    t = await buildTestApp('postgres')
    c = await company(t)
    databaseName = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!
      .name
    proxy = await holdingProxy(new URL(process.env.TEST_DATABASE_URL!))
    app = await buildApp({
      config: loadConfig(
        {},
        {
          DATABASE_URL: withDatabase(proxy.url, databaseName),
          DATABASE_STATEMENT_TIMEOUT_MS: BOUND_MS,
          SCHEDULER_ENABLED: false,
          RATE_LIMIT_MAX: 0,
          LOG_LEVEL: 'silent',
        },
      ),
      clock: t.clock,
      logger: false,
    })
    await app.ready()
  })
  after(async () => {
    proxy?.pass()
    await app?.close()
    await proxy?.close()
    await t?.close()
  })

  const headers = () => ({ authorization: `Bearer ${c.token}` })
  const createSubsidiary = (extra: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: `/api/v1/companies/${c.id}/subsidiaries`,
      headers: { ...headers(), ...extra },
      payload: { name: `S-${randomUUID().slice(0, 8)}` },
    })

  it('answers 503 unavailable with Retry-After while the network holds, /ready too, and succeeds on sound connections once it passes again', {
    ...requires('postgres'),
    timeout: 60_000,
  }, async () => {
    assert.equal((await createSubsidiary()).statusCode, 202)
    assert.equal((await app.inject({ url: '/ready' })).statusCode, 200)
    proxy.hold()
    try {
      for (const res of [
        await createSubsidiary(),
        await createSubsidiary({ 'idempotency-key': randomUUID() }),
        await app.inject({ url: '/ready' }),
      ]) {
        assert.equal(res.statusCode, 503, res.body)
        assert.equal(res.json().code, 'unavailable', res.body)
        assert.ok(Number(res.headers['retry-after']) >= 1, 'Retry-After')
        assert.doesNotMatch(res.body, /timeout|pool|Query read/i, 'no internals leak')
      }
      // Nothing may be answered from memory while changes cannot be heard.
      const deaf = await eventually(
        async () => app.services.readCache.listening(),
        (listening) => !listening,
      )
      assert.equal(deaf, false, 'the read cache stops trusting what it keeps')
    } finally {
      proxy.pass()
    }
    // More requests than the pool has connections, one after the other: a connection left broken
    // by the hold would fail one of them.
    for (let i = 0; i < 12; i++) {
      const res = await createSubsidiary()
      assert.equal(res.statusCode, 202, `request ${i} after the network came back: ${res.body}`)
    }
    assert.equal((await app.inject({ url: '/ready' })).statusCode, 200)
    const hearing = await eventually(
      async () => app.services.readCache.listening(),
      (listening) => listening,
      10_000,
    )
    assert.equal(hearing, true, 'the read cache hears changes again')
  })

  it('a statement past the bound is cancelled by the server: 503 unavailable, and the connection serves the next request', {
    ...requires('postgres'),
    timeout: 60_000,
  }, async () => {
    const blocker = new pg.Client({ connectionString: withDatabase(process.env.TEST_DATABASE_URL!, databaseName) })
    await blocker.connect()
    try {
      await blocker.query('BEGIN')
      await blocker.query('LOCK TABLE subsidiaries IN EXCLUSIVE MODE')
      const res = await createSubsidiary()
      assert.equal(res.statusCode, 503, res.body)
      assert.equal(res.json().code, 'unavailable')
      assert.ok(Number(res.headers['retry-after']) >= 1, 'Retry-After')
    } finally {
      await blocker.query('ROLLBACK').catch(() => {})
      await blocker.end()
    }
    assert.equal((await createSubsidiary()).statusCode, 202)
  })

  it("a job's statements get the jobs' longer bound, a request's connection keeps the request bound", {
    ...requires('postgres'),
    timeout: 60_000,
  }, async () => {
    const seen: string[] = []
    app.services.scheduler.register('test.statement_bound', async ({ trx }) => {
      seen.push(
        (await sql<{ bound: string }>`SELECT current_setting('statement_timeout') AS bound`.execute(trx)).rows[0]!
          .bound,
      )
    })
    await app.services.scheduler.schedule(app.database.db, {
      kind: 'test.statement_bound',
      key: randomUUID(),
      runAt: t.clock.now(),
    })
    await app.services.scheduler.runDue()
    assert.deepEqual(seen, ['1min'], 'DATABASE_JOB_STATEMENT_TIMEOUT_MS, 60 s by default')
    const { rows } = await sql<{ bound: string }>`SELECT current_setting('statement_timeout') AS bound`.execute(
      app.database.db,
    )
    assert.equal(rows[0]!.bound, `${BOUND_MS}ms`)
  })
})
