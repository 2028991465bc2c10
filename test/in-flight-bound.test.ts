import { it, before } from 'node:test'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import assert from 'node:assert/strict'
import { company, type CompanyFixture } from './helpers/factories.ts'
import { eventually } from './helpers/eventually.ts'
import { sql } from 'kysely'
import { loadConfig } from '../src/config.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Issue 19's overload: an instance works on at most SHED_MAX_IN_FLIGHT requests at once and
 * answers the others 503 + Retry-After at once (http/load-shedding.ts), instead of queueing them
 * behind each other until every answer is late.
 */
it('the bound is on by default', () => {
  assert.equal(loadConfig({}).SHED_MAX_IN_FLIGHT, 64)
  assert.equal(loadConfig({ SHED_MAX_IN_FLIGHT: '0' }).SHED_MAX_IN_FLIGHT, 0)
})

onEachEngine('requests in flight', { SHED_MAX_IN_FLIGHT: 2 }, (t) => {
  let c: CompanyFixture
  before(async () => {
    c = await company(t)
  })

  const createTeam = (code: string) =>
    t.call({
      method: 'POST',
      url: `/api/v1/companies/${c.id}/teams`,
      token: c.token,
      body: { name: `Team ${code}`, code },
    })
  const refusals = async () => {
    const text = (await t.call({ url: '/metrics', token: null })).body
    return Number(/^load_shed_refusals_total\{reason="in_flight"\} (\d+)$/m.exec(text)?.[1] ?? 0)
  }

  /**
   * The teams table locked by a transaction of the test until release(): team creations wait in
   * their handlers (on PGlite, whose one connection the transaction holds, every query waits).
   */
  async function lockTeams() {
    let unlock!: () => void
    const unlocked = new Promise<void>((resolve) => {
      unlock = resolve
    })
    let locked!: () => void
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve
    })
    const holder = t.app.database.db.transaction().execute(async (trx) => {
      await sql`LOCK TABLE teams IN ACCESS EXCLUSIVE MODE`.execute(trx)
      locked()
      await unlocked
    })
    await isLocked
    return {
      release: async () => {
        unlock()
        await holder
      },
    }
  }

  it('beyond the bound a request is answered 503 + Retry-After: 1 and changes nothing; the probes always answer', async () => {
    const before = await refusals()
    // Every change written so far is heard first: hearing one later would forget the company's
    // answer while the lock is held, and on PGlite its read would then wait for the test's transaction.
    await t.app.services.readCache.heardUpToNow()
    // What the requests below need before their handlers is kept from here on (the token's
    // access state, the company's cached answer): on PGlite a query of theirs would wait for
    // the test's transaction as much as the handlers do.
    assert.equal((await t.call({ url: `/api/v1/companies/${c.id}`, token: c.token })).statusCode, 200)
    // Two team creations held in their handlers.
    const teamsLock = await lockTeams()
    const held = [createTeam('held1'), createTeam('held2')]
    // What the held creations answered, if they did: the report when no 503 comes (seen flaky on PostgreSQL).
    const answered: string[] = []
    held.forEach(
      (request, i) => void request.then((r) => answered.push(`held${i + 1}: ${r.statusCode} ${r.body.slice(0, 200)}`)),
    )
    try {
      // The held creations get a head start to their handlers: a polling request that took the
      // second slot just as the second creation reached the bound had that creation refused
      // instead, and then no 503 came (the flaky failure seen on PostgreSQL under load).
      await new Promise((resolve) => setTimeout(resolve, 1000))
      // Once both are in their handlers, the next request is refused at once.
      const refused = await eventually(
        () => t.call({ url: `/api/v1/companies/${c.id}`, token: c.token }),
        (r) => r.statusCode === 503,
        10_000,
      )
      assert.equal(
        refused.statusCode,
        503,
        `${refused.body}; held creations answered meanwhile: ${answered.join('; ') || 'none'}`,
      )
      assert.equal(refused.headers['retry-after'], '1')
      assert.match(refused.json().errors, /retry shortly/)
      const write = await createTeam('refused1')
      assert.equal(write.statusCode, 503, write.body)
      assert.equal((await t.call({ url: '/health', token: null })).statusCode, 200)
    } finally {
      await teamsLock.release()
    }
    assert.deepEqual(
      (await Promise.all(held)).map((r) => r.statusCode),
      [202, 202],
    )
    // The refused creation stored nothing; the held ones everything.
    const teams = await t.json(200, { url: `/api/v1/companies/${c.id}/teams`, token: c.token })
    const codes = (teams.items ?? teams).map((team: { code: string }) => team.code)
    assert.ok(codes.includes('held1') && codes.includes('held2'), codes.join())
    assert.ok(!codes.includes('refused1'), codes.join())
    assert.ok((await refusals()) - before >= 2)
  })

  it('a client that goes away keeps its slot until its handler is done', async () => {
    await t.app.services.readCache.heardUpToNow()
    assert.equal((await t.call({ url: `/api/v1/companies/${c.id}`, token: c.token })).statusCode, 200)
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = t.app.server.address() as AddressInfo
    const teamsLock = await lockTeams()
    // Two creations over real connections, held in their handlers by the lock.
    const body = (code: string) => JSON.stringify({ name: `Team ${code}`, code })
    const sockets = ['gone1', 'gone2'].map((code) => {
      const request = http.request({
        port,
        host: '127.0.0.1',
        method: 'POST',
        path: `/api/v1/companies/${c.id}/teams`,
        headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/json' },
      })
      request.on('error', () => undefined)
      request.end(body(code))
      return request
    })
    try {
      const full = await eventually(
        () => t.call({ url: `/api/v1/companies/${c.id}`, token: c.token }),
        (r) => r.statusCode === 503,
        10_000,
      )
      assert.equal(full.statusCode, 503, full.body)
      // Both clients go away; their handlers still wait for the lock, so their slots are still taken.
      for (const s of sockets) s.destroy()
      const until = Date.now() + 500
      while (Date.now() < until) {
        const r = await t.call({ url: `/api/v1/companies/${c.id}`, token: c.token })
        assert.equal(r.statusCode, 503, 'a slot was given back while its handler still ran')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    } finally {
      await teamsLock.release()
    }
    // The handlers done, their slots come back.
    const after = await eventually(
      () => t.call({ url: `/api/v1/companies/${c.id}`, token: c.token }),
      (r) => r.statusCode === 200,
      10_000,
    )
    assert.equal(after.statusCode, 200, after.body)
  })

  it('every way a request ends gives its slot back', async () => {
    // Errors of the handler (an unknown company for the platform: 404; a taken code: 409) and
    // successes take a slot and give it back; refusals before the handler (400, 401) take none.
    // One after another: with a bound of two, a slot kept by any of them would refuse what follows.
    for (let round = 0; round < 3; round++) {
      assert.equal((await t.call({ url: '/api/v1/companies/00000000-0000-4000-8000-000000000000' })).statusCode, 404)
      assert.equal((await createTeam('same')).statusCode, round === 0 ? 202 : 409)
      assert.equal(
        (await t.call({ method: 'POST', url: `/api/v1/companies/${c.id}/teams`, token: c.token, body: { name: 1 } }))
          .statusCode,
        400,
      )
      assert.equal((await t.call({ url: `/api/v1/companies/${c.id}`, token: null })).statusCode, 401)
      assert.equal((await t.call({ url: `/api/v1/companies/${c.id}`, token: c.token })).statusCode, 200)
    }
    const together = await Promise.all([
      t.call({ url: `/api/v1/companies/${c.id}`, token: c.token }),
      t.call({ url: `/api/v1/companies/${c.id}/teams`, token: c.token }),
    ])
    assert.deepEqual(
      together.map((r) => r.statusCode),
      [200, 200],
    )
  })
})
