import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { createDatabase } from '../src/db/database.ts'
import type { TestApp } from './helpers/app.ts'
import { withDatabase } from './helpers/databases.ts'
import { eventually } from './helpers/eventually.ts'
import { postgresOnly } from './helpers/requires.ts'
import { company, contract, subsidiary } from './helpers/factories.ts'
import { createComm, messagesOf, report } from './communications.fixtures.ts'
import { ALLOWED, PageSession, assertHtml, pathOf } from './hosted-helpers.ts'
import { billedCompany, eventsOf, setCard, statusOf, unix } from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * The test clock (issue 16; docs/test-clock.md), modelled on Stripe's test clocks (`status`
 * ready | advancing, the answer once the advance is done) and Chargebee's time machine (the
 * whole site's time travels forward only, `destination_time`).
 */

const CLOCK = '/api/v1/test_clock'
const advance = (t: TestApp, to: unknown, token?: string | null) =>
  t.call({ method: 'POST', url: `${CLOCK}/advance`, body: { to }, token })

function refused(res: LightMyRequestResponse, status: number, code: string): string {
  assert.equal(res.statusCode, status, res.body)
  const body = res.json()
  assert.equal(body.code, code)
  return body.errors
}

onEachEngine('test clock off', (t) => {
  it('is a 404 on both routes without TEST_CLOCK_ENABLED, even for the platform', async () => {
    refused(await t.call({ url: CLOCK }), 404, 'not_found')
    refused(await advance(t, '2099-01-01T00:00:00Z'), 404, 'not_found')
  })
})

onEachEngine('test clock', { TEST_CLOCK_ENABLED: true, REDIRECT_ALLOWED_HOSTS: ALLOWED }, (t, engine) => {
  const START = '2027-01-01T10:00:00.000Z'
  before(async () => {
    t.clock.set(START)
  })

  it('shows the business time, ready, with no offset yet', async () => {
    assert.deepEqual(await t.json(200, { url: CLOCK }), {
      object: 'test_clock',
      now: START,
      offset_seconds: 0,
      status: 'ready',
      advancing_to: null,
    })
  })

  it('documents both routes in the OpenAPI document when enabled', async () => {
    const doc = await t.json(200, { url: '/openapi.json', token: null })
    assert.equal(doc.paths[CLOCK].get.operationId, 'getTestClock')
    assert.equal(doc.paths[`${CLOCK}/advance`].post.operationId, 'advanceTestClock')
  })

  it("is for platform clients only: 401 without a token, 403 for a company's token", async () => {
    const c = await company(t)
    refused(await t.call({ url: CLOCK, token: null }), 401, 'unauthorized')
    refused(await advance(t, '2027-02-01T00:00:00Z', null), 401, 'unauthorized')
    refused(await t.call({ url: CLOCK, token: c.token }), 403, 'forbidden')
    refused(await advance(t, '2027-02-01T00:00:00Z', c.token), 403, 'forbidden')
    assert.equal((await t.json(200, { url: CLOCK })).now, START, 'nothing moved')
  })

  it('refuses a `to` before the business time, not a date-time, without its offset, too far, missing, or beside an unknown field', async () => {
    assert.match(
      refused(await advance(t, '2026-12-31T23:59:59Z'), 400, 'validation_failed'),
      /^body\/to must not be before the business time now \(2027-01-01T10:00:00.000Z\)/,
    )
    for (const to of ['next week', '2027-02-01', '2027-02-01T00:00:00', 1798761600, null]) {
      assert.match(refused(await advance(t, to), 400, 'validation_failed'), /body\/to/, String(to))
    }
    assert.match(
      refused(await advance(t, '2037-01-01T10:00:01Z'), 400, 'validation_failed'),
      /^body\/to must be at most 10 years after/,
    )
    assert.match(
      refused(await t.call({ method: 'POST', url: `${CLOCK}/advance`, body: {} }), 400, 'validation_failed'),
      /to/,
    )
    assert.match(
      refused(
        await t.call({ method: 'POST', url: `${CLOCK}/advance`, body: { to: '2027-02-01T00:00:00Z', extra: 1 } }),
        400,
        'validation_failed',
      ),
      /extra/,
    )
    assert.equal((await t.json(200, { url: CLOCK })).now, START, 'nothing moved')
  })

  it('refuses a second advance while one runs (409), and takes over one whose instance stopped stepping', async () => {
    // What another instance's advance in progress looks like in the database.
    await sql`UPDATE test_clock SET status = 'advancing', advancing_to = '2027-01-01T10:00:00Z', heartbeat_at = now()`.execute(
      t.app.database.db,
    )
    try {
      assert.match(refused(await advance(t, START), 409, 'conflict'), /already advancing/)
      await sql`UPDATE test_clock SET heartbeat_at = now() - interval '3 minutes'`.execute(t.app.database.db)
      assert.deepEqual(await t.json(200, { method: 'POST', url: `${CLOCK}/advance`, body: { to: START } }), {
        object: 'test_clock',
        now: START,
        offset_seconds: 0,
        status: 'ready',
        advancing_to: null,
      })
    } finally {
      await sql`UPDATE test_clock SET status = 'ready', advancing_to = NULL, heartbeat_at = NULL`.execute(
        t.app.database.db,
      )
    }
  })

  it('runs a trial conversion and three renewals in due order, each dated at its own time, then stands at `to`', async () => {
    // Started 2027-01-01 10:00 with a 30-day trial (TRIAL_DAYS): the trial ends 31 January;
    // then the term ends on the anchor day, or the month's last day (Chargebee's
    // billing-date rule, as in test/subscriptions.test.ts): 28 February, 31 March, 30 April.
    const c = await billedCompany(t)
    await setCard(t, c.id)
    const answer = await t.json(200, { method: 'POST', url: `${CLOCK}/advance`, body: { to: '2027-05-01T00:00:00Z' } })
    assert.deepEqual(answer, {
      object: 'test_clock',
      now: '2027-05-01T00:00:00.000Z',
      offset_seconds: unix('2027-05-01T00:00:00Z') - unix(START),
      status: 'ready',
      advancing_to: null,
    })
    const events = (await eventsOf(t, c.id)).map((e) => [e.type, e.to, e.actor, e.at])
    assert.deepEqual(events.slice(2), [
      ['activated', 'active', 'scheduler', '2027-01-31T10:00:00.000Z'],
      ['renewed', 'active', 'scheduler', '2027-02-28T10:00:00.000Z'],
      ['renewed', 'active', 'scheduler', '2027-03-31T10:00:00.000Z'],
      ['renewed', 'active', 'scheduler', '2027-04-30T10:00:00.000Z'],
    ])
    const status = await statusOf(t, c)
    assert.equal(status.status, 'active')
    assert.equal(status.current_term_end, unix('2027-05-31T10:00:00Z'))
    // Each job ran with its own due time as "now": the scheduler marks it done at that time.
    const jobs = await t.app.database.db
      .selectFrom('jobs')
      .select(['run_at', 'done_at'])
      .where('company_id', '=', c.id)
      .where('done_at', 'is not', null)
      .orderBy('run_at')
      .execute()
    assert.deepEqual(
      jobs.map((j) => j.done_at!.toISOString()),
      jobs.map((j) => j.run_at.toISOString()),
    )
    assert.equal(jobs.length, 4)
    assert.deepEqual(await t.json(200, { url: CLOCK }), answer)
  })

  it('delivers a scheduled communication and its daily repeats on the way, each at its send_at', async () => {
    const c = await company(t)
    const sub = await subsidiary(t, c.id)
    const person = await contract(t, c.id, { subsidiary_id: sub })
    const id = await createComm(t, c, {
      send_at: '2027-05-02T07:00:00Z',
      recurrent: 'daily',
      recurrent_until: '2027-05-04',
      destination_subsidiary_ids: [sub],
    })
    assert.deepEqual(await report(t, c, id), [])
    await t.json(200, { method: 'POST', url: `${CLOCK}/advance`, body: { to: '2027-05-03T12:00:00Z' } })
    const sendAts = ['2027-05-02T07:00:00.000Z', '2027-05-03T07:00:00.000Z']
    assert.deepEqual(
      (await report(t, c, id)).map((r: { send_at: string; delivered: number }) => [r.send_at, r.delivered]),
      sendAts.map((s) => [s, 1]),
    )
    assert.deepEqual(
      (await messagesOf(t, c, id, sendAts[1]!)).map((m: { contract_id: string }) => m.contract_id),
      [person],
    )
    await t.json(200, { method: 'POST', url: `${CLOCK}/advance`, body: { to: '2027-06-01T00:00:00Z' } })
    assert.equal((await report(t, c, id)).length, 3, 'the last one, on 4 May; none after recurrent_until')
  })

  it('expires a hosted page once the business time passes its hour (HOSTED_PAGE_TTL_SECONDS)', async () => {
    const c = await company(t)
    const page = new PageSession(t, await pathOf(t, 'payment', c.id, c.token))
    assertHtml(await page.get(), 200)
    const now = (await t.json(200, { url: CLOCK })).now
    await t.json(200, {
      method: 'POST',
      url: `${CLOCK}/advance`,
      body: { to: new Date(Date.parse(now) + 3_599_000).toISOString() },
    })
    assertHtml(await page.get(), 200)
    await t.json(200, {
      method: 'POST',
      url: `${CLOCK}/advance`,
      body: { to: new Date(Date.parse(now) + 3_600_000).toISOString() },
    })
    const expired = await page.get()
    assertHtml(expired, 410)
    assert.match(expired.body, /expired/)
  })

  it('leaves tokens, and idempotency keys, on real time: both still hold after advancing a year', async () => {
    const c = await company(t)
    const key = randomUUID()
    const body = { name: 'Kept a real day' }
    const url = `/api/v1/companies/${c.id}/subsidiaries`
    const first = await t.call({ method: 'POST', url, token: c.token, body, headers: { 'idempotency-key': key } })
    assert.equal(first.statusCode, 202, first.body)
    const now = (await t.json(200, { url: CLOCK })).now
    const yearLater = new Date(Date.parse(now) + 366 * 86_400_000).toISOString()
    assert.equal(
      (await t.json(200, { method: 'POST', url: `${CLOCK}/advance`, body: { to: yearLater } })).now,
      yearLater,
    )
    // The tokens minted before the advance, by the platform and by the company.
    assert.equal((await t.json(200, { url: CLOCK })).now, yearLater)
    await t.json(200, { url: `/api/v1/companies/${c.id}`, token: c.token })
    const replay = await t.call({ method: 'POST', url, token: c.token, body, headers: { 'idempotency-key': key } })
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.equal(replay.headers.location, first.headers.location)
    // A token minted now is valid too: issued at real time, not a year ahead.
    const fresh = await t.tokenFor(c.client.client_id, c.client.client_secret)
    await t.json(200, { url: `/api/v1/companies/${c.id}`, token: fresh })
  })

  it(
    'is shared by every instance on the database: another one sees the advance at once',
    postgresOnly(engine),
    async () => {
      const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!
        .name
      const database = await createDatabase({
        databaseUrl: withDatabase(process.env.TEST_DATABASE_URL!, name),
        poolSize: 2,
      })
      const config = loadConfig(
        {},
        { LOG_LEVEL: 'silent', SCHEDULER_ENABLED: false, RATE_LIMIT_MAX: 0, TEST_CLOCK_ENABLED: true },
      )
      const other = await buildApp({ config, database, clock: t.clock, realClock: t.realClock, logger: false })
      await other.ready()
      try {
        const onOther = async () =>
          (await other.inject({ url: CLOCK, headers: { authorization: `Bearer ${t.platformToken}` } })).json()
        assert.deepEqual(await onOther(), await t.json(200, { url: CLOCK }), 'the same business time from the start')
        const to = new Date(Date.parse((await onOther()).now) + 40 * 86_400_000).toISOString()
        await t.json(200, { method: 'POST', url: `${CLOCK}/advance`, body: { to } })
        assert.equal((await eventually(onOther, (b) => b.now === to)).now, to)
        // And the other way round: an advance on the other instance moves this one.
        const further = new Date(Date.parse(to) + 86_400_000).toISOString()
        const res = await other.inject({
          method: 'POST',
          url: `${CLOCK}/advance`,
          payload: { to: further },
          headers: { authorization: `Bearer ${t.platformToken}` },
        })
        assert.equal(res.statusCode, 200, res.body)
        assert.equal(
          (
            await eventually(
              () => t.json(200, { url: CLOCK }),
              (b) => b.now === further,
            )
          ).now,
          further,
        )
      } finally {
        await other.close()
        await database.close()
      }
    },
  )

  it('answers an advance sent with an Idempotency-Key, which it does not take: advancing again to `to` is a no-op', {
    timeout: 60_000,
  }, async () => {
    // A keyed request runs in its own transaction; the advance's jobs commit on their own, so a key
    // held on the one PGlite session would wait forever.
    const now = (await t.json(200, { url: CLOCK })).now as string
    const to = new Date(Date.parse(now) + 3_600_000).toISOString()
    const request = {
      method: 'POST' as const,
      url: `${CLOCK}/advance`,
      body: { to },
      headers: { 'idempotency-key': randomUUID() },
    }
    const first = await t.json(200, request)
    assert.equal(first.now, to)
    assert.deepEqual(await t.json(200, request), first, 'the same advance again changes nothing')
    const doc = await t.json(200, { url: '/openapi.json', token: null })
    const header = (doc.paths[`${CLOCK}/advance`].post.parameters ?? []).map((p: { name: string }) => p.name)
    assert.ok(!header.includes('Idempotency-Key'), 'the key is not offered')
  })
})
