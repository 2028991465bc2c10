import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import net from 'node:net'
import pg from 'pg'
import { sql } from 'kysely'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, locationId, uniq, type TestApp } from './helpers/app.ts'
import { withDatabase } from './helpers/databases.ts'
import { company, type CompanyFixture } from './helpers/factories.ts'
import { postgresOnly } from './helpers/requires.ts'
import { loadConfig } from '../src/config.ts'
import { onEachEngine, forEachEngine } from './helpers/engine-suites.ts'

describe('configuration', () => {
  it('reads the environment once, converting text, and refuses a bad setting with a sentence naming it', () => {
    const config = loadConfig({ PORT: '9090', SCHEDULER_ENABLED: 'false', RATE_LIMIT_MAX: '5', UNRELATED: 'x' })
    assert.equal(config.PORT, 9090)
    assert.equal(config.SCHEDULER_ENABLED, false)
    assert.equal(config.RATE_LIMIT_MAX, 5)
    assert.equal(config.BODY_LIMIT_BYTES, 1024 * 1024)
    assert.equal(config.TOKEN_TTL_SECONDS, 3600)
    assert.ok(Object.isFrozen(config))
    assert.throws(() => loadConfig({ PORT: 'abc' }), /^Error: Invalid configuration: PORT must be integer$/)
    assert.throws(
      () => loadConfig({ LOG_LEVEL: 'loud' }),
      /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/,
    )
    assert.throws(() => loadConfig({ SCHEDULER_ENABLED: 'nope' }), /SCHEDULER_ENABLED/)
    assert.throws(() => loadConfig({ ADMIN_CLIENT_ID: 'admin', ADMIN_CLIENT_SECRET: 'short' }), /ADMIN_CLIENT_SECRET/)
    assert.throws(
      () => loadConfig({ ADMIN_CLIENT_ID: 'admin' }),
      /ADMIN_CLIENT_ID and ADMIN_CLIENT_SECRET must be set together/,
    )
  })
})

/**
 * Every error answer is `{errors, code}` and nothing else, but for `details` on a validation
 * error naming fields: each `{field, message}`, its sentence naming its field, the first the same
 * as `errors`.
 */
function assertError(res: LightMyRequestResponse, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const body = res.json()
  const { details, ...rest } = body
  assert.deepEqual(Object.keys(rest).sort(), ['code', 'errors'], res.body)
  if (details !== undefined) {
    assert.equal(code, 'validation_failed', res.body)
    assert.ok(Array.isArray(details) && details.length > 0 && details.length <= 100, res.body)
    assert.equal(details[0].message, body.errors)
    for (const detail of details) {
      assert.deepEqual(Object.keys(detail).sort(), ['field', 'message'], res.body)
      assert.ok(detail.message.startsWith(detail.field), res.body)
    }
  }
  assert.equal(body.code, code)
  assert.equal(typeof body.errors, 'string')
  assert.ok(body.errors.length > 0)
  return body.errors as string
}

onEachEngine('http behaviour', (t) => {
  let c: CompanyFixture
  before(async () => {
    c = await company(t)
  })
  const subsidiaries = () => `/api/v1/companies/${c.id}/subsidiaries`

  it('answers errors as {errors, code} with the status of their kind', async () => {
    assertError(await t.call({ url: '/api/v1/nowhere' }), 404, 'not_found')
    // A path the service has, with a method it lacks (test/method-not-allowed.test.ts walks every path).
    const wrongMethod = await t.call({ method: 'DELETE', url: `/api/v1/companies/${c.id}` })
    assertError(wrongMethod, 405, 'method_not_allowed')
    assert.equal(wrongMethod.headers.allow, 'GET, HEAD, PUT, PATCH')
    assertError(await t.call({ url: `/api/v1/companies/${randomUUID()}` }), 404, 'not_found')
    assertError(await t.call({ url: `/api/v1/companies/${c.id}`, token: null }), 401, 'unauthorized')
    assertError(
      await t.call({
        method: 'POST',
        url: '/api/v1/subscription/addons',
        token: c.token,
        body: { name: 'x', price: 1, period_unit: 'month' },
      }),
      403,
      'forbidden',
    )
    assertError(await t.call({ url: '/api/v1/companies/not-a-uuid' }), 400, 'validation_failed')
    assertError(
      await t.call({ url: '/api/v1/subscription/products', query: { visible: 'maybe' }, token: null }),
      400,
      'validation_failed',
    )
    // Refused by the router itself, before any route: the same body, and the request id.
    const badUrl = await t.call({
      url: '/api/v1/subscription/plans/%E0%A4%A',
      token: null,
      headers: { 'x-request-id': 'bad-url' },
    })
    assertError(badUrl, 400, 'validation_failed')
    assert.equal(badUrl.headers['x-request-id'], 'bad-url')
    assertError(
      await t.call({ url: `/api/v1/subscription/plans/by_sku/${'x'.repeat(300)}`, token: null }),
      414,
      'validation_failed',
    )
  })

  it('refuses unknown body fields and wrong types, naming the field, and stores nothing', async () => {
    const before = (await t.json(200, { url: subsidiaries(), token: c.token })).length
    const unknown = assertError(
      await t.call({ method: 'POST', url: subsidiaries(), token: c.token, body: { name: 'X', color: 'red' } }),
      400,
      'validation_failed',
    )
    assert.equal(unknown, 'body/color is not a known field')
    const typed = assertError(
      await t.call({ method: 'POST', url: subsidiaries(), token: c.token, body: { name: 123 } }),
      400,
      'validation_failed',
    )
    assert.equal(typed, 'body/name must be string')
    const missing = assertError(
      await t.call({ method: 'POST', url: subsidiaries(), token: c.token, body: {} }),
      400,
      'validation_failed',
    )
    assert.equal(missing, 'body/name is required')
    const notObject = assertError(
      await t.call({ method: 'POST', url: subsidiaries(), token: c.token, body: [] }),
      400,
      'validation_failed',
    )
    assert.match(notObject, /^body /)
    assertError(
      await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: 'null',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'validation_failed',
    )
    assert.equal((await t.json(200, { url: subsidiaries(), token: c.token })).length, before)
  })

  it('refuses a body over the limit (413), a body that is not JSON (415) and broken JSON (400)', async () => {
    const big = { name: 'x'.repeat(1024 * 1024 + 10) }
    assertError(
      await t.call({ method: 'POST', url: subsidiaries(), token: c.token, body: big }),
      413,
      'payload_too_large',
    )
    assertError(
      await t.call({
        method: 'POST',
        url: '/oauth/token',
        token: null,
        body: `grant_type=${'x'.repeat(1024 * 1024 + 10)}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      413,
      'payload_too_large',
    )
    assertError(
      await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: 'name=X',
        headers: { 'content-type': 'text/plain' },
      }),
      415,
      'unsupported_media_type',
    )
    assertError(
      await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: 'name=X',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'unsupported_media_type',
    )
    assertError(
      await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: '{"name": "X",',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'validation_failed',
    )
    assertError(
      await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: '',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'validation_failed',
    )
  })

  it('accepts a trailing slash on every route', async () => {
    await t.json(200, { url: '/api/v1/subscription/plans/', token: null })
    await t.json(200, { url: `/api/v1/companies/${c.id}/`, token: c.token })
    await t.json(200, { url: `${subsidiaries()}/`, token: c.token })
    const res = await t.call({ method: 'POST', url: `${subsidiaries()}/`, token: c.token, body: { name: 'Slash' } })
    assert.equal(res.statusCode, 202)
    await t.json(200, { url: String(res.headers.location), token: c.token })
    await t.json(200, { url: '/health/' })
  })

  it('sets a Location that leads to the new resource on every creation', async () => {
    const creations: Array<[string, unknown, string?]> = [
      [
        '/api/v1/subscription/plans',
        { plan: { sku: uniq('p'), name: 'P', price: 1, plan_family: 'f', period_unit: 'month', features: [] } },
      ],
      ['/api/v1/subscription/addons', { name: 'A', price: 1, period_unit: 'month' }],
      ['/api/v1/subscription/coupons', { code: uniq('C'), name: 'C', discount_type: 'percentage', discount_value: 5 }],
      [subsidiaries(), { name: 'S' }, c.token],
      [`/api/v1/companies/${c.id}/contracts`, { first_name: 'A', last_name: 'B' }, c.token],
      [`/api/v1/companies/${c.id}/clients`, { name: 'K', scopes: ['read:team'] }, c.token],
    ]
    for (const [url, body, token] of creations) {
      const res = await t.call({ method: 'POST', url, body, token })
      assert.ok(res.statusCode === 202 || res.statusCode === 201, `${url}: ${res.body}`)
      const location = String(res.headers.location)
      assert.ok(location.startsWith(`${url}/`), `${url} -> ${location}`)
      await t.json(200, { url: location, token })
    }
  })

  it('echoes a sane X-Request-Id and makes one otherwise', async () => {
    const given = await t.call({ url: '/health', headers: { 'x-request-id': 'req-123.abc' } })
    assert.equal(given.headers['x-request-id'], 'req-123.abc')
    const made = await t.call({ url: '/health' })
    assert.match(String(made.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    const insane = await t.call({ url: '/health', headers: { 'x-request-id': 'bad id\twith spaces' } })
    assert.match(String(insane.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    const onError = await t.call({ url: '/api/v1/nowhere', headers: { 'x-request-id': 'err-1' } })
    assert.equal(onError.headers['x-request-id'], 'err-1')
  })

  describe('Idempotency-Key', () => {
    it('replays the first answer for the same key and body, and refuses another body with 409', async () => {
      const key = randomUUID()
      const first = await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: { name: 'Once' },
        headers: { 'idempotency-key': key },
      })
      assert.equal(first.statusCode, 202)
      assert.equal(first.headers['idempotent-replayed'], undefined)
      const again = await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: { name: 'Once' },
        headers: { 'idempotency-key': key },
      })
      assert.equal(again.statusCode, 202)
      assert.equal(again.headers.location, first.headers.location)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      const other = await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: { name: 'Twice' },
        headers: { 'idempotency-key': key },
      })
      assertError(other, 409, 'conflict')
      const named = (await t.json(200, { url: subsidiaries(), token: c.token })).filter(
        (s: { name: string }) => s.name === 'Once' || s.name === 'Twice',
      )
      assert.deepEqual(
        named.map((s: { id: string }) => s.id),
        [locationId(first)],
      )
      // The key belongs to its client: another client's same key is its own.
      const platform = await t.call({
        method: 'POST',
        url: subsidiaries(),
        body: { name: 'Once' },
        headers: { 'idempotency-key': key },
      })
      assert.equal(platform.statusCode, 202)
      assert.notEqual(platform.headers.location, first.headers.location)
      for (const refused of ['k'.repeat(256), '']) {
        const res = await t.call({
          method: 'POST',
          url: subsidiaries(),
          token: c.token,
          body: { name: 'X' },
          headers: { 'idempotency-key': refused },
        })
        assertError(res, 400, 'validation_failed')
        assert.match(res.json().errors, /idempotency-key/i)
      }
      const longest = await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: { name: 'X' },
        headers: { 'idempotency-key': `${randomUUID()}${'k'.repeat(219)}` },
      })
      assert.equal(longest.statusCode, 202, longest.body)
    })

    it("creates one contract and one holiday for a retried key (their insertions compiled once run in the key's transaction)", async () => {
      for (const [path, body, named] of [
        [
          'contracts',
          { first_name: 'Ida', last_name: `Keyed ${randomUUID()}` },
          (x: { last_name?: string }, b: { last_name?: string }) => x.last_name === b.last_name,
        ],
        [
          'holidays',
          { name: `Keyed ${randomUUID()}`, day: '2027-03-04' },
          (x: { name?: string }, b: { name?: string }) => x.name === b.name,
        ],
      ] as const) {
        const url = `/api/v1/companies/${c.id}/${path}`
        const key = randomUUID()
        const first = await t.call({ method: 'POST', url, token: c.token, body, headers: { 'idempotency-key': key } })
        assert.equal(first.statusCode, 202, first.body)
        const again = await t.call({ method: 'POST', url, token: c.token, body, headers: { 'idempotency-key': key } })
        assert.equal(again.statusCode, 202)
        assert.equal(again.headers['idempotent-replayed'], 'true')
        assert.equal(again.headers.location, first.headers.location)
        const listed = (await t.json(200, { url, token: c.token })).filter((x: Record<string, string>) =>
          named(x, body as Record<string, string>),
        )
        assert.deepEqual(
          listed.map((x: { id: string }) => x.id),
          [locationId(first)],
          path,
        )
      }
    })

    it('replays refusals too, and keeps no answer of a request that was not valid', async () => {
      const key = randomUUID()
      const refused = await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: { name: 'X', country: 'XX' },
        headers: { 'idempotency-key': key },
      })
      assert.equal(refused.statusCode, 400)
      const replay = await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: { name: 'X', country: 'XX' },
        headers: { 'idempotency-key': key },
      })
      assertError(replay, 400, 'validation_failed')
      assert.equal(replay.headers['idempotent-replayed'], 'true')
    })

    it('never keeps a secret with the key: a retry answers the same client with client_secret null, and creates no second one', async () => {
      const key = randomUUID()
      const url = `/api/v1/companies/${c.id}/clients`
      const first = await t.call({
        method: 'POST',
        url,
        token: c.token,
        body: { name: 'once', scopes: ['read:team'] },
        headers: { 'idempotency-key': key },
      })
      assert.equal(first.statusCode, 201)
      const secret = first.json().client_secret
      const rows = await t.app.database.db.selectFrom('idempotency_keys').selectAll().execute()
      assert.ok(!JSON.stringify(rows).includes(secret), 'the secret is not stored with the key')
      const retry = await t.call({
        method: 'POST',
        url,
        token: c.token,
        body: { name: 'once', scopes: ['read:team'] },
        headers: { 'idempotency-key': key },
      })
      assert.equal(retry.statusCode, 201, retry.body)
      assert.deepEqual(retry.json(), { ...first.json(), client_secret: null })
      assert.equal(retry.headers['idempotent-replayed'], 'true')
      const clients = await t.json(200, { url, token: c.token })
      assert.equal(clients.filter((k: { name: string }) => k.name === 'once').length, 1)
      // Tokens are not resources: the token endpoint ignores the header and keeps nothing.
      const body = { grant_type: 'client_credentials', ...c.client }
      const tokenKey = randomUUID()
      const one = await t.call({
        method: 'POST',
        url: '/oauth/token',
        token: null,
        body,
        headers: { 'idempotency-key': tokenKey },
      })
      const two = await t.call({
        method: 'POST',
        url: '/oauth/token',
        token: null,
        body,
        headers: { 'idempotency-key': tokenKey },
      })
      assert.equal(one.statusCode, 200)
      assert.equal(two.statusCode, 200)
      const kept = await t.app.database.db
        .selectFrom('idempotency_keys')
        .select('key')
        .where('key', '=', tokenKey)
        .execute()
      assert.deepEqual(kept, [])
    })

    it('keeps a key for 24 hours of real time, then forgets it', async () => {
      const key = randomUUID()
      const first = await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: { name: 'Day one' },
        headers: { 'idempotency-key': key },
      })
      assert.equal(first.statusCode, 202)
      const start = t.realClock.now()
      try {
        t.realClock.advance(23 * 3_600_000)
        let token = await t.tokenFor(c.client.client_id, c.client.client_secret)
        assertError(
          await t.call({
            method: 'POST',
            url: subsidiaries(),
            token,
            body: { name: 'Day two' },
            headers: { 'idempotency-key': key },
          }),
          409,
          'conflict',
        )
        t.realClock.advance(2 * 3_600_000)
        // The hourly purge (a job due by real time) deletes what is past its 24 hours.
        await t.app.services.scheduler.runDue()
        const old = await t.app.database.db
          .selectFrom('idempotency_keys')
          .select('key')
          .where('created_at', '<', new Date(t.realClock.now().getTime() - 24 * 3_600_000))
          .execute()
        assert.deepEqual(old, [])
        token = await t.tokenFor(c.client.client_id, c.client.client_secret)
        const again = await t.call({
          method: 'POST',
          url: subsidiaries(),
          token,
          body: { name: 'Day two' },
          headers: { 'idempotency-key': key },
        })
        assert.equal(again.statusCode, 202)
        assert.notEqual(again.headers.location, first.headers.location)
      } finally {
        t.realClock.set(start)
      }
    })

    it('compares bodies as JSON values: another key order or white space replays, another value is a 409', async () => {
      const key = randomUUID()
      const name = uniq('Ordered')
      const send = (payload: string) =>
        t.call({
          method: 'POST',
          url: subsidiaries(),
          token: c.token,
          body: payload,
          headers: { 'idempotency-key': key, 'content-type': 'application/json' },
        })
      const first = await send(`{"name":"${name}","city":"Torino","country":"IT"}`)
      assert.equal(first.statusCode, 202, first.body)
      const reordered = await send(`{ "country": "IT",\n  "city": "Torino", "name": "${name}" }`)
      assert.equal(reordered.statusCode, 202, reordered.body)
      assert.equal(reordered.headers['idempotent-replayed'], 'true')
      assert.equal(reordered.headers.location, first.headers.location)
      assertError(await send(`{"country":"IT","city":"Milano","name":"${name}"}`), 409, 'conflict')
      const stored = (await t.json(200, { url: subsidiaries(), token: c.token })).filter(
        (s: { name: string }) => s.name === name,
      )
      assert.equal(stored.length, 1)
    })

    it('replays a PUT: the same key and body answers the first answer again and runs nothing', async () => {
      const key = randomUUID()
      const teams = `/api/v1/companies/${c.id}/teams`
      const created = await t.call({
        method: 'POST',
        url: teams,
        token: c.token,
        body: { name: 'Put me', code: uniq('PU'), team_leader_ids: [] },
      })
      assert.equal(created.statusCode, 202, created.body)
      const team = `${teams}/${locationId(created)}`
      const code = (await t.json<{ code: string }>(200, { url: team, token: c.token })).code
      const first = await t.call({
        method: 'PUT',
        url: team,
        token: c.token,
        body: { name: 'Renamed once', code },
        headers: { 'idempotency-key': key },
      })
      assert.equal(first.statusCode, 202, first.body)
      assert.equal(first.headers['idempotent-replayed'], undefined)
      // Someone renames it meanwhile: a replay must not put the first name back.
      await t.json(202, { method: 'PUT', url: team, token: c.token, body: { name: 'Renamed since', code } })
      const replay = await t.call({
        method: 'PUT',
        url: team,
        token: c.token,
        body: { code, name: 'Renamed once' },
        headers: { 'idempotency-key': key },
      })
      assert.equal(replay.statusCode, first.statusCode)
      assert.equal(replay.body, first.body)
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      assert.equal((await t.json<{ name: string }>(200, { url: team, token: c.token })).name, 'Renamed since')
      assertError(
        await t.call({
          method: 'PUT',
          url: team,
          token: c.token,
          body: { name: 'Renamed twice', code },
          headers: { 'idempotency-key': key },
        }),
        409,
        'conflict',
      )
    })

    it('frees a key whose request never finished 60 s after it was claimed: 409 until then, then the retry runs once', async () => {
      const name = uniq('Abandoned')
      const body = { name }
      // What a request's claim looks like: the key of a request that ran, with the same body.
      const model = randomUUID()
      assert.equal(
        (
          await t.call({
            method: 'POST',
            url: subsidiaries(),
            token: c.token,
            body,
            headers: { 'idempotency-key': model },
          })
        ).statusCode,
        202,
      )
      const claim = await t.app.database.db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('key', '=', model)
        .executeTakeFirstOrThrow()
      // The claim an instance left when it died mid-request: no answer, ever.
      const key = randomUUID()
      const start = t.realClock.now()
      await t.app.database.db
        .insertInto('idempotency_keys')
        .values({ owner: claim.owner, key, request_hash: claim.request_hash, created_at: start })
        .execute()
      try {
        t.realClock.advance(59_000)
        const early = await t.call({
          method: 'POST',
          url: subsidiaries(),
          token: c.token,
          body,
          headers: { 'idempotency-key': key },
        })
        assert.match(assertError(early, 409, 'conflict'), /still running/)
        t.realClock.advance(2_000)
        const retry = await t.call({
          method: 'POST',
          url: subsidiaries(),
          token: c.token,
          body,
          headers: { 'idempotency-key': key },
        })
        assert.equal(retry.statusCode, 202, retry.body)
        assert.equal(retry.headers['idempotent-replayed'], undefined)
        const again = await t.call({
          method: 'POST',
          url: subsidiaries(),
          token: c.token,
          body,
          headers: { 'idempotency-key': key },
        })
        assert.equal(again.headers['idempotent-replayed'], 'true')
        assert.equal(again.headers.location, retry.headers.location)
        const stored = (await t.json(200, { url: subsidiaries(), token: c.token })).filter(
          (s: { name: string }) => s.name === name,
        )
        assert.equal(stored.length, 2, "the model request's and the retry's")
      } finally {
        t.realClock.set(start)
      }
    })

    it("commits a request's work with its answer: when the answer cannot be kept, nothing of the work stays, and the retry runs once", async () => {
      const key = randomUUID()
      const name = uniq('Atomic')
      // The answer's write fails, as if the instance died between the work and the answer.
      await sql`CREATE FUNCTION refuse_answer() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the instance died'; END $$`.execute(
        t.app.database.db,
      )
      await sql
        .raw(
          `CREATE TRIGGER refuse_answer BEFORE UPDATE ON idempotency_keys FOR EACH ROW WHEN (NEW.key = '${key}' AND NEW.status_code IS NOT NULL) EXECUTE FUNCTION refuse_answer()`,
        )
        .execute(t.app.database.db)
      try {
        const first = await t.call({
          method: 'POST',
          url: subsidiaries(),
          token: c.token,
          body: { name },
          headers: { 'idempotency-key': key },
        })
        assert.equal(first.statusCode, 500, first.body)
      } finally {
        await sql`DROP TRIGGER refuse_answer ON idempotency_keys`.execute(t.app.database.db)
        await sql`DROP FUNCTION refuse_answer()`.execute(t.app.database.db)
      }
      const named = () =>
        t
          .json<Array<{ name: string }>>(200, { url: subsidiaries(), token: c.token })
          .then((list) => list.filter((s) => s.name === name))
      assert.equal((await named()).length, 0, 'the work went with the answer')
      const retry = await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: { name },
        headers: { 'idempotency-key': key },
      })
      assert.equal(retry.statusCode, 202, retry.body)
      assert.equal((await named()).length, 1)
    })

    it('creates exactly one resource for 20 concurrent requests with one key', async () => {
      const key = randomUUID()
      const name = uniq('Concurrent')
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          t.call({
            method: 'POST',
            url: subsidiaries(),
            token: c.token,
            body: { name },
            headers: { 'idempotency-key': key },
          }),
        ),
      )
      for (const res of answers) assert.equal(res.statusCode, 202, res.body)
      assert.equal(new Set(answers.map((r) => r.headers.location)).size, 1)
      assert.equal(answers.filter((r) => r.headers['idempotent-replayed'] === undefined).length, 1)
      const stored = (await t.json(200, { url: subsidiaries(), token: c.token })).filter(
        (s: { name: string }) => s.name === name,
      )
      assert.equal(stored.length, 1)
    })
  })

  it('answers /health, /ready and /metrics without a token', async () => {
    assert.deepEqual(await t.json(200, { url: '/health', token: null }), { status: 'ok' })
    assert.deepEqual(await t.json(200, { url: '/ready', token: null }), { status: 'ready' })
    await t.call({ url: `/api/v1/companies/${c.id}`, token: c.token })
    const metrics = await t.call({ url: '/metrics', token: null })
    assert.equal(metrics.statusCode, 200)
    assert.match(String(metrics.headers['content-type']), /^text\/plain/)
    assert.match(
      metrics.body,
      /http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/companies\/:company_id",status_code="200"\} \d+/,
    )
    assert.match(metrics.body, /process_cpu_user_seconds_total/)
    const docs = await t.call({ url: '/docs/', token: null })
    assert.equal(docs.statusCode, 200)
    assert.match(String(docs.headers['content-type']), /^text\/html/)
  })
})

onEachEngine('rate limit', { RATE_LIMIT_MAX: 3 }, (t) => {
  it('answers 429 with Retry-After and RateLimit-* headers past the limit, per client', async () => {
    // The platform token of buildTestApp was the first anonymous request of this address; this is the second.
    const secondToken = await t.tokenFor('test-admin', 'test-admin-secret-0123456789')
    for (let i = 0; i < 3; i++) {
      const res = await t.call({ url: '/api/v1/subscription/plans' })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['ratelimit-limit'], '3')
      assert.equal(res.headers['ratelimit-remaining'], String(2 - i))
      assert.ok(Number(res.headers['ratelimit-reset']) > 0)
    }
    const limited = await t.call({ url: '/api/v1/subscription/plans' })
    assertError(limited, 429, 'rate_limited')
    assert.ok(Number(limited.headers['retry-after']) >= 1)
    assert.equal(limited.headers['ratelimit-remaining'], '0')
    // Another token of the same client shares its budget.
    assertError(await t.call({ url: '/api/v1/subscription/plans', token: secondToken }), 429, 'rate_limited')
    // Anonymous callers are counted by address (third request), and so are invalid tokens:
    // made-up tokens do not buy a fresh budget each.
    assert.equal((await t.call({ url: '/api/v1/subscription/plans', token: null })).statusCode, 200)
    assertError(
      await t.call({ url: '/api/v1/subscription/plans', token: `made.up.${randomUUID()}` }),
      429,
      'rate_limited',
    )
    assertError(
      await t.call({ url: '/api/v1/subscription/plans', token: `made.up.${randomUUID()}` }),
      429,
      'rate_limited',
    )
    assertError(await t.call({ url: '/api/v1/subscription/plans', token: null }), 429, 'rate_limited')
    for (let i = 0; i < 5; i++) assert.equal((await t.call({ url: '/health' })).statusCode, 200)
    assert.equal((await t.call({ url: '/ready' })).statusCode, 200)
  })
})

onEachEngine('token checks', { RATE_LIMIT_MAX: 100 }, (t) => {
  it('verifies a token once per request, though both the rate limit and authentication need it', async () => {
    const keys = t.app.services.keys
    const verify = keys.verify
    const verified: string[] = []
    keys.verify = async (token: string) => {
      verified.push(token)
      return verify(token)
    }
    try {
      // A token that does not verify is never cached: each hook asking again would check its signature again.
      const made = `made.up.${randomUUID()}`
      assertError(await t.call({ url: `/api/v1/companies/${randomUUID()}`, token: made }), 401, 'unauthorized')
      assert.deepEqual(verified, [made])
      verified.length = 0
      assertError(
        await t.call({
          url: `/api/v1/companies/${randomUUID()}`,
          token: null,
          headers: { authorization: 'Basic abc' },
        }),
        401,
        'unauthorized',
      )
      assert.deepEqual(verified, [])
    } finally {
      keys.verify = verify
    }
  })
})

// PostgreSQL only: waiting on a lock held by another session needs a second session.
forEachEngine(
  () => 'Idempotency-Key on a small pool (PostgreSQL only)',
  (engine) => {
    let t: TestApp
    let c: CompanyFixture
    before(async () => {
      t = await buildTestApp(engine, { DB_POOL_SIZE: 3 })
      c = await company(t)
      await t.app.listen({ port: 0, host: '127.0.0.1' })
    })
    after(async () => {
      await t?.close()
    })
    const subsidiaries = () => `/api/v1/companies/${c.id}/subsidiaries`

    /** A connection to the test's database that the app's pool does not hand out. */
    async function session() {
      const { rows } = await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)
      const client = new pg.Client({ connectionString: withDatabase(process.env.TEST_DATABASE_URL!, rows[0]!.name) })
      await client.connect()
      return client
    }

    /** The owner and request hash the service gives `body` sent to subsidiaries() by c. */
    async function claimOf(body: unknown) {
      const model = randomUUID()
      assert.equal(
        (
          await t.call({
            method: 'POST',
            url: subsidiaries(),
            token: c.token,
            body,
            headers: { 'idempotency-key': model },
          })
        ).statusCode,
        202,
      )
      return t.app.database.db
        .selectFrom('idempotency_keys')
        .select(['owner', 'request_hash'])
        .where('key', '=', model)
        .executeTakeFirstOrThrow()
    }

    it('lets requests waiting on a running key hold no connection: others are answered meanwhile; then they replay, or one runs', {
      timeout: 60_000,
    }, async () => {
      for (const outcome of ['commit', 'rollback'] as const) {
        const body = { name: uniq(`Waiting ${outcome}`) }
        const claim = await claimOf(body)
        const key = randomUUID()
        // What a first request still running holds: its claim's row, in a transaction not yet ended.
        const first = await session()
        after(() => first.end().catch(() => {}))
        await first.query('BEGIN')
        await first.query(
          'INSERT INTO idempotency_keys (owner, key, request_hash, created_at) VALUES ($1, $2, $3, now())',
          [claim.owner, key, claim.request_hash],
        )
        let settled = 0
        const waiters = Array.from({ length: 5 }, () =>
          t
            .call({ method: 'POST', url: subsidiaries(), token: c.token, body, headers: { 'idempotency-key': key } })
            .finally(() => {
              settled++
            }),
        )
        await new Promise((resolve) => setTimeout(resolve, 300))
        const reads = await Promise.all(
          Array.from({ length: 6 }, () => t.call({ url: `/api/v1/companies/${c.id}`, token: c.token })),
        )
        for (const read of reads) assert.equal(read.statusCode, 200, read.body)
        assert.equal(settled, 0, 'the waiters still wait for the first request')
        if (outcome === 'commit') {
          await first.query(
            `UPDATE idempotency_keys SET status_code = 202, response_headers = '{"location":"/held"}' WHERE key = $1`,
            [key],
          )
          await first.query('COMMIT')
        } else {
          await first.query('ROLLBACK')
        }
        const answers = await Promise.all(waiters)
        for (const res of answers) assert.equal(res.statusCode, 202, res.body)
        const ran = answers.filter((r) => r.headers['idempotent-replayed'] === undefined)
        assert.equal(ran.length, outcome === 'commit' ? 0 : 1)
        if (outcome === 'commit') for (const res of answers) assert.equal(res.headers.location, '/held')
      }
    })

    it('rolls back a request whose client went away while its handler ran, and frees its key', {
      timeout: 60_000,
    }, async () => {
      const name = uniq('Gone')
      const key = randomUUID()
      const payload = JSON.stringify({ name })
      // The handler's insert waits on this lock, so the client can leave while the handler runs.
      const blocker = await session()
      after(() => blocker.end().catch(() => {}))
      await blocker.query('BEGIN')
      await blocker.query('LOCK TABLE subsidiaries IN EXCLUSIVE MODE')
      const { port } = t.app.server.address() as net.AddressInfo
      const socket = net.connect(port, '127.0.0.1')
      socket.on('error', () => {})
      await new Promise((resolve) => socket.once('connect', resolve))
      socket.write(
        `POST ${subsidiaries()} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${c.token}\r\nIdempotency-Key: ${key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`,
      )
      for (;;) {
        const { rows } = await blocker.query(
          `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'subsidiaries'::regclass`,
        )
        if (rows[0].n > 0) break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      socket.destroy()
      await new Promise((resolve) => setTimeout(resolve, 200))
      await blocker.query('COMMIT')
      const retry = await t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: { name },
        headers: { 'idempotency-key': key },
      })
      assert.equal(retry.statusCode, 202, retry.body)
      assert.equal(retry.headers['idempotent-replayed'], undefined, 'the abandoned answer was not kept')
      const stored = (await t.json(200, { url: subsidiaries(), token: c.token })).filter(
        (s: { name: string }) => s.name === name,
      )
      assert.equal(stored.length, 1, "the abandoned request's work was rolled back")
    })
    it("lets a keyed request's work wait on a lock as an unkeyed one would: the claim's short lock timeout ends with the claim", {
      timeout: 60_000,
    }, async () => {
      const name = uniq('Patient')
      const blocker = await session()
      after(() => blocker.end().catch(() => {}))
      await blocker.query('BEGIN')
      await blocker.query('LOCK TABLE subsidiaries IN EXCLUSIVE MODE')
      const pending = t.call({
        method: 'POST',
        url: subsidiaries(),
        token: c.token,
        body: { name },
        headers: { 'idempotency-key': randomUUID() },
      })
      for (;;) {
        const { rows } = await blocker.query(
          `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'subsidiaries'::regclass`,
        )
        if (rows[0].n > 0) break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      // Longer than one attempt at the claim may wait on a lock.
      await new Promise((resolve) => setTimeout(resolve, 300))
      await blocker.query('COMMIT')
      const res = await pending
      assert.equal(res.statusCode, 202, res.body)
    })
  },
  (engine) => postgresOnly(engine),
)

onEachEngine('database down', (t) => {
  let c: CompanyFixture
  before(async () => {
    c = await company(t)
  })

  it('answers 503 unavailable with Retry-After, never 500, while the database is unavailable', async () => {
    await t.json(200, { url: `/api/v1/companies/${c.id}`, token: c.token })
    await t.app.database.close()
    const calls = [
      { url: `/api/v1/companies/${c.id}`, token: c.token },
      { url: '/api/v1/subscription/plans', token: null },
      { method: 'POST' as const, url: `/api/v1/companies/${c.id}/subsidiaries`, token: c.token, body: { name: 'X' } },
      {
        method: 'POST' as const,
        url: `/api/v1/companies/${c.id}/subsidiaries`,
        token: c.token,
        body: { name: 'X' },
        headers: { 'idempotency-key': randomUUID() },
      },
      {
        method: 'POST' as const,
        url: '/oauth/token',
        token: null,
        body: { grant_type: 'client_credentials', ...c.client },
      },
      { url: '/ready', token: null },
    ]
    for (const call of calls) {
      const res = await t.call(call)
      assert.equal(res.statusCode, 503, `${call.method ?? 'GET'} ${call.url}: ${res.body}`)
      assert.ok(Number(res.headers['retry-after']) >= 1, call.url)
      assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'errors'])
      assert.equal(res.json().code, 'unavailable', `${call.method ?? 'GET'} ${call.url}`)
      assert.doesNotMatch(res.body, /pool|PGlite|closed|destroy/i, 'no internals leak')
    }
    assert.equal((await t.call({ url: '/health', token: null })).statusCode, 200)
  })
})
