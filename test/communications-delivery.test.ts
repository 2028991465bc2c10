import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import type { TestApp } from './helpers/app.ts'
import { withDatabase } from './helpers/databases.ts'
import { company, contract, subsidiary } from './helpers/factories.ts'
import { postgresOnly } from './helpers/requires.ts'
import { DELIVERY_JOB } from '../src/modules/communications/communications.delivery.ts'
import {
  counterDrift,
  createComm,
  getComm,
  messagesOf,
  organisation,
  putComm,
  report,
  runAt,
} from './communications.fixtures.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const sendAts = async (t: TestApp, c: any, id: string) => (await report(t, c, id)).map((r: any) => r.send_at)

onEachEngine('communication delivery', (t, engine) => {
  it('delivers once to each active contract of the destination teams and subsidiaries', async () => {
    const { c, subA, subB, teamX, teamY, contracts } = await organisation(t)
    const past = new Date(t.clock.now().getTime() - 60_000).toISOString()
    const all = await createComm(t, c, {
      send_at: past,
      destination_team_ids: [teamX, teamY],
      destination_subsidiary_ids: [subA, subB],
    })
    const teamOnly = await createComm(t, c, { send_at: past, destination_team_ids: [teamY] })
    const subOnly = await createComm(t, c, { send_at: past, destination_subsidiary_ids: [subA] })
    await t.app.services.scheduler.runDue() // due in the past: delivered at the next run, clock unmoved
    const recipients = async (id: string) => (await messagesOf(t, c, id, past)).map((m: any) => m.contract_id).sort()
    const { a1, a2, b1, n1 } = contracts
    assert.deepEqual(await recipients(all), [a1, a2, b1, n1].sort()) // a1 is in X, Y and A: once; `off` is inactive
    assert.deepEqual(await recipients(teamOnly), [a1, n1].sort())
    assert.deepEqual(await recipients(subOnly), [a1, a2].sort())
    assert.deepEqual(await report(t, c, all), [
      { send_at: past, recipients: 4, delivered: 4, opened: 0, actions_done: 0 },
    ])
    assert.equal(await t.app.services.scheduler.runDue(), 0)
    assert.equal((await report(t, c, all))[0].recipients, 4)
  })

  it('lists an occurrence that reached nobody in the report', async () => {
    const c = await company(t)
    const empty = await subsidiary(t, c.id)
    await contract(t, c.id, { subsidiary_id: empty, active: false })
    const id = await createComm(t, c, { send_at: '2090-01-01T00:00:00Z', destination_subsidiary_ids: [empty] })
    await runAt(t, '2090-01-01T00:00:00Z')
    assert.deepEqual(await report(t, c, id), [
      { send_at: '2090-01-01T00:00:00.000Z', recipients: 0, delivered: 0, opened: 0, actions_done: 0 },
    ])
    assert.equal((await getComm(t, c, id)).status, 'submitted')
  })

  it('repeats monthly at 09:00 Rome time across a month end, a leap day and the change to summer time', async () => {
    const { c, subB } = await organisation(t) // Europe/Rome
    const id = await createComm(t, c, {
      send_at: '2028-01-31T09:00:00+01:00',
      recurrent: 'monthly',
      recurrent_until: '2028-04-30',
      destination_subsidiary_ids: [subB],
    })
    await runAt(t, '2028-01-31T08:00:00Z')
    assert.equal((await getComm(t, c, id)).status, 'active')
    await runAt(t, '2028-02-29T07:59:59Z')
    assert.equal((await report(t, c, id)).length, 1)
    await runAt(t, '2028-02-29T08:00:00Z') // February 2028 has 29 days
    await runAt(t, '2028-03-31T06:59:59Z')
    assert.equal((await report(t, c, id)).length, 2)
    await runAt(t, '2028-03-31T07:00:00Z') // summer time since 26 March: 09:00 is 07:00 UTC
    await runAt(t, '2028-04-30T07:00:00Z') // the last day of April, then the series ends
    assert.deepEqual(await sendAts(t, c, id), [
      '2028-01-31T08:00:00.000Z',
      '2028-02-29T08:00:00.000Z',
      '2028-03-31T07:00:00.000Z',
      '2028-04-30T07:00:00.000Z',
    ])
    const done = await getComm(t, c, id)
    assert.equal(done.status, 'submitted')
    assert.deepEqual(
      done.change_log.filter((e: any) => e.action === 'delivered').map((e: any) => e.occurrence),
      await sendAts(t, c, id),
    )
  })

  it('repeats yearly on 29 February as 28 February in common years', async () => {
    const { c, subB } = await organisation(t)
    const id = await createComm(t, c, {
      send_at: '2028-02-29T09:00:00+01:00',
      recurrent: 'yearly',
      recurrent_until: '2030-02-28',
      destination_subsidiary_ids: [subB],
    })
    await runAt(t, '2031-01-01T00:00:00Z')
    assert.deepEqual(await sendAts(t, c, id), [
      '2028-02-29T08:00:00.000Z',
      '2029-02-28T08:00:00.000Z',
      '2030-02-28T08:00:00.000Z',
    ])
  })

  it('repeats daily at 08:00 New York time across the end of summer time', async () => {
    const c = await company(t, { country: 'US', timezone: 'America/New_York' })
    const s = await subsidiary(t, c.id)
    await contract(t, c.id, { subsidiary_id: s })
    const id = await createComm(t, c, {
      send_at: '2027-11-06T08:00:00-04:00',
      recurrent: 'daily',
      recurrent_until: '2027-11-08',
      destination_subsidiary_ids: [s],
    })
    await runAt(t, '2027-11-07T12:30:00Z')
    assert.deepEqual(await sendAts(t, c, id), ['2027-11-06T12:00:00.000Z']) // 08:00 EST on the 7th is 13:00 UTC
    await runAt(t, '2027-11-09T00:00:00Z')
    assert.deepEqual(await sendAts(t, c, id), [
      '2027-11-06T12:00:00.000Z',
      '2027-11-07T13:00:00.000Z',
      '2027-11-08T13:00:00.000Z',
    ])
  })

  it('collapses the occurrences already past when a series is scheduled: only the most recent is delivered', async () => {
    const c = await company(t, { timezone: 'UTC' }) // no daylight-saving change between the occurrences
    const s = await subsidiary(t, c.id)
    const [r1, r2] = [await contract(t, c.id, { subsidiary_id: s }), await contract(t, c.id, { subsidiary_id: s })]
    const day = 86_400_000
    // Ten days late, an hour past a whole second: occurrences at first + k days; the 10th (k = 9) is the last one past.
    const first = new Date(Math.floor(t.clock.now().getTime() / 1000) * 1000 - 10 * day + 3_600_000)
    const at = (k: number) => new Date(first.getTime() + k * day).toISOString()
    const id = await createComm(t, c, {
      send_at: first.toISOString(),
      recurrent: 'daily',
      recurrent_until: at(30).slice(0, 10),
      destination_subsidiary_ids: [s],
    })
    await t.app.services.scheduler.runDue()
    assert.deepEqual(await report(t, c, id), [
      { send_at: at(9), recipients: 2, delivered: 2, opened: 0, actions_done: 0 },
    ])
    assert.deepEqual((await messagesOf(t, c, id, at(9))).map((m: any) => m.contract_id).sort(), [r1, r2].sort())
    assert.deepEqual(await messagesOf(t, c, id, first.toISOString()), [])
    const got = await getComm(t, c, id)
    assert.equal(got.status, 'active')
    assert.equal(got.send_at, first.toISOString()) // the series keeps its first occurrence
    assert.deepEqual(
      got.change_log.filter((e: any) => e.action === 'delivered').map((e: any) => e.occurrence),
      [at(9)],
    )
    await runAt(t, at(10)) // the next one comes at its time
    assert.deepEqual(await sendAts(t, c, id), [at(9), at(10)])
  })

  it('collapses a late weekly series that has ended into its last occurrence, and a draft scheduled late too', async () => {
    const c = await company(t, { timezone: 'UTC' })
    const s = await subsidiary(t, c.id)
    await contract(t, c.id, { subsidiary_id: s })
    const week = 7 * 86_400_000
    const first = new Date(Math.floor(t.clock.now().getTime() / 1000) * 1000 - 5 * week + 3_600_000) // at(4) is the last one past
    const at = (k: number) => new Date(first.getTime() + k * week).toISOString()
    const ended = await createComm(t, c, {
      send_at: first.toISOString(),
      recurrent: 'weekly',
      recurrent_until: at(2).slice(0, 10),
      destination_subsidiary_ids: [s],
    })
    const draft = await createComm(t, c, {
      status: 'draft',
      send_at: first.toISOString(),
      recurrent: 'weekly',
      recurrent_until: at(9).slice(0, 10),
      destination_subsidiary_ids: [s],
    })
    assert.equal((await putComm(t, c, draft, { status: 'scheduled' })).statusCode, 202)
    await t.app.services.scheduler.runDue()
    assert.deepEqual(await sendAts(t, c, ended), [at(2)])
    assert.equal((await getComm(t, c, ended)).status, 'submitted')
    assert.deepEqual(await sendAts(t, c, draft), [at(4)])
    assert.equal((await getComm(t, c, draft)).status, 'active')
  })

  it('rolls a delivery back when the process fails mid-way, then delivers it exactly once', async () => {
    const { c, subA } = await organisation(t)
    const at = '2089-03-01T08:00:00.000Z'
    const id = await createComm(t, c, {
      send_at: at,
      recurrent: 'daily',
      recurrent_until: '2089-03-02',
      destination_subsidiary_ids: [subA],
    })
    const scheduler = t.app.services.scheduler
    const deliver = t.app.services.communications.delivery.deliverOccurrence
    // The real handler runs (messages inserted, next occurrence scheduled), then the "process" fails.
    scheduler.register(DELIVERY_JOB, async (ctx) => {
      await deliver(ctx)
      throw new Error('process died')
    })
    try {
      await runAt(t, at)
    } finally {
      scheduler.register(DELIVERY_JOB, deliver)
    }
    assert.deepEqual(await report(t, c, id), [])
    assert.deepEqual(await messagesOf(t, c, id, at), [])
    assert.equal((await getComm(t, c, id)).status, 'scheduled')
    await runAt(t, '2089-03-01T08:00:30Z') // after the retry back-off
    await runAt(t, '2089-03-01T08:01:00Z')
    assert.deepEqual(await report(t, c, id), [{ send_at: at, recipients: 2, delivered: 2, opened: 0, actions_done: 0 }])
    const got = await getComm(t, c, id)
    assert.equal(got.status, 'active')
    assert.equal(got.change_log.filter((e: any) => e.action === 'delivered').length, 1)
    await runAt(t, '2089-03-02T08:00:00Z')
    assert.deepEqual(await sendAts(t, c, id), [at, '2089-03-02T08:00:00.000Z'])
  })

  describe('several sessions (PostgreSQL only)', () => {
    // pg-pool listens only to idle clients; src/db/database.ts gives every pooled client its own
    // 'error' listener, so a session killed mid-transaction fails that job, not the process.
    it('loses nothing when the connection of a delivery dies before its commit', postgresOnly(engine), async () => {
      const { c, subA } = await organisation(t)
      const at = '2085-07-01T08:00:00.000Z'
      const id = await createComm(t, c, { send_at: at, destination_subsidiary_ids: [subA] })
      const scheduler = t.app.services.scheduler
      const deliver = t.app.services.communications.delivery.deliverOccurrence
      // As when the process is killed: the server drops the session and rolls its transaction back.
      scheduler.register(DELIVERY_JOB, async (ctx) => {
        await deliver(ctx)
        await sql`SELECT pg_terminate_backend(pg_backend_pid())`.execute(ctx.trx)
      })
      try {
        await assert.rejects(runAt(t, at), /terminat|connection error/i, 'the killed session fails the run')
      } finally {
        scheduler.register(DELIVERY_JOB, deliver)
      }
      assert.deepEqual(await report(t, c, id), [])
      assert.equal((await getComm(t, c, id)).status, 'scheduled')
      await runAt(t, at) // the job is still pending and due: claimed again at once
      assert.deepEqual(await report(t, c, id), [
        { send_at: at, recipients: 2, delivered: 2, opened: 0, actions_done: 0 },
      ])
      assert.equal((await getComm(t, c, id)).change_log.filter((e: any) => e.action === 'delivered').length, 1)
    })

    it('moves an occurrence whose job another instance is running, without waiting for it, and can move it back', {
      ...postgresOnly(engine),
      timeout: 60_000,
    }, async () => {
      const { c, subB } = await organisation(t)
      const [x, y] = ['2086-04-01T08:00:00.000Z', '2086-05-01T08:00:00.000Z']
      const id = await createComm(t, c, { send_at: x, destination_subsidiary_ids: [subB] })
      // Another instance has claimed the job of x (its row is locked) and not finished yet.
      let release!: () => void
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      let claimed!: () => void
      const isClaimed = new Promise<void>((resolve) => {
        claimed = resolve
      })
      const claim = t.app.database.db.transaction().execute(async (trx) => {
        await sql`SELECT id FROM jobs WHERE kind = ${DELIVERY_JOB} AND key = ${`${id}:${x}`} FOR UPDATE`.execute(trx)
        claimed()
        await released
      })
      await isClaimed
      try {
        const moved = await t.call({
          method: 'PUT',
          url: `/api/v1/companies/${c.id}/communications/${id}`,
          token: c.token,
          body: { send_at: y },
        })
        assert.equal(moved.statusCode, 202)
      } finally {
        release()
        await claim
      }
      await runAt(t, x) // the job of x runs, finds the communication moved, does nothing
      assert.deepEqual(await report(t, c, id), [])
      const back = await t.call({
        method: 'PUT',
        url: `/api/v1/companies/${c.id}/communications/${id}`,
        token: c.token,
        body: { send_at: x },
      })
      assert.equal(back.statusCode, 202)
      await runAt(t, y)
      assert.deepEqual(await sendAts(t, c, id), [x])
    })

    it('delivers each due occurrence once with two instances on one database', postgresOnly(engine), async () => {
      const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!
        .name
      const config = loadConfig(
        {},
        {
          DATABASE_URL: withDatabase(process.env.TEST_DATABASE_URL!, name),
          SCHEDULER_ENABLED: false,
          RATE_LIMIT_MAX: 0,
        },
      )
      const second = await buildApp({ config, clock: t.clock, logger: false })
      await second.ready()
      try {
        const { c, subA, subB, teamX, contracts } = await organisation(t)
        for (let i = 0; i < 20; i++) await contract(t, c.id, { subsidiary_id: subB })
        const ids = []
        for (let i = 0; i < 6; i++) {
          ids.push(
            await createComm(t, c, {
              send_at: '2088-05-01T08:00:00Z',
              recurrent: 'daily',
              recurrent_until: '2088-05-05',
              destination_team_ids: [teamX],
              destination_subsidiary_ids: [subA, subB],
            }),
          )
        }
        const back = t.clock.now()
        t.clock.set('2088-05-06T00:00:00Z')
        try {
          const [a, b] = await Promise.all([t.app.services.scheduler.runDue(), second.services.scheduler.runDue()])
          assert.ok(a + b >= 30, `ran ${a} + ${b} jobs`)
        } finally {
          t.clock.set(back)
        }
        const expected = new Set([contracts.a1, contracts.a2, contracts.b1, contracts.n1]).size + 20
        for (const id of ids) {
          const rows = await report(t, c, id)
          assert.equal(rows.length, 5)
          for (const row of rows) assert.equal(row.recipients, expected, `${id} ${row.send_at}`)
          const messages = await messagesOf(t, c, id, '2088-05-03T08:00:00Z')
          assert.equal(new Set(messages.map((m: any) => m.contract_id)).size, expected)
          const delivered = (await getComm(t, c, id)).change_log.filter((e: any) => e.action === 'delivered')
          assert.equal(delivered.length, 5, 'one delivery per occurrence, by one instance')
        }
      } finally {
        await second.close()
      }
    })
  })

  // Every delivery of this file (retried, rolled back, raced by two instances) left exact counters.
  it('leaves no occurrence whose report counters differ from its messages', async () => {
    // A delivery of its own too: run alone or first, the check would look at an empty table.
    const { c, subA } = await organisation(t)
    const at = '2084-01-01T08:00:00.000Z'
    const id = await createComm(t, c, { send_at: at, destination_subsidiary_ids: [subA] })
    await runAt(t, at)
    assert.equal((await report(t, c, id))[0]?.recipients, 2)
    assert.deepEqual(await counterDrift(t.app.database.db), [])
  })
})
