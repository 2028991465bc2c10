import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { sql, type Transaction } from 'kysely'
import type { BuiltApp } from '../src/app.ts'
import { COMPANY_CHANGED, createReadCache, type ReadCache } from '../src/cache/read-cache.ts'
import { ANNOUNCE_SETTING } from '../src/db/database.ts'
import type { DB } from '../src/db/tables.ts'
import { buildTestApp, secondInstance, type TestApp } from './helpers/app.ts'
import { openTestDatabase, withDatabase } from './helpers/databases.ts'
import { parseChange } from '../src/cache/read-areas.ts'
import { company, contract, team, type CompanyFixture } from './helpers/factories.ts'
import { has, requires } from './helpers/requires.ts'
import { eventually } from './helpers/eventually.ts'
import { asWriterThatDied } from './helpers/unannounced.ts'
import { onEachEngine, forEachEngine } from './helpers/engine-suites.ts'

/**
 * The cached reads (GET company, GET teams: src/cache/read-cache.ts) never show what has changed:
 * not after a write through the API, not after a job's, not after one straight into the
 * database, not after one through another instance.
 */

type TeamView = { id: string; name: string; team_leader_ids: string[] }

/** Runs statements as any other session would (psql, a script): not one of the service's own, which announce after commit. */
async function asAnotherSession(t: TestApp, work: (trx: Transaction<DB>) => Promise<unknown>) {
  await t.app.database.db.transaction().execute(async (trx) => {
    await sql`SELECT set_config(${ANNOUNCE_SETTING}, '', true)`.execute(trx)
    await work(trx)
  })
}

onEachEngine('cached reads', (t) => {
  let c: CompanyFixture
  let leader: string
  const teams = () => t.json<TeamView[]>(200, { url: `/api/v1/companies/${c.id}/teams`, token: c.token })

  before(async () => {
    c = await company(t)
    leader = await contract(t, c.id)
  })

  it('answers the same bytes from the cache as from the database', async () => {
    await team(t, c.id, { name: 'Bytes', code: 'BY', team_leader_ids: [leader] })
    const first = await t.call({ url: `/api/v1/companies/${c.id}/teams`, token: c.token })
    const second = await t.call({ url: `/api/v1/companies/${c.id}/teams`, token: c.token })
    assert.equal(second.body, first.body)
    assert.equal(second.headers['content-type'], 'application/json; charset=utf-8')
    assert.ok(t.app.services.readCache.stats().companies >= 1, 'the answer was kept')
  })

  it('shows a write through the API in the very next read', async () => {
    const id = await team(t, c.id, { name: 'Before', code: 'RW', team_leader_ids: [leader] })
    assert.equal((await teams()).find((x) => x.id === id)?.name, 'Before')
    await t.json(202, {
      method: 'PUT',
      url: `/api/v1/companies/${c.id}/teams/${id}`,
      token: c.token,
      body: { name: 'After', code: 'RW' },
    })
    assert.equal((await teams()).find((x) => x.id === id)?.name, 'After')
    // The company read: disabled (by the company itself), then enabled again (by the platform).
    assert.equal((await t.json<{ disabled: boolean }>(200, { url: `/api/v1/companies/${c.id}` })).disabled, false)
    await t.json(202, { method: 'PUT', url: `/api/v1/companies/${c.id}`, token: c.token })
    assert.equal((await t.json<{ disabled: boolean }>(200, { url: `/api/v1/companies/${c.id}` })).disabled, true)
    await t.json(202, { method: 'PUT', url: `/api/v1/companies/${c.id}/enable` })
    assert.equal((await t.json<{ disabled: boolean }>(200, { url: `/api/v1/companies/${c.id}` })).disabled, false)
  })

  it('shows a change a job made, as soon as the job commits', async () => {
    const id = await team(t, c.id, { name: 'Before the job', code: 'JB', team_leader_ids: [leader] })
    assert.equal((await teams()).find((x) => x.id === id)?.name, 'Before the job')
    const { scheduler } = t.app.services
    scheduler.register('test.rename-team', async ({ trx, payload }) => {
      await sql`UPDATE teams SET name = 'Renamed by a job' WHERE company_id = ${String(payload.company_id)} AND id = ${String(payload.team_id)}`.execute(
        trx,
      )
    })
    await scheduler.schedule(t.app.database.db, {
      kind: 'test.rename-team',
      key: id,
      runAt: t.clock.now(),
      payload: { company_id: c.id, team_id: id },
    })
    assert.ok((await scheduler.runDue()) >= 1)
    // Forgotten when the job's connection went back, after its commit: no wait for the commits' record.
    assert.equal((await teams()).find((x) => x.id === id)?.name, 'Renamed by a job')
  })

  it('shows a change written straight into the database, as soon as it commits', async () => {
    const id = await team(t, c.id, { name: 'Direct', code: 'DI', team_leader_ids: [leader] })
    assert.equal((await teams()).find((x) => x.id === id)?.name, 'Direct')
    await asAnotherSession(t, (trx) =>
      sql`UPDATE teams SET name = 'Changed by hand' WHERE company_id = ${c.id} AND id = ${id}`.execute(trx),
    )
    const seen = await eventually(teams, (list) => list.some((x) => x.name === 'Changed by hand'))
    assert.equal(seen.find((x) => x.id === id)?.name, 'Changed by hand')

    // A leader removed by hand, and a plan's features changed by hand (every company on it).
    await asAnotherSession(t, (trx) =>
      sql`DELETE FROM team_members WHERE company_id = ${c.id} AND team_id = ${id}`.execute(trx),
    )
    assert.deepEqual(
      (await eventually(teams, (list) => list.find((x) => x.id === id)?.team_leader_ids.length === 0)).find(
        (x) => x.id === id,
      )?.team_leader_ids,
      [],
    )
    const read = () =>
      t.json<{ subscribed_features: string[] }>(200, { url: `/api/v1/companies/${c.id}`, token: c.token })
    await read()
    await asAnotherSession(t, (trx) =>
      sql`UPDATE plans SET features = ARRAY['by-hand'] WHERE sku = ${c.planSku}`.execute(trx),
    )
    assert.deepEqual((await eventually(read, (x) => x.subscribed_features.includes('by-hand'))).subscribed_features, [
      'by-hand',
    ])
  })

  it('keeps nothing when a change rolls back', async () => {
    const id = await team(t, c.id, { name: 'Kept', code: 'RB', team_leader_ids: [leader] })
    await teams()
    // Only the rollback this test asks for may end the transaction: any other error fails the test.
    await assert.rejects(
      asAnotherSession(t, async (trx) => {
        await sql`UPDATE teams SET name = 'Rolled back' WHERE company_id = ${c.id} AND id = ${id}`.execute(trx)
        const inside = await sql<{
          name: string
        }>`SELECT name FROM teams WHERE company_id = ${c.id} AND id = ${id}`.execute(trx)
        assert.equal(inside.rows[0]?.name, 'Rolled back', 'the change was made before the rollback')
        throw new Error('roll back')
      }),
      { message: 'roll back' },
    )
    assert.equal((await teams()).find((x) => x.id === id)?.name, 'Kept')
  })

  it("never answers one company with another's cached read", async () => {
    const other = await company(t)
    await teams()
    const res = await t.call({ url: `/api/v1/companies/${c.id}/teams`, token: other.token })
    assert.equal(res.statusCode, 404, "another company's paths do not exist for this token")
    assert.deepEqual(await t.json(200, { url: `/api/v1/companies/${other.id}/teams`, token: other.token }), [])
  })

  it('answers 404 for a company that does not exist, and keeps no answer for it', async () => {
    const missing = '00000000-0000-4000-8000-00000000dead'
    const res = await t.call({ url: `/api/v1/companies/${missing}/teams` })
    assert.equal(res.statusCode, 404)
    assert.equal((await t.call({ url: `/api/v1/companies/${missing}` })).statusCode, 404)
  })
})

describe('cached reads with two instances on one PostgreSQL database', () => {
  let t: TestApp
  let second: BuiltApp
  before(async () => {
    if (!has('postgres')) return // its test shows as skipped, with the reason
    t = await buildTestApp('postgres')
    second = await secondInstance(t)
  })
  after(async () => {
    await second?.close()
    await t?.close()
  })

  it('an instance forgets its copy when another one writes', requires('postgres'), async () => {
    const c = await company(t)
    const leader = await contract(t, c.id)
    const id = await team(t, c.id, { name: 'One', code: 'TW', team_leader_ids: [leader] })
    const readOnSecond = async () => {
      const res = await second.inject({
        url: `/api/v1/companies/${c.id}/teams`,
        headers: { authorization: `Bearer ${c.token}` },
      })
      assert.equal(res.statusCode, 200)
      return res.json() as TeamView[]
    }
    assert.equal((await readOnSecond()).find((x) => x.id === id)?.name, 'One')
    await t.json(202, {
      method: 'PUT',
      url: `/api/v1/companies/${c.id}/teams/${id}`,
      token: c.token,
      body: { name: 'Two', code: 'TW' },
    })
    const seen = await eventually(readOnSecond, (list) => list.some((x) => x.name === 'Two'))
    assert.equal(seen.find((x) => x.id === id)?.name, 'Two')
  })

  // The listener's own statement is the yardstick: PostgreSQL hands a session every notification
  // committed before that session's statement, ahead of its result. An instance that announced
  // after answering would have sent nothing yet when the client holds its 2xx.
  it(
    'announces a write to every instance before its answer leaves: a listener has it once the client has the 2xx',
    requires('postgres'),
    async () => {
      const c = await company(t)
      const leader = await contract(t, c.id)
      const id = await team(t, c.id, { name: 'Announced', code: 'AN', team_leader_ids: [leader] })
      const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!
        .name
      const listener = new pg.Client({ connectionString: withDatabase(process.env.TEST_DATABASE_URL!, name) })
      await listener.connect()
      const heard: string[] = []
      listener.on('notification', (n) => {
        if (n.channel === COMPANY_CHANGED) heard.push(n.payload ?? '')
      })
      try {
        await listener.query(`LISTEN ${COMPANY_CHANGED}`)
        for (const [i, headers] of (
          [{}, { 'idempotency-key': randomUUID() }] as Array<Record<string, string>>
        ).entries()) {
          heard.length = 0
          await t.json(202, {
            method: 'PUT',
            url: `/api/v1/companies/${c.id}/teams/${id}`,
            token: c.token,
            body: { name: `Announced ${i}`, code: 'AN' },
            headers,
          })
          await listener.query('SELECT 1')
          assert.ok(
            heard.some((payload) => parseChange(payload).companyId === c.id),
            `${Object.keys(headers).join() || 'unkeyed'}: heard ${JSON.stringify(heard)}`,
          )
        }
      } finally {
        await listener.end()
      }
    },
  )

  // A writer that dies right after its commit runs nothing more: the record its commit left is all
  // the others get to hear of (test/helpers/unannounced.ts).
  it('an instance hears a write whose writer died right after its commit', requires('postgres'), async () => {
    const c = await company(t)
    const leader = await contract(t, c.id)
    const id = await team(t, c.id, { name: 'Before the crash', code: 'KC', team_leader_ids: [leader] })
    const readOnSecond = async () => {
      const res = await second.inject({
        url: `/api/v1/companies/${c.id}/teams`,
        headers: { authorization: `Bearer ${c.token}` },
      })
      assert.equal(res.statusCode, 200)
      return res.json() as TeamView[]
    }
    assert.equal((await readOnSecond()).find((x) => x.id === id)?.name, 'Before the crash')
    assert.equal(
      (await readOnSecond()).find((x) => x.id === id)?.name,
      'Before the crash',
      'kept by the second instance',
    )
    await asWriterThatDied(t.app.database, (trx) =>
      trx
        .updateTable('teams')
        .set({ name: 'Committed, then the crash' })
        .where('company_id', '=', c.id)
        .where('id', '=', id)
        .execute(),
    )
    const seen = await eventually(readOnSecond, (list) => list.some((x) => x.name === 'Committed, then the crash'))
    assert.equal(seen.find((x) => x.id === id)?.name, 'Committed, then the crash')
  })

  it(
    'reads its own writes at once even where the database hides notices by default',
    requires('postgres'),
    async () => {
      const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!
        .name
      await sql`ALTER DATABASE ${sql.id(name)} SET client_min_messages = warning`.execute(t.app.database.db)
      let quiet: BuiltApp | undefined
      try {
        quiet = await secondInstance(t)
        // Only what its own connections are told can make it forget: the commits' record is not read.
        quiet.services.readCache.stop()
        const c = await company(t)
        const leader = await contract(t, c.id)
        const id = await team(t, c.id, { name: 'Quiet', code: 'QT', team_leader_ids: [leader] })
        const read = async () =>
          (
            await quiet!.inject({
              url: `/api/v1/companies/${c.id}/teams`,
              headers: { authorization: `Bearer ${c.token}` },
            })
          ).json() as TeamView[]
        await read()
        assert.equal((await read()).find((x) => x.id === id)?.name, 'Quiet')
        const res = await quiet.inject({
          method: 'PUT',
          url: `/api/v1/companies/${c.id}/teams/${id}`,
          headers: { authorization: `Bearer ${c.token}` },
          payload: { name: 'Heard', code: 'QT' },
        })
        assert.equal(res.statusCode, 202, res.body)
        assert.equal((await read()).find((x) => x.id === id)?.name, 'Heard')
      } finally {
        await quiet?.close()
        await sql`ALTER DATABASE ${sql.id(name)} RESET client_min_messages`.execute(t.app.database.db)
      }
    },
  )

  it(
    "an instance refuses a company's tokens as soon as its disabling commits, even if the writer died then",
    requires('postgres'),
    async () => {
      const c = await company(t)
      const readOnSecond = () =>
        second.inject({ url: `/api/v1/companies/${c.id}`, headers: { authorization: `Bearer ${c.token}` } })
      assert.equal((await readOnSecond()).statusCode, 200, "the second instance now keeps the client's access state")
      await asWriterThatDied(t.app.database, (trx) =>
        trx.updateTable('companies').set({ disabled_at: t.clock.now() }).where('id', '=', c.id).execute(),
      )
      const refused = await eventually(readOnSecond, (res) => res.statusCode === 403)
      assert.equal(refused.statusCode, 403)
    },
  )

  it(
    "an instance refuses a revoked client's tokens as soon as the revocation commits, even if the writer died then",
    requires('postgres'),
    async () => {
      const c = await company(t)
      const readOnSecond = () =>
        second.inject({ url: `/api/v1/companies/${c.id}`, headers: { authorization: `Bearer ${c.token}` } })
      assert.equal((await readOnSecond()).statusCode, 200)
      await t.app.database.db
        .updateTable('oauth_clients')
        .set({ revoked_at: t.clock.now() })
        .where('company_id', '=', c.id)
        .execute()
      const refused = await eventually(readOnSecond, (res) => res.statusCode === 401)
      assert.equal(refused.statusCode, 401)
    },
  )
})

/** The body of the teams read of `companyId`, cached or loaded. */
const read = async (cache: ReadCache, companyId: string, load: () => Promise<string>) =>
  (await cache.get(companyId, 'teams', '', async () => ({ body: await load() }))).body

// Its own hooks: the read cache over a bare database, without an app.
forEachEngine('the read cache itself', (engine) => {
  let database: Awaited<ReturnType<typeof openTestDatabase>>
  before(async () => {
    database = await openTestDatabase(engine)
  })
  after(async () => {
    await database?.close()
    await database?.drop()
  })

  it('does not keep an answer read before a change it heard of meanwhile', async () => {
    const cache = createReadCache({ maxBytes: 1 << 20, database })
    await cache.listen()
    let release!: (body: string) => void
    const slow = read(
      cache,
      'company-a',
      () =>
        new Promise<string>((resolve) => {
          release = resolve
        }),
    )
    await sql`SELECT pg_notify(${COMPANY_CHANGED}, 'company-a')`.execute(database.db)
    await eventually(
      async () => cache.stats().companies,
      (n) => n === 0,
    )
    release('old')
    assert.equal(await slow, 'old', 'the read that was under way gets its answer')
    let loads = 0
    assert.equal(
      await read(cache, 'company-a', async () => {
        loads++
        return 'new'
      }),
      'new',
    )
    assert.equal(loads, 1, 'the old answer was not kept')
    assert.equal(
      await read(cache, 'company-a', async () => {
        loads++
        return 'newer'
      }),
      'new',
      'the new one was',
    )
  })

  it('forgets every company on an empty announcement, and one company on its own', async () => {
    const cache = createReadCache({ maxBytes: 1 << 20, database })
    await cache.listen()
    await read(cache, 'a', async () => 'A')
    await read(cache, 'b', async () => 'B')
    await sql`SELECT pg_notify(${COMPANY_CHANGED}, 'a')`.execute(database.db)
    await eventually(
      async () => cache.stats().companies,
      (n) => n === 1,
    )
    assert.equal(await read(cache, 'b', async () => 'B2'), 'B')
    assert.equal(await read(cache, 'a', async () => 'A2'), 'A2')
    await sql`SELECT pg_notify(${COMPANY_CHANGED}, '')`.execute(database.db)
    assert.equal(
      await eventually(
        async () => cache.stats().companies,
        (n) => n === 0,
      ),
      0,
    )
  })

  it('announces changes to every listener, concurrent announcements together', async () => {
    const listener = createReadCache({ maxBytes: 1 << 20, database })
    await listener.listen()
    for (const id of ['a', 'b', 'c']) await read(listener, id, async () => id)
    const announcer = createReadCache({ maxBytes: 1 << 20, database })
    announcer.written(['a', 'b'])
    announcer.written(['a'])
    await announcer.announced()
    await eventually(
      async () => listener.stats().companies,
      (n) => n === 1,
    )
    assert.equal(await read(listener, 'c', async () => 'reloaded'), 'c', 'c was not announced')
    assert.equal(await read(listener, 'a', async () => 'reloaded'), 'reloaded')
    announcer.written([''])
    await announcer.announced()
    assert.equal(
      await eventually(
        async () => listener.stats().companies,
        (n) => n === 0,
      ),
      0,
      'no company: every company',
    )
  })

  it('hears a change recorded by a transaction that was under way during its earlier reads of the record', async () => {
    const cache = createReadCache({ maxBytes: 1 << 20, database })
    await cache.listen()
    try {
      assert.equal(await read(cache, 'long-writer', async () => 'before'), 'before')
      let commit!: () => void
      const writing = database.db.transaction().execute(async (trx) => {
        // As a writer whose announcement will never come (the service's own sessions leave it to after the commit).
        await sql`INSERT INTO company_changes (company_id) VALUES ('long-writer')`.execute(trx)
        await new Promise<void>((resolve) => {
          commit = resolve
        })
      })
      // The record is read several times while the transaction runs: its change is not visible yet.
      await new Promise((resolve) => setTimeout(resolve, 700))
      assert.equal(await read(cache, 'long-writer', async () => 'read again'), 'before', 'nothing committed yet')
      commit()
      await writing
      assert.equal(
        await eventually(
          () => read(cache, 'long-writer', async () => 'after'),
          (body) => body === 'after',
        ),
        'after',
      )
    } finally {
      cache.stop()
    }
  })

  it('caches nothing before it listens, or when it is given no memory', async () => {
    const unheard = createReadCache({ maxBytes: 1 << 20, database })
    await read(unheard, 'a', async () => 'A')
    assert.equal(await read(unheard, 'a', async () => 'A2'), 'A2')
    const off = createReadCache({ maxBytes: 0, database })
    await off.listen()
    await read(off, 'a', async () => 'A')
    assert.equal(await read(off, 'a', async () => 'A2'), 'A2')
  })

  it('stays within its memory, dropping the companies cached first', async () => {
    const cache = createReadCache({ maxBytes: 10_000, database })
    await cache.listen()
    const body = 'x'.repeat(1_000)
    for (let i = 0; i < 20; i++) await read(cache, `c${i}`, async () => body)
    const { bytes, companies } = cache.stats()
    assert.ok(bytes <= 10_000, `${bytes} bytes`)
    assert.ok(companies >= 3 && companies < 20, `${companies} companies`)
    assert.equal(await read(cache, 'c19', async () => 'reloaded'), body, 'the last one is still there')
    assert.equal(await read(cache, 'c0', async () => 'reloaded'), 'reloaded', 'the first one was dropped')
  })
})
