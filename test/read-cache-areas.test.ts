import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { sql, type Transaction } from 'kysely'
import pg from 'pg'
import type { BuiltApp } from '../src/app.ts'
import { ANNOUNCE_SETTING } from '../src/db/database.ts'
import { ANNOUNCED_TABLES, CACHED_READS, type CachedRead } from '../src/cache/read-areas.ts'
import type { DB } from '../src/db/tables.ts'
import { buildTestApp, secondInstance, type TestApp, type Call } from './helpers/app.ts'
import { asWriterThatDied, behindEveryCache } from './helpers/unannounced.ts'
import { company, contract, subsidiary, team, type CompanyFixture } from './helpers/factories.ts'
import { has, requires } from './helpers/requires.ts'
import { eventually } from './helpers/eventually.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * The cached reads forget by what changed (src/cache/read-areas.ts): a write forgets the answers
 * that show what it changed, and leaves the others served from the cache.
 *
 * How a test sees that an answer came from the cache: a change made behind the service's back
 * (no trigger fires: test/helpers/unannounced.ts), that no announcement covers. An answer that
 * shows it was read again from the database; one that does not was served from the cache.
 * test/read-cache-writes.test.ts walks every write route of the API.
 */

type Reads = Record<Exclude<CachedRead, 'token_client'>, string>

interface World {
  c: CompanyFixture
  leader: string
  other: string
  teamId: string
  spareTeamId: string
  subsidiaryId: string
  reads: Reads
}

/** A company with a contract leading a team, another contract, a team without members, a subsidiary, and a holiday of each in 2027. */
async function world(t: TestApp): Promise<World> {
  const c = await company(t)
  const leader = await contract(t, c.id)
  const other = await contract(t, c.id)
  const teamId = await team(t, c.id, { team_leader_ids: [leader] })
  const spareTeamId = await team(t, c.id)
  const subsidiaryId = await subsidiary(t, c.id)
  await t.json(202, {
    method: 'POST',
    url: `/api/v1/companies/${c.id}/holidays`,
    token: c.token,
    body: { name: 'Company day', day: '2027-05-10' },
  })
  await t.json(202, {
    method: 'POST',
    url: `/api/v1/companies/${c.id}/holidays`,
    token: c.token,
    body: { name: 'Branch day', day: '2027-06-10', subsidiary_id: subsidiaryId },
  })
  const base = `/api/v1/companies/${c.id}`
  const reads: Reads = {
    company: base,
    teams: `${base}/teams`,
    contracts: `${base}/contracts?limit=50`,
    holidays: `${base}/holidays`,
    subsidiary_holidays: `${base}/subsidiaries/${subsidiaryId}/holidays`,
    all_holidays: `${base}/all_holidays?year=2027`,
  }
  return { c, leader, other, teamId, spareTeamId, subsidiaryId, reads }
}

/** Changes what every cached read shows (a name in each), with no announcement and no record. */
async function behindTheBack(t: TestApp, w: World, marker: string) {
  await behindEveryCache(t.app.database, async (trx) => {
    await sql`UPDATE companies SET name = ${marker} WHERE id = ${w.c.id}`.execute(trx)
    await sql`UPDATE teams SET name = ${marker} WHERE company_id = ${w.c.id} AND id = ${w.teamId}`.execute(trx)
    await sql`UPDATE contracts SET first_name = ${marker} WHERE company_id = ${w.c.id} AND id = ${w.leader}`.execute(
      trx,
    )
    await sql`UPDATE holidays SET name = ${marker} WHERE company_id = ${w.c.id}`.execute(trx)
  })
}

/** Runs statements as any other session would (psql, a script): its triggers announce. */
async function asAnotherSession(t: TestApp, work: (trx: Transaction<DB>) => Promise<unknown>) {
  await t.app.database.db.transaction().execute(async (trx) => {
    await sql`SELECT set_config(${ANNOUNCE_SETTING}, '', true)`.execute(trx)
    await work(trx)
  })
}

/** Every cached read, once the record of the writes before has been heard (it would forget them later). */
async function warm(t: TestApp, w: World) {
  await t.app.services.readCache.heardUpToNow()
  await readAll(t, w)
}

const readAll = async (t: TestApp, w: World) => {
  const bodies = {} as Record<keyof Reads, string>
  for (const [read, url] of Object.entries(w.reads) as Array<[keyof Reads, string]>) {
    const res = await t.call({ url, token: w.c.token })
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
    bodies[read] = res.body
  }
  return bodies
}

/** Which reads show the marker (read again) and which do not (served from the cache). */
const freshOnes = (bodies: Record<string, string>, marker: string) =>
  Object.keys(bodies)
    .filter((read) => bodies[read]!.includes(marker))
    .sort()

onEachEngine('cached reads forget by what changed', (t) => {
  let w: World
  before(async () => {
    w = await world(t)
  })

  // Each write, and the reads it must make fresh; every other read stays served from the cache.
  const writes: Array<{ name: string; call: (w: World, n: number) => Call; fresh: Array<keyof Reads> }> = [
    {
      name: 'a team created',
      call: (w, n) => ({
        method: 'POST',
        url: `/api/v1/companies/${w.c.id}/teams`,
        body: { name: `New ${n}`, code: `N${n}`, team_leader_ids: [w.other] },
      }),
      fresh: ['contracts', 'teams'],
    },
    {
      name: 'a contract created',
      call: (w) => ({
        method: 'POST',
        url: `/api/v1/companies/${w.c.id}/contracts`,
        body: { first_name: 'New', last_name: 'Hire' },
      }),
      fresh: ['contracts'],
    },
    {
      name: 'a contract made a leader',
      call: (w) => ({
        method: 'PUT',
        url: `/api/v1/companies/${w.c.id}/teams/${w.teamId}/upgrade_contract`,
        body: { contract_id: w.other },
      }),
      fresh: ['contracts', 'teams'],
    },
    {
      name: 'a holiday created',
      call: (w, n) => ({
        method: 'POST',
        url: `/api/v1/companies/${w.c.id}/holidays`,
        body: { name: `Closure ${n}`, day: '2028-01-03' },
      }),
      fresh: ['all_holidays', 'holidays', 'subsidiary_holidays'],
    },
    {
      name: 'the company patched',
      call: (w, n) => ({ method: 'PATCH', url: `/api/v1/companies/${w.c.id}`, body: { city: `City ${n}` } }),
      fresh: ['all_holidays', 'company'],
    },
    {
      name: 'a subsidiary created',
      call: () => ({
        method: 'POST',
        url: `/api/v1/companies/${w.c.id}/subsidiaries`,
        body: { name: 'Another branch' },
      }),
      fresh: ['subsidiary_holidays'],
    },
    {
      name: 'a team renamed',
      call: (w, n) => ({
        method: 'PUT',
        url: `/api/v1/companies/${w.c.id}/teams/${w.spareTeamId}`,
        body: { name: `Renamed ${n}`, code: `R${n}` },
      }),
      fresh: ['teams'],
    },
  ]
  writes.forEach((write, n) => {
    it(`${write.name}: makes fresh the reads that show it, and only those`, async () => {
      await warm(t, w)
      const marker = `hidden-${n}-${randomUUID().slice(0, 8)}`
      await behindTheBack(t, w, marker)
      assert.deepEqual(freshOnes(await readAll(t, w), marker), [], 'every read is served from the cache')
      await t.json(202, { ...write.call(w, n), token: w.c.token })
      assert.deepEqual(freshOnes(await readAll(t, w), marker), write.fresh)
    })
  })

  it("shows a membership change in the contracts page's team_ids", async () => {
    const page = async () =>
      (await t.json<Array<{ id: string; team_ids: string[] }>>(200, { url: w.reads.contracts, token: w.c.token })).find(
        (x) => x.id === w.other,
      )!.team_ids
    const teamId = await team(t, w.c.id)
    assert.ok(!(await page()).includes(teamId))
    await t.json(202, {
      method: 'PUT',
      url: `/api/v1/companies/${w.c.id}/teams/${teamId}/upgrade_contract`,
      token: w.c.token,
      body: { contract_id: w.other },
    })
    assert.ok((await page()).includes(teamId), 'joined')
    await t.json(202, {
      method: 'PUT',
      url: `/api/v1/companies/${w.c.id}/teams/${teamId}/remove_contract`,
      token: w.c.token,
      body: { contract_id: w.other },
    })
    assert.ok(!(await page()).includes(teamId), 'left')
  })

  it("shows a change of the company's country (a platform client's) in all_holidays, with and without a year", async () => {
    const names = async (url: string) =>
      (await t.json<Array<{ name: string; source: string }>>(200, { url, token: w.c.token }))
        .filter((h) => h.source === 'public')
        .map((h) => h.name)
        .join('|')
    const thisYear = `/api/v1/companies/${w.c.id}/all_holidays`
    const italian = [await names(w.reads.all_holidays), await names(thisYear)]
    await t.json(202, {
      method: 'PATCH',
      url: `/api/v1/companies/${w.c.id}`,
      token: t.platformToken,
      body: { country: 'FR', province: null, timezone: 'Europe/Paris' },
    })
    const french = [await names(w.reads.all_holidays), await names(thisYear)]
    assert.notEqual(french[0], italian[0])
    assert.notEqual(french[1], italian[1])
    await t.json(202, {
      method: 'PATCH',
      url: `/api/v1/companies/${w.c.id}`,
      token: t.platformToken,
      body: { country: 'IT', timezone: 'Europe/Rome' },
    })
    assert.equal(await names(w.reads.all_holidays), italian[0])
  })

  it('keeps each page and each filter apart, with its Link header', async () => {
    const first = await t.call({ url: `/api/v1/companies/${w.c.id}/contracts?limit=1`, token: w.c.token })
    const again = await t.call({ url: `/api/v1/companies/${w.c.id}/contracts?limit=1`, token: w.c.token })
    assert.equal(again.body, first.body)
    assert.ok(first.headers.link, 'a next page')
    assert.equal(again.headers.link, first.headers.link)
    const next = String(first.headers.link).slice(1, String(first.headers.link).indexOf('>'))
    const second = await t.json<Array<{ id: string }>>(200, { url: next, token: w.c.token })
    assert.notEqual(second[0]!.id, (JSON.parse(first.body) as Array<{ id: string }>)[0]!.id)
    const all = await t.json<unknown[]>(200, { url: `/api/v1/companies/${w.c.id}/contracts`, token: w.c.token })
    const inTeam = await t.json<unknown[]>(200, {
      url: `/api/v1/companies/${w.c.id}/contracts?team_id=${w.teamId}`,
      token: w.c.token,
    })
    assert.ok(inTeam.length < all.length)
    assert.equal(
      (await t.call({ url: `/api/v1/companies/${w.c.id}/contracts?limit=1&cursor=bad`, token: w.c.token })).statusCode,
      400,
      'a bad cursor is still refused',
    )
  })

  it('forgets the right areas on a change written in plain SQL, announced by the triggers', async () => {
    await warm(t, w)
    const marker = `by-hand-${randomUUID().slice(0, 8)}`
    await behindTheBack(t, w, marker)
    await asAnotherSession(t, (trx) =>
      sql`UPDATE holidays SET is_worker_holiday = NOT is_worker_holiday WHERE company_id = ${w.c.id}`.execute(trx),
    )
    await eventually(
      () => readAll(t, w),
      (bodies) => freshOnes(bodies, marker).length === 3,
    )
    assert.deepEqual(freshOnes(await readAll(t, w), marker), ['all_holidays', 'holidays', 'subsidiary_holidays'])
  })

  it("forgets the right areas on a change heard only through its commit's record", async () => {
    await warm(t, w)
    const marker = `recorded-${randomUUID().slice(0, 8)}`
    await behindTheBack(t, w, marker)
    await asWriterThatDied(t.app.database, (trx) =>
      sql`UPDATE team_members SET is_leader = is_leader WHERE company_id = ${w.c.id}`.execute(trx),
    )
    await eventually(
      () => readAll(t, w),
      (bodies) => freshOnes(bodies, marker).length === 2,
    )
    assert.deepEqual(freshOnes(await readAll(t, w), marker), ['contracts', 'teams'])
  })

  it('announces and records every table a cached read shows', async () => {
    for (const table of ANNOUNCED_TABLES) {
      const { rows } = await sql<{ fn: string; type: number }>`
        SELECT p.proname AS fn, t.tgtype::int AS type FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE c.relname = ${table} AND NOT t.tgisinternal`.execute(t.app.database.db)
      // tgtype's bits: 4 INSERT, 8 DELETE, 16 UPDATE.
      const events = (fns: string[]) =>
        rows.filter((r) => fns.includes(r.fn)).reduce((bits, r) => bits | (r.type & 28), 0)
      assert.equal(events(['announce_company_changes']), 28, `${table}: announced on insert, update and delete`)
      assert.equal(
        events(['record_company_change', 'record_every_company_change']),
        28,
        `${table}: recorded on insert, update and delete`,
      )
    }
  })

  it("reads, for each cached read, only tables it declares (and companies, for a company's existence)", async () => {
    const { rows } = await sql<{
      name: string
    }>`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'`.execute(t.app.database.db)
    const tables = new Set(rows.map((r) => r.name))
    const executor = t.app.database.db.getExecutor()
    const original = executor.executeQuery.bind(executor)
    const seen: string[] = []
    executor.executeQuery = ((query: { sql: string }, ...rest: unknown[]) => {
      seen.push(query.sql)
      return (original as (...args: unknown[]) => Promise<unknown>)(query, ...rest)
    }) as typeof executor.executeQuery
    try {
      for (const [read, url] of Object.entries(w.reads) as Array<[keyof Reads, string]>) {
        t.app.services.readCache.forget()
        seen.length = 0
        await t.json(200, { url, token: w.c.token })
        const named = seen
          .flatMap((text) => [...text.matchAll(/\b(?:from|join)\s+"?([a-z_]+)"?/gi)].map((m) => m[1]!.toLowerCase()))
          .filter((name) => tables.has(name))
        assert.ok(named.length > 0, `${read}: its queries were seen`)
        // company_changes: the cache's own reading of the commits' record, which runs beside the reads on a timer.
        const declared = new Set<string>([...CACHED_READS[read], 'companies', 'company_changes'])
        assert.deepEqual(
          [...new Set(named)].filter((name) => !declared.has(name)),
          [],
          `${read} reads tables it does not declare`,
        )
      }
    } finally {
      executor.executeQuery = original
    }
  })
})

describe('cached reads by area with two instances on one PostgreSQL database', () => {
  let t: TestApp
  let second: BuiltApp
  before(async () => {
    // Without PostgreSQL nothing is built here; the tests' requires('postgres') marks them skipped, with the reason.
    if (!has('postgres')) return
    t = await buildTestApp('postgres')
    second = await secondInstance(t)
  })
  after(async () => {
    await second?.close()
    await t?.close()
  })

  it(
    'keeps answers while an old transaction runs elsewhere: a change recorded once is heard once, not at every read of the record',
    requires('postgres'),
    async () => {
      const w = await world(t)
      // A transaction left open on another connection holds the snapshots' xmin back, so every read
      // of the record returns the world's changes again; they used to forget its answers each time.
      const holder = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL })
      await holder.connect()
      try {
        await holder.query('BEGIN')
        await holder.query('SELECT pg_current_xact_id()')
        await t.json(202, {
          method: 'POST',
          url: `/api/v1/companies/${w.c.id}/holidays`,
          token: w.c.token,
          body: { name: 'Recorded', day: '2027-10-01' },
        })
        await t.app.services.readCache.heardUpToNow()
        await t.app.services.readCache.heardUpToNow()
        for (const url of Object.values(w.reads)) await t.json(200, { url, token: w.c.token })
        const marker = `held-${randomUUID().slice(0, 8)}`
        await behindTheBack(t, w, marker)
        // Two more reads of the record, both returning the holiday's change again.
        await t.app.services.readCache.heardUpToNow()
        await t.app.services.readCache.heardUpToNow()
        const bodies = {} as Record<string, string>
        for (const [read, url] of Object.entries(w.reads)) bodies[read] = (await t.call({ url, token: w.c.token })).body
        assert.deepEqual(freshOnes(bodies, marker), [], 'every read served from the cache')
      } finally {
        await holder.query('ROLLBACK').catch(() => {})
        await holder.end()
      }
    },
  )

  it("an instance hears another's change of one area, and keeps serving the others", requires('postgres'), async () => {
    const w = await world(t)
    const readAllOnSecond = async () => {
      const bodies = {} as Record<string, string>
      for (const [read, url] of Object.entries(w.reads)) {
        const res = await second.inject({ url, headers: { authorization: `Bearer ${w.c.token}` } })
        assert.equal(res.statusCode, 200)
        bodies[read] = res.body
      }
      return bodies
    }
    // Both instances past the world's writes: their announcements and records heard.
    await t.app.services.readCache.heardUpToNow()
    await second.services.readCache.heardUpToNow()
    await readAllOnSecond()
    const marker = `hidden-${randomUUID().slice(0, 8)}`
    await behindTheBack(t, w, marker)
    assert.deepEqual(
      freshOnes(await readAllOnSecond(), marker),
      [],
      'the second instance serves every read from its cache',
    )
    await t.json(202, {
      method: 'POST',
      url: `/api/v1/companies/${w.c.id}/holidays`,
      token: w.c.token,
      body: { name: 'Heard', day: '2027-09-01' },
    })
    await eventually(readAllOnSecond, (bodies) => freshOnes(bodies, marker).length === 3)
    assert.deepEqual(freshOnes(await readAllOnSecond(), marker), ['all_holidays', 'holidays', 'subsidiary_holidays'])
    await t.json(202, {
      method: 'PUT',
      url: `/api/v1/companies/${w.c.id}/teams/${w.teamId}/upgrade_contract`,
      token: w.c.token,
      body: { contract_id: w.other },
    })
    await eventually(readAllOnSecond, (bodies) => freshOnes(bodies, marker).length === 5)
    assert.deepEqual(freshOnes(await readAllOnSecond(), marker), [
      'all_holidays',
      'contracts',
      'holidays',
      'subsidiary_holidays',
      'teams',
    ])
  })
})
