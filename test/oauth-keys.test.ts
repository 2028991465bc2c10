import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { SignJWT, createLocalJWKSet, decodeProtectedHeader, importJWK, jwtVerify, type JWK } from 'jose'
import { sql } from 'kysely'
import { buildTestApp, type TestApp } from './helpers/app.ts'
import { withDatabase } from './helpers/databases.ts'
import { company, type CompanyFixture } from './helpers/factories.ts'
import { buildApp, type BuiltApp } from '../src/app.ts'
import { loadConfig, type Config } from '../src/config.ts'
import { createDatabase, type Database } from '../src/db/database.ts'
import { eventually } from './helpers/eventually.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

/**
 * Signing keys: the claims a token of our own key must still satisfy (its time), and rotation
 * (docs/operations.md, "Signing keys"): the next key is published ahead of signing, the previous
 * one verifies until its last token expires, then it is gone, on every instance.
 */

const TOKEN = '/oauth/token'
const execFileAsync = promisify(execFile)
const HOUR = 3600
const DAY = 86_400
const ROTATION: Partial<Config> = { SIGNING_KEY_ROTATION_DAYS: 30, SIGNING_KEY_PUBLISH_AHEAD_SECONDS: DAY }

// Its own hooks: each test builds two instances over one database.
forEachEngine('signing keys', (engine) => {
  const kidOf = (token: string) => decodeProtectedHeader(token).kid!

  /** What a client sees of an app: its key set, its tokens and whether a token opens a company's door. */
  function client(app: BuiltApp, a: CompanyFixture) {
    return {
      async jwks(): Promise<{ keys: JWK[] }> {
        const res = await app.inject({ url: '/.well-known/jwks.json' })
        assert.equal(res.statusCode, 200)
        return res.json()
      },
      async kids() {
        return (await this.jwks()).keys.map((k) => k.kid).sort()
      },
      async token() {
        const res = await app.inject({
          method: 'POST',
          url: TOKEN,
          payload: { grant_type: 'client_credentials', ...a.client },
        })
        assert.equal(res.statusCode, 200, res.body)
        return res.json().access_token as string
      },
      async status(token: string) {
        const res = await app.inject({
          url: `/api/v1/companies/${a.id}`,
          headers: { authorization: `Bearer ${token}` },
        })
        if (res.statusCode === 401) {
          assert.equal(res.json().code, 'unauthorized')
          assert.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"')
        }
        return res.statusCode
      },
    }
  }

  /** One of the service's private keys, read from its table (as an attacker who stole it would hold it). */
  async function privateKey(t: TestApp, kid: string) {
    const row = await t.app.database.db
      .selectFrom('signing_keys')
      .selectAll()
      .where('kid', '=', kid)
      .executeTakeFirstOrThrow()
    return { kid, key: await importJWK(row.private_jwk as JWK, 'EdDSA') }
  }

  /** A token made with one of the service's private keys, with the times given. */
  async function forge(
    a: CompanyFixture,
    { kid, key }: Awaited<ReturnType<typeof privateKey>>,
    times: { iat: number; exp: number },
  ) {
    return new SignJWT({ scope: 'read:company', company_id: a.id })
      .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' })
      .setIssuer('company-admin-api')
      .setAudience('company-admin-api')
      .setSubject(a.client.client_id)
      .setIssuedAt(times.iat)
      .setExpirationTime(times.exp)
      .setJti(randomUUID())
      .sign(key)
  }

  describe('the time claims of a token', () => {
    let t: TestApp
    let a: CompanyFixture
    before(async () => {
      t = await buildTestApp(engine)
      a = await company(t)
    })
    after(async () => {
      await t?.close()
    })

    it('refuses a token issued in the future (beyond 60 s of clock skew) with 401', async () => {
      const c = client(t.app, a)
      const key = await privateKey(t, kidOf(a.token))
      const now = Math.floor(t.realClock.now().getTime() / 1000)
      // Within the skew a token of a clock slightly ahead passes: the refusals below are about the time.
      assert.equal(await c.status(await forge(a, key, { iat: now + 60, exp: now + 60 + 600 })), 200)
      assert.equal(await c.status(await forge(a, key, { iat: now + 61, exp: now + 61 + 600 })), 401)
      assert.equal(await c.status(await forge(a, key, { iat: now + DAY, exp: now + DAY + 600 })), 401)
    })

    it('refuses a token whose lifetime (exp - iat) exceeds TOKEN_TTL_SECONDS with 401', async () => {
      const c = client(t.app, a)
      const key = await privateKey(t, kidOf(a.token))
      const now = Math.floor(t.realClock.now().getTime() / 1000)
      assert.equal(await c.status(await forge(a, key, { iat: now, exp: now + HOUR })), 200)
      assert.equal(await c.status(await forge(a, key, { iat: now, exp: now + HOUR + 1 })), 401)
      // Issued long ago, so that it is still within exp: a lifetime of a year is refused all the same.
      assert.equal(await c.status(await forge(a, key, { iat: now - 300 * DAY, exp: now + 65 * DAY })), 401)
    })
  })

  describe('rotation', () => {
    it('publishes the next key a day ahead, signs with it from its time, keeps the old one until its tokens expire, then drops it', async (ctx) => {
      const t = await buildTestApp(engine, ROTATION)
      ctx.after(() => t.close())
      const a = await company(t)
      const c = client(t.app, a)
      const start = t.realClock.now()
      const unix = (seconds: number) => Math.floor(start.getTime() / 1000) + seconds
      const at = (seconds: number) => t.realClock.set(new Date(unix(seconds) * 1000))

      const first = kidOf(await c.token())
      assert.deepEqual(await c.kids(), [first])
      const firstKey = await privateKey(t, first)

      // Not yet due: the same key, nothing else published.
      at(29 * DAY - HOUR)
      assert.equal(kidOf(await c.token()), first)
      assert.deepEqual(await c.kids(), [first])

      // Due (30 days less the day ahead): the next key is published but does not sign yet.
      at(29 * DAY + 60)
      const lastOfFirst = await c.token()
      assert.equal(kidOf(lastOfFirst), first)
      const announced = await c.jwks()
      assert.equal(announced.keys.length, 2)
      const second = announced.keys.map((k) => k.kid!).find((k) => k !== first)!
      assert.ok(second)
      assert.equal(await c.status(lastOfFirst), 200)

      // From its time on (a day after it was published), the new key signs; both verify.
      const activation = 29 * DAY + 60 + DAY
      at(activation - 1)
      assert.equal(kidOf(await c.token()), first)
      at(activation)
      const firstOfSecond = await c.token()
      assert.equal(kidOf(firstOfSecond), second)
      assert.deepEqual(await c.kids(), [first, second].sort())
      assert.equal(await c.status(firstOfSecond), 200)
      // A verifier that fetched the key set when the key was announced verifies its tokens.
      await jwtVerify(firstOfSecond, createLocalJWKSet(announced), { currentDate: t.realClock.now() })

      // A token of the old key made as late as it could sign lives its full hour.
      const lateOld = await forge(a, firstKey, { iat: unix(activation - 1), exp: unix(activation - 1 + HOUR) })
      at(activation + HOUR - 30)
      assert.equal(await c.status(lateOld), 200, 'the old key verifies until its last token expires')
      assert.ok((await c.kids()).includes(first))

      // Past that (the token lifetime and 60 s of skew after the new key's time): the old key is gone.
      at(activation + HOUR + 61)
      assert.deepEqual(await c.kids(), [second])
      const fresh = await forge(a, firstKey, {
        iat: unix(activation + HOUR + 61),
        exp: unix(activation + HOUR + 61 + 600),
      })
      assert.equal(await c.status(fresh), 401, 'a token of the dropped key is refused, however fresh')
      assert.equal(kidOf(await c.token()), second)
      // The private part of a dropped key does not stay in the database.
      const rows = await t.app.database.db.selectFrom('signing_keys').select('kid').execute()
      assert.deepEqual(
        rows.map((r) => r.kid),
        [second],
      )
    })

    it("an immediate rotation (a key that leaked) refuses the old key's tokens at once, also those verified before", async (ctx) => {
      const t = await buildTestApp(engine, ROTATION)
      ctx.after(() => t.close())
      const a = await company(t)
      const c = client(t.app, a)
      const before = await c.token()
      assert.equal(await c.status(before), 200)
      const rotated = await t.app.services.keys.rotate({ immediately: true })
      const after = await c.token()
      assert.equal(kidOf(after), rotated.kid)
      assert.notEqual(kidOf(after), kidOf(before))
      assert.equal(await c.status(before), 401)
      assert.equal(await c.status(after), 200)
      assert.deepEqual(await c.kids(), [rotated.kid])
    })
  })

  describe('two instances on one database', () => {
    /** The test app and a second instance on its database, with the same settings and clock. */
    async function twoInstances(ctx: { after(fn: () => Promise<void>): void }) {
      const t = await buildTestApp(engine, ROTATION)
      let otherDatabase: Database | undefined
      if (engine === 'postgres') {
        // A second process would have its own pool and LISTEN connection: so does this instance.
        const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db))
          .rows[0]!.name
        otherDatabase = await createDatabase({
          databaseUrl: withDatabase(process.env.TEST_DATABASE_URL!, name),
          poolSize: 2,
        })
      }
      // PGlite is one process's database: a second instance there shares its session.
      const config = loadConfig({}, { LOG_LEVEL: 'silent', SCHEDULER_ENABLED: false, RATE_LIMIT_MAX: 0, ...ROTATION })
      const other = await buildApp({
        config,
        database: otherDatabase ?? t.app.database,
        clock: t.clock,
        realClock: t.realClock,
        logger: false,
      })
      await other.ready()
      ctx.after(async () => {
        await other.close()
        await otherDatabase?.close()
        await t.close()
      })
      return { t, other, a: await company(t) }
    }

    it('every instance publishes the next key, signs with it from its time, and drops the old one', async (ctx) => {
      const { t, other, a } = await twoInstances(ctx)
      const one = client(t.app, a)
      const two = client(other, a)
      const start = t.realClock.now()
      const unix = (seconds: number) => Math.floor(start.getTime() / 1000) + seconds
      const at = (seconds: number) => t.realClock.set(new Date(unix(seconds) * 1000))

      const first = kidOf(await one.token())
      assert.equal(kidOf(await two.token()), first)
      const firstKey = await privateKey(t, first)

      // The first instance finds the rotation due and makes the next key: the other publishes it too.
      at(29 * DAY + 60)
      const oldToken = await one.token()
      assert.equal(kidOf(oldToken), first)
      const kids = await one.kids()
      assert.equal(kids.length, 2)
      const seen = await eventually(
        () => two.kids(),
        (k) => k.length === 2,
      )
      assert.deepEqual(seen, kids, 'the other instance learns of the new key before it signs')
      assert.equal(await two.status(oldToken), 200)

      // From the new key's time, both sign with it and verify each other's tokens.
      const second = kids.find((k) => k !== first)!
      const activation = 30 * DAY + 60
      at(activation)
      const fromOne = await one.token()
      const fromTwo = await two.token()
      assert.equal(kidOf(fromOne), second)
      assert.equal(kidOf(fromTwo), second)
      assert.equal(await two.status(fromOne), 200)
      assert.equal(await one.status(fromTwo), 200)

      // An old-key token verified (and kept) by both instances stops opening doors once the key is retired.
      const late = await forge(a, firstKey, { iat: unix(activation - 1), exp: unix(activation - 1 + HOUR) })
      assert.equal(await one.status(late), 200)
      assert.equal(await two.status(late), 200)
      at(activation + HOUR + 61)
      assert.equal(await one.status(late), 401)
      assert.equal(await two.status(late), 401)
      assert.deepEqual(await one.kids(), [second])
      assert.deepEqual(await two.kids(), [second])
    })

    it('an immediate rotation made on one instance (or by the script) reaches the other at once', async (ctx) => {
      const { t, other, a } = await twoInstances(ctx)
      const one = client(t.app, a)
      const two = client(other, a)
      const before = await two.token()
      assert.equal(await two.status(before), 200)
      const rotated = await t.app.services.keys.rotate({ immediately: true })
      assert.equal(
        await eventually(
          () => two.status(before),
          (s) => s === 401,
        ),
        401,
      )
      assert.deepEqual(await two.kids(), [rotated.kid])
      assert.equal(kidOf(await two.token()), rotated.kid)
      assert.equal(kidOf(await one.token()), rotated.kid)
    })

    it('npm run rotate-key, run beside a running instance, publishes a next key; with --now it replaces every key at once', {
      skip:
        engine === 'postgres'
          ? false
          : "the script reaches a running service only through a shared PostgreSQL (PGlite's directory is locked by its one process)",
    }, async (ctx) => {
      const t = await buildTestApp(engine)
      ctx.after(() => t.close())
      const a = await company(t)
      const c = client(t.app, a)
      const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!
        .name
      const run = (...args: string[]) =>
        execFileAsync(process.execPath, ['--import', 'tsx', 'scripts/rotate-key.ts', ...args], {
          env: {
            ...process.env,
            DATABASE_URL: withDatabase(process.env.TEST_DATABASE_URL!, name),
            LOG_LEVEL: 'silent',
          },
        })
      const before = await c.token()
      const [first] = await c.kids()

      const planned = await run()
      const next = /Key (\S+) is published/.exec(planned.stdout)?.[1]
      assert.ok(next, planned.stdout)
      assert.deepEqual(
        await eventually(
          () => c.kids(),
          (k) => k.length === 2,
        ),
        [first!, next].sort(),
      )
      // The script ran on the real clock, the instance on its own: what matters is that it signs
      // with the current key until the next one's time, and that both verify.
      assert.equal(await c.status(before), 200)
      assert.equal(kidOf(await c.token()), first)

      const urgent = await run('--now')
      const replacement = /Key (\S+) signs from now/.exec(urgent.stdout)?.[1]
      assert.ok(replacement, urgent.stdout)
      assert.equal(
        await eventually(
          () => c.status(before),
          (s) => s === 401,
        ),
        401,
      )
      assert.deepEqual(await c.kids(), [replacement])
      assert.equal(kidOf(await c.token()), replacement)

      await assert.rejects(run('--later'), /Unknown argument --later/)
    })
  })
})

describe('signing-key settings', () => {
  it('rotates every 90 days with a day of publication ahead by default, and refuses a lead as long as the period or under 600 s', () => {
    const config = loadConfig({})
    assert.equal(config.SIGNING_KEY_ROTATION_DAYS, 90)
    assert.equal(config.SIGNING_KEY_PUBLISH_AHEAD_SECONDS, 86_400)
    assert.equal(loadConfig({ SIGNING_KEY_ROTATION_DAYS: '0' }).SIGNING_KEY_ROTATION_DAYS, 0)
    assert.throws(
      () => loadConfig({ SIGNING_KEY_ROTATION_DAYS: '1', SIGNING_KEY_PUBLISH_AHEAD_SECONDS: '86400' }),
      /^Error: Invalid configuration: SIGNING_KEY_PUBLISH_AHEAD_SECONDS must be shorter than SIGNING_KEY_ROTATION_DAYS$/,
    )
    assert.throws(() => loadConfig({ SIGNING_KEY_PUBLISH_AHEAD_SECONDS: '300' }), /SIGNING_KEY_PUBLISH_AHEAD_SECONDS/)
    assert.throws(() => loadConfig({ SIGNING_KEY_ROTATION_DAYS: '-1' }), /SIGNING_KEY_ROTATION_DAYS/)
  })
})
