import { it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import { ADMIN } from './helpers/app.ts'
import { withDatabase } from './helpers/databases.ts'
import { company } from './helpers/factories.ts'
import { ALL_SCOPE_STRINGS } from '../src/modules/oauth/scopes.ts'
import { hashChosenSecret, MAX_WAITING_HASHES } from '../src/modules/oauth/oauth.secrets.ts'
import { buildApp, type BuiltApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { createDatabase, type Database } from '../src/db/database.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Guessing client secrets (docs/adr/0005-guessing-coupons-and-secrets.md): after 10 wrong secrets within a
 * minute for one client_id, that id answers 429 with Retry-After for a minute whatever the
 * secret; guesses at other clients never make the configured platform client's right secret
 * wait for a hashing slot or fail. Time is the app's real-time clock, which the tests move.
 */

const TOKEN = '/oauth/token'
const MINUTE = 60_000

onEachEngine('guessing client secrets', (t) => {
  const token = (client_id: string, client_secret: string) =>
    t.call({
      method: 'POST',
      url: TOKEN,
      token: null,
      body: { grant_type: 'client_credentials', client_id, client_secret },
    })

  async function wrong(clientId: string, times: number) {
    for (let i = 0; i < times; i++) {
      const res = await token(clientId, `wrong-${i}-${randomUUID()}`)
      assert.equal(res.statusCode, 401, `wrong secret ${i + 1}: ${res.body}`)
      assert.equal(res.json().error, 'invalid_client')
    }
  }

  function assertLocked(res: LightMyRequestResponse, retryAfter: number) {
    assert.equal(res.statusCode, 429, res.body)
    assert.equal(res.headers['retry-after'], String(retryAfter))
    assert.equal(res.json().code, 'rate_limited')
    assert.match(res.json().errors, /wrong secrets for this client_id/)
    assert.equal(res.headers['cache-control'], 'no-store')
  }

  /**
   * Another instance of the service on the test app's database and clocks: on PostgreSQL with a
   * pool of its own, as a second process has; PGlite is one process's database, so it shares it.
   */
  async function instanceOnSameDatabase(): Promise<{ app: BuiltApp; close(): Promise<void> }> {
    let database: Database | undefined
    if (t.engine === 'postgres') {
      const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!
        .name
      database = await createDatabase({ databaseUrl: withDatabase(process.env.TEST_DATABASE_URL!, name), poolSize: 2 })
    }
    const config = loadConfig({}, { LOG_LEVEL: 'silent', SCHEDULER_ENABLED: false, RATE_LIMIT_MAX: 0 })
    const app = await buildApp({
      config,
      database: database ?? t.app.database,
      clock: t.clock,
      realClock: t.realClock,
      logger: false,
    })
    await app.ready()
    let closed: Promise<void> | undefined
    return { app, close: () => (closed ??= app.close().then(() => database?.close())) }
  }

  const tokenOn = (app: BuiltApp, client_id: string, client_secret: string) =>
    app.inject({ method: 'POST', url: TOKEN, payload: { grant_type: 'client_credentials', client_id, client_secret } })

  /** A platform client that no start-up configured: its secret is checked with scrypt, as a guess at it is. */
  async function unconfiguredPlatformClient(secret: string) {
    const id = `platform-${randomUUID().slice(0, 8)}`
    await t.app.database.db
      .insertInto('oauth_clients')
      .values({
        client_id: id,
        secret_hash: await hashChosenSecret(secret),
        name: 'other',
        company_id: null,
        scopes: [...ALL_SCOPE_STRINGS],
      })
      .execute()
    return id
  }

  it('after 10 wrong secrets in a minute a client id answers 429 + Retry-After for a minute, even to its right secret; other ids are unaffected', async () => {
    const a = await company(t)
    const b = await company(t)
    await wrong(a.client.client_id, 9)
    assert.equal(
      (await token(a.client.client_id, a.client.client_secret)).statusCode,
      200,
      'nine wrong secrets lock nothing',
    )
    await wrong(a.client.client_id, 1)

    assertLocked(await token(a.client.client_id, a.client.client_secret), 60)
    assertLocked(await token(a.client.client_id, 'yet-another-guess'), 60)
    // HTTP Basic names the same client id.
    const basic = await t.call({
      method: 'POST',
      url: TOKEN,
      token: null,
      headers: {
        authorization: `Basic ${Buffer.from(`${a.client.client_id}:${a.client.client_secret}`).toString('base64')}`,
      },
      body: { grant_type: 'client_credentials' },
    })
    assertLocked(basic, 60)
    assert.equal(
      (await token(b.client.client_id, b.client.client_secret)).statusCode,
      200,
      'another client id is not locked',
    )
    assert.equal((await token(ADMIN.client_id, ADMIN.client_secret)).statusCode, 200)
    // Tokens issued before the lock still work: the lock is on getting new ones.
    assert.equal((await t.call({ url: `/api/v1/companies/${a.id}`, token: a.token })).statusCode, 200)

    t.realClock.advance(MINUTE / 2)
    assertLocked(await token(a.client.client_id, a.client.client_secret), 30)
    t.realClock.advance(MINUTE / 2 - 1000)
    assertLocked(await token(a.client.client_id, a.client.client_secret), 1)
    t.realClock.advance(1000)
    assert.equal((await token(a.client.client_id, a.client.client_secret)).statusCode, 200, 'the minute has passed')
    await wrong(a.client.client_id, 1)
    assert.equal(
      (await token(a.client.client_id, a.client.client_secret)).statusCode,
      200,
      'the count starts again after a lock',
    )
  })

  it('counts wrong secrets across the instances on one database, exactly, and keeps the lock over a restart', async (ctx) => {
    const a = await company(t)
    const id = a.client.client_id
    const other = await instanceOnSameDatabase()
    ctx.after(() => other.close())
    await wrong(id, 5)
    for (let i = 0; i < 4; i++) assert.equal((await tokenOn(other.app, id, `wrong-${i}`)).statusCode, 401)
    assert.equal(
      (await tokenOn(other.app, id, a.client.client_secret)).statusCode,
      200,
      'nine wrong secrets between the two lock nothing',
    )
    assert.equal((await tokenOn(other.app, id, 'the-tenth')).statusCode, 401)

    assertLocked(await token(id, a.client.client_secret), 60)
    assertLocked(await tokenOn(other.app, id, a.client.client_secret), 60)
    assertLocked(await tokenOn(other.app, id, 'an-eleventh'), 60)

    // A restart: a new instance on the same database, whose memory holds nothing.
    await other.close()
    t.realClock.advance(MINUTE / 2)
    const restarted = await instanceOnSameDatabase()
    ctx.after(() => restarted.close())
    assertLocked(await tokenOn(restarted.app, id, a.client.client_secret), 30)
    t.realClock.advance(MINUTE / 2)
    assert.equal((await tokenOn(restarted.app, id, a.client.client_secret)).statusCode, 200, 'the minute has passed')
    assert.equal((await token(id, a.client.client_secret)).statusCode, 200)
  })

  it('counts the wrong secrets of the last minute only', async () => {
    const a = await company(t)
    await wrong(a.client.client_id, 6)
    t.realClock.advance(MINUTE / 2)
    await wrong(a.client.client_id, 3)
    t.realClock.advance(MINUTE / 2)
    // The first six are a minute old: four more make nine within the minute.
    await wrong(a.client.client_id, 4)
    assert.equal((await token(a.client.client_id, a.client.client_secret)).statusCode, 200)
    await wrong(a.client.client_id, 3)
    assertLocked(await token(a.client.client_id, a.client.client_secret), 60)
  })

  it('locks a platform client, and an unknown client id, after the same 10 wrong secrets', async () => {
    const secret = 'another-chosen-secret-0123'
    const id = await unconfiguredPlatformClient(secret)
    await wrong(id, 9)
    // Verified once, its hash is remembered: the next guesses cost no scrypt, and lock it alike.
    assert.equal((await token(id, secret)).statusCode, 200)
    await wrong(id, 1)
    assertLocked(await token(id, secret), 60)

    const unknown = `nobody-${randomUUID()}`
    await wrong(unknown, 10)
    assertLocked(await token(unknown, 'anything'), 60)
    t.realClock.advance(MINUTE)
    assert.equal((await token(id, secret)).statusCode, 200)
    assert.equal((await token(unknown, 'anything')).statusCode, 401)
  })

  it('keeps the rows of made-up ids bounded: each wrong secret deletes rows whose window and lock are past', async () => {
    const db = t.app.database.db
    const stale = async () =>
      Number(
        (
          await db
            .selectFrom('client_secret_guesses')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('stale_at', '<=', t.realClock.now())
            .executeTakeFirstOrThrow()
        ).n,
      )
    const rowOf = async (id: string) =>
      db.selectFrom('client_secret_guesses').select('client_id').where('client_id', '=', id).executeTakeFirst()
    const counted = `nobody-${randomUUID()}`
    const locked = `nobody-${randomUUID()}`
    await wrong(counted, 1)
    await wrong(locked, 10)
    t.realClock.advance(MINUTE - 1000)
    const recent = `nobody-${randomUUID()}`
    await wrong(recent, 1)
    assert.ok(await rowOf(counted), 'a wrong secret within the minute is kept')
    assertLocked(await token(locked, 'anything'), 1)

    t.realClock.advance(1000)
    assert.ok((await stale()) >= 2)
    while ((await stale()) > 0) {
      const before = await stale()
      await wrong(`nobody-${randomUUID()}`, 1)
      assert.equal(await stale(), Math.max(0, before - 2), 'a wrong secret deletes two rows that are past')
    }
    assert.equal(await rowOf(counted), undefined)
    assert.equal(await rowOf(locked), undefined)
    assert.ok(await rowOf(recent), 'a row whose window still holds a wrong secret stays')
    assert.equal((await token(locked, 'anything')).statusCode, 401, 'its count starts again')
  })

  it('refuses bad input before counting: a request without a client id or secret counts for no one', async () => {
    const a = await company(t)
    for (let i = 0; i < 12; i++) {
      const res = await t.call({
        method: 'POST',
        url: TOKEN,
        token: null,
        body: { grant_type: 'client_credentials', client_id: a.client.client_id },
      })
      assert.equal(res.statusCode, 401)
      assert.equal(res.json().error, 'invalid_client')
    }
    const tooLong = await token('x'.repeat(201), 'secret')
    assert.equal(tooLong.statusCode, 400)
    assert.match(tooLong.json().errors, /client_id/)
    assert.equal((await token(a.client.client_id, a.client.client_secret)).statusCode, 200)
  })

  it('guesses checked at once answer 401 ten times, then 429: a check that waited while the tenth wrong secret locked the id tells nothing', async () => {
    const id = await unconfiguredPlatformClient('a-third-chosen-secret-0123')
    // Twelve at once: all pass the lock before any scrypt ends, and wait in the queue (16 places).
    const guesses = await Promise.all(Array.from({ length: 12 }, (_, i) => token(id, `wrong-${i}`)))
    const statuses = guesses.map((res) => res.statusCode).sort()
    assert.deepEqual(statuses, [...Array(10).fill(401), 429, 429])
  })

  it('the configured platform client whose hash another instance stored anew is checked in a lane that guesses at other clients never fill', async () => {
    const id = `admin-${randomUUID().slice(0, 8)}`
    const secret = 'configured-chosen-secret-0123'
    await t.app.services.oauth.ensureAdminClient({ id, secret })
    // Another instance stored the same secret anew (a new salt, as when scrypt's parameters rise):
    // this one no longer knows the stored hash and must run scrypt for the right secret.
    await t.app.database.db
      .updateTable('oauth_clients')
      .set({ secret_hash: await hashChosenSecret(secret) })
      .where('client_id', '=', id)
      .execute()
    const other = await unconfiguredPlatformClient('the-others-secret-0123')
    const flood = Array.from({ length: MAX_WAITING_HASHES + 4 }, (_, i) => token(other, `guess-${i}`))
    await Promise.any(
      flood.map((p) =>
        p.then((res) => (res.statusCode === 503 ? res : Promise.reject(new Error(String(res.statusCode))))),
      ),
    )
    const right = await token(id, secret)
    assert.equal(right.statusCode, 200, right.body)
    await Promise.all(flood)
  })

  it('a start-up that settles the configured secret during a flood at another client does not fail', async () => {
    const id = `admin-${randomUUID().slice(0, 8)}`
    const secret = 'settled-during-a-flood-0123'
    const other = await unconfiguredPlatformClient('the-others-secret-0123')
    const flood = Array.from({ length: MAX_WAITING_HASHES + 4 }, (_, i) => token(other, `guess-${i}`))
    await Promise.any(
      flood.map((p) =>
        p.then((res) => (res.statusCode === 503 ? res : Promise.reject(new Error(String(res.statusCode))))),
      ),
    )
    await t.app.services.oauth.ensureAdminClient({ id, secret })
    assert.equal((await token(id, secret)).statusCode, 200)
    await Promise.all(flood)
  })

  it('/openapi.json documents the lock (429 + Retry-After), the 401 of an anonymous coupon_code and the platform-only coupon', async () => {
    const doc = (await t.call({ url: '/openapi.json', token: null })).json()
    const token = doc.paths['/oauth/token'].post
    assert.match(token.responses['429'].description, /10 wrong secrets for this client_id within a minute/)
    assert.deepEqual(token.responses['429'].headers['Retry-After'].schema, { type: 'integer', minimum: 1 })
    assert.match(token.description, /whatever the secret/)
    const estimate = doc.paths['/api/v1/subscription/{subscription_id}/estimate'].get
    assert.match(estimate.responses['401'].description, /coupon_code was sent without a token/)
    const coupon = doc.paths['/api/v1/subscription/coupons/{id}'].get
    assert.deepEqual(coupon.security, [{ oauth2: [] }])
    assert.equal(coupon['x-platform-only'], true)
    assert.ok(coupon.responses['403'])
  })

  it("a flood of wrong secrets at other and unknown clients never makes the platform client's right secret wait or fail", async () => {
    const other = await unconfiguredPlatformClient('the-others-secret-0123')
    // A start-up (or the secret settled anew) makes every instance forget the platform secret it
    // verified: a flood's scrypt checks are then all this instance runs.
    await t.app.services.oauth.ensureAdminClient({ id: ADMIN.client_id, secret: ADMIN.client_secret })

    const flood = [
      ...Array.from({ length: MAX_WAITING_HASHES + 4 }, (_, i) => token(other, `guess-${i}`)),
      ...Array.from({ length: MAX_WAITING_HASHES * 2 }, (_, i) => token(`unknown-${i}-${randomUUID()}`, `guess-${i}`)),
    ]
    // Once a guess has been sent back (503), the shared queue is full.
    await Promise.any(
      flood.map((p) =>
        p.then((res) => (res.statusCode === 503 ? res : Promise.reject(new Error(String(res.statusCode))))),
      ),
    )
    const right = await token(ADMIN.client_id, ADMIN.client_secret)
    assert.equal(right.statusCode, 200, right.body)
    const statuses = new Set((await Promise.all(flood)).map((res) => res.statusCode))
    assert.deepEqual(
      [...statuses].filter((s) => ![401, 429, 503].includes(s)),
      [],
    )
    assert.equal((await token(ADMIN.client_id, ADMIN.client_secret)).statusCode, 200)
  })
})
