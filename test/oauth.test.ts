import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomUUID } from 'node:crypto'
import {
  SignJWT,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  generateKeyPair,
  importJWK,
  jwtVerify,
  type JWK,
} from 'jose'
import { sql } from 'kysely'
import { ADMIN } from './helpers/app.ts'
import { withDatabase } from './helpers/databases.ts'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { ANNOUNCE_SETTING, createDatabase } from '../src/db/database.ts'
import { company, companyClient, type CompanyFixture } from './helpers/factories.ts'
import { postgresOnly } from './helpers/requires.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const TOKEN = '/oauth/token'
const b64url = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')
const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`

onEachEngine('oauth', (t, engine) => {
  let a: CompanyFixture
  let b: CompanyFixture
  before(async () => {
    a = await company(t, {}, { features: ['stamping'] })
    b = await company(t)
  })

  const token = (payload: Record<string, unknown> | string, headers: Record<string, string> = {}) =>
    t.call({ method: 'POST', url: TOKEN, token: null, body: payload, headers })

  describe('token endpoint', () => {
    it('issues a token for JSON, form-encoded and HTTP Basic requests', async () => {
      const json = await token({
        grant_type: 'client_credentials',
        client_id: ADMIN.client_id,
        client_secret: ADMIN.client_secret,
      })
      assert.equal(json.statusCode, 200, json.body)
      const body = json.json()
      assert.equal(body.token_type, 'Bearer')
      assert.equal(body.expires_in, 3600)
      assert.ok(body.scope.split(' ').includes('write:company'))
      assert.equal(json.headers['cache-control'], 'no-store')

      const form = await token(
        new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: a.client.client_id,
          client_secret: a.client.client_secret,
        }).toString(),
        { 'content-type': 'application/x-www-form-urlencoded' },
      )
      assert.equal(form.statusCode, 200, form.body)
      assert.ok(form.json().scope.split(' ').includes('read:stamping'))

      const viaBasic = await token('grant_type=client_credentials', {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basic(a.client.client_id, a.client.client_secret),
      })
      assert.equal(viaBasic.statusCode, 200, viaBasic.body)
      // The token works on the company's own routes.
      await t.json(200, { url: `/api/v1/companies/${a.id}`, token: viaBasic.json().access_token })
    })

    it("grants a subset of the client's scopes when asked, and refuses others with invalid_scope", async () => {
      const ok = await token({ grant_type: 'client_credentials', ...a.client, scope: 'read:company  read:team' })
      assert.equal(ok.statusCode, 200, ok.body)
      assert.equal(ok.json().scope, 'read:company read:team')
      const limited = ok.json().access_token
      await t.json(200, { url: `/api/v1/companies/${a.id}`, token: limited })
      const res = await t.call({
        method: 'POST',
        url: `/api/v1/companies/${a.id}/subsidiaries`,
        token: limited,
        body: { name: 'X' },
      })
      assert.equal(res.statusCode, 403)

      for (const scope of ['read:expense', 'write:calendar', 'read:nonsense']) {
        const refused = await token({ grant_type: 'client_credentials', ...a.client, scope })
        assert.equal(refused.statusCode, 400, scope)
        assert.equal(refused.json().error, 'invalid_scope')
        assert.match(refused.json().error_description, new RegExp(scope))
      }
    })

    it('answers every RFC 6749 error in its format', async () => {
      const cases: Array<[string, Record<string, unknown> | string, Record<string, string>, number, string]> = [
        [
          'wrong secret',
          { grant_type: 'client_credentials', client_id: a.client.client_id, client_secret: 'nope' },
          {},
          401,
          'invalid_client',
        ],
        [
          'unknown client',
          { grant_type: 'client_credentials', client_id: 'who', client_secret: 'nope' },
          {},
          401,
          'invalid_client',
        ],
        ['no credentials', { grant_type: 'client_credentials' }, {}, 401, 'invalid_client'],
        [
          'wrong Basic secret',
          'grant_type=client_credentials',
          { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(a.client.client_id, 'bad') },
          401,
          'invalid_client',
        ],
        [
          'no grant_type',
          { client_id: a.client.client_id, client_secret: a.client.client_secret },
          {},
          400,
          'invalid_request',
        ],
        ['grant_type of the wrong type', { grant_type: 7, ...a.client }, {}, 400, 'invalid_request'],
        [
          'two client ids',
          { grant_type: 'client_credentials', client_id: 'other' },
          { authorization: basic(a.client.client_id, a.client.client_secret) },
          400,
          'invalid_request',
        ],
        ['broken JSON', '{"grant_type": ', { 'content-type': 'application/json' }, 400, 'invalid_request'],
        [
          'a repeated parameter',
          `grant_type=password&grant_type=client_credentials&client_id=${a.client.client_id}&client_secret=${a.client.client_secret}`,
          { 'content-type': 'application/x-www-form-urlencoded' },
          400,
          'invalid_request',
        ],
        [
          'two authentication methods',
          { grant_type: 'client_credentials', client_secret: a.client.client_secret },
          { authorization: basic(a.client.client_id, a.client.client_secret) },
          400,
          'invalid_request',
        ],
        ['password grant', { grant_type: 'password', ...a.client }, {}, 400, 'unsupported_grant_type'],
        [
          'unknown scope',
          { grant_type: 'client_credentials', ...a.client, scope: 'write:everything' },
          {},
          400,
          'invalid_scope',
        ],
      ]
      for (const [name, payload, headers, status, error] of cases) {
        const res = await token(payload, headers)
        assert.equal(res.statusCode, status, `${name}: ${res.body}`)
        const body = res.json()
        assert.equal(body.error, error, name)
        assert.equal(typeof body.error_description, 'string', name)
        assert.ok(body.error_description.length > 0, name)
        assert.equal(res.headers['cache-control'], 'no-store', name)
        if (status === 401) assert.match(String(res.headers['www-authenticate']), /^Basic/, name)
      }
      // A body of another media type is refused by HTTP before OAuth reads it.
      const text = await token('grant_type=client_credentials', { 'content-type': 'text/plain' })
      assert.equal(text.statusCode, 415)
      assert.equal(text.json().code, 'unsupported_media_type')
    })

    it('signs EdDSA tokens with the claims of RFC 9068 that the JWKS verifies', async () => {
      const jwks = await t.json(200, { url: '/.well-known/jwks.json', token: null })
      assert.ok(jwks.keys.length >= 1)
      for (const key of jwks.keys) {
        assert.equal(key.d, undefined, 'no private part is published')
        assert.equal(key.kty, 'OKP')
        assert.equal(key.crv, 'Ed25519')
      }
      const res = await token({ grant_type: 'client_credentials', ...a.client })
      const accessToken = res.json().access_token
      const header = decodeProtectedHeader(accessToken)
      assert.equal(header.alg, 'EdDSA')
      assert.ok(jwks.keys.some((k: { kid: string }) => k.kid === header.kid))
      const { payload } = await jwtVerify(accessToken, createLocalJWKSet(jwks), {
        issuer: 'company-admin-api',
        audience: 'company-admin-api',
        currentDate: t.realClock.now(),
      })
      assert.equal(payload.sub, a.client.client_id)
      assert.equal(payload.company_id, a.id)
      assert.equal(payload.scope, res.json().scope)
      assert.equal(typeof payload.jti, 'string')
      const now = Math.floor(t.realClock.now().getTime() / 1000)
      assert.equal(payload.iat, now)
      assert.equal(payload.exp, now + 3600)
      // Two tokens never share an id.
      const again = decodeJwt((await token({ grant_type: 'client_credentials', ...a.client })).json().access_token)
      assert.notEqual(again.jti, payload.jti)
      // A platform token names no company.
      assert.equal(decodeJwt(t.platformToken).company_id, undefined)
    })
  })

  describe('company clients', () => {
    const clients = (id: string) => `/api/v1/companies/${id}/clients`

    it('creates a client with its secret shown once and stored only as a hash', async () => {
      const res = await t.call({
        method: 'POST',
        url: clients(a.id),
        token: a.token,
        body: { name: 'payroll', scopes: ['read:team', 'read:stamping', 'read:team'] },
      })
      assert.equal(res.statusCode, 201, res.body)
      const created = res.json()
      assert.deepEqual(Object.keys(created).sort(), ['client_id', 'client_secret', 'name', 'scopes'])
      assert.deepEqual(created.scopes, ['read:team', 'read:stamping'])
      assert.equal(res.headers.location, `${clients(a.id)}/${created.client_id}`)
      assert.equal(res.headers['cache-control'], 'no-store')
      await t.json(200, { url: String(res.headers.location), token: a.token })

      const row = await t.app.database.db
        .selectFrom('oauth_clients')
        .selectAll()
        .where('client_id', '=', created.client_id)
        .executeTakeFirstOrThrow()
      assert.equal(row.company_id, a.id)
      assert.equal(row.secret_hash, createHash('sha256').update(created.client_secret).digest('hex'))
      assert.ok(!JSON.stringify(row).includes(created.client_secret), 'the secret itself is not stored')

      const issued = await token({
        grant_type: 'client_credentials',
        client_id: created.client_id,
        client_secret: created.client_secret,
      })
      assert.equal(issued.json().scope, 'read:team read:stamping')
    })

    it("refuses scopes outside the company's authorized scopes, and bad input", async () => {
      for (const [body, field] of [
        [{ name: 'x', scopes: ['read:expense'] }, 'read:expense'], // not in b's plan
        [{ name: 'x', scopes: ['write:calendar'] }, 'write:calendar'], // calendar is read-only
        [{ name: 'x', scopes: ['team'] }, 'body/scopes/0'],
        [{ name: 'x', scopes: [] }, 'body/scopes'],
        [{ scopes: ['read:team'] }, 'body/name'],
        [{ name: 'x', scopes: ['read:team'], secret: 's' }, 'body/secret'],
      ] as const) {
        const res = await t.call({ method: 'POST', url: clients(b.id), token: b.token, body })
        assert.equal(res.statusCode, 400, JSON.stringify(body))
        assert.equal(res.json().code, 'validation_failed')
        assert.ok(res.json().errors.includes(field), `${res.json().errors} names ${field}`)
      }
      // A platform client may create one for any company, within the same limits.
      await t.json(201, { method: 'POST', url: clients(b.id), body: { name: 'ops', scopes: ['read:company'] } })
      assert.equal(
        (await t.call({ method: 'POST', url: clients(b.id), body: { name: 'ops', scopes: ['read:expense'] } }))
          .statusCode,
        400,
      )
    })

    it('lists clients without secrets', async () => {
      const list = await t.json(200, { url: clients(b.id), token: b.token })
      assert.ok(list.length >= 1)
      for (const client of list) {
        assert.deepEqual(Object.keys(client).sort(), ['client_id', 'created_at', 'name', 'scopes'])
        assert.match(client.created_at, /Z$/)
      }
      assert.ok(list.some((c: { client_id: string }) => c.client_id === b.client.client_id))
      assert.ok(
        !list.some((c: { client_id: string }) => c.client_id === a.client.client_id),
        "only the company's own clients",
      )
      assert.equal((await t.call({ url: clients(b.id), token: a.token })).statusCode, 404)
      const one = await t.json(200, { url: `${clients(b.id)}/${b.client.client_id}`, token: b.token })
      assert.deepEqual(Object.keys(one).sort(), ['client_id', 'created_at', 'name', 'scopes'])
      // Another company's client, through its own path or through the other's: 404.
      assert.equal((await t.call({ url: `${clients(a.id)}/${b.client.client_id}`, token: a.token })).statusCode, 404)
      assert.equal((await t.call({ url: `${clients(b.id)}/${b.client.client_id}`, token: a.token })).statusCode, 404)
    })

    it('revokes a client: its tokens answer 401 at once and it gets no new one', async () => {
      const client = await companyClient(t, a.id, ['read:company'])
      const clientToken = await t.tokenFor(client.client_id, client.client_secret)
      await t.json(200, { url: `/api/v1/companies/${a.id}`, token: clientToken })

      // Another company's token, and this company's token on another company's client: 404.
      assert.equal(
        (await t.call({ method: 'DELETE', url: `${clients(a.id)}/${client.client_id}`, token: b.token })).statusCode,
        404,
      )
      assert.equal(
        (await t.call({ method: 'DELETE', url: `${clients(b.id)}/${client.client_id}`, token: b.token })).statusCode,
        404,
      )
      await t.json(200, { url: `/api/v1/companies/${a.id}`, token: clientToken })

      const res = await t.call({ method: 'DELETE', url: `${clients(a.id)}/${client.client_id}`, token: a.token })
      assert.equal(res.statusCode, 204, res.body)
      const refused = await t.call({ url: `/api/v1/companies/${a.id}`, token: clientToken })
      assert.equal(refused.statusCode, 401)
      assert.equal(refused.json().code, 'unauthorized')
      assert.equal(refused.headers['www-authenticate'], 'Bearer error="invalid_token"')
      assert.equal((await token({ grant_type: 'client_credentials', ...client })).statusCode, 401)
      assert.equal((await t.call({ url: `${clients(a.id)}/${client.client_id}`, token: a.token })).statusCode, 404)
      assert.ok(
        !(await t.json(200, { url: clients(a.id), token: a.token })).some(
          (c: { client_id: string }) => c.client_id === client.client_id,
        ),
      )

      assert.equal(
        (await t.call({ method: 'DELETE', url: `${clients(a.id)}/${client.client_id}`, token: a.token })).statusCode,
        404,
      )
      assert.equal(
        (await t.call({ method: 'DELETE', url: `${clients(a.id)}/company_unknown`, token: a.token })).statusCode,
        404,
      )
      assert.equal(
        (await t.call({ method: 'DELETE', url: `${clients(a.id)}/${ADMIN.client_id}`, token: a.token })).statusCode,
        404,
      )
    })

    it('lets a company client grant only scopes it holds itself', async () => {
      const admin = await companyClient(t, a.id, ['read:company', 'write:company', 'read:team'])
      const adminToken = await t.tokenFor(admin.client_id, admin.client_secret)
      await t.json(201, {
        method: 'POST',
        url: clients(a.id),
        token: adminToken,
        body: { name: 'reader', scopes: ['read:team'] },
      })
      const res = await t.call({
        method: 'POST',
        url: clients(a.id),
        token: adminToken,
        body: { name: 'wider', scopes: ['read:team', 'write:contract'] },
      })
      assert.equal(res.statusCode, 403)
      assert.equal(res.json().code, 'forbidden')
      assert.match(res.json().errors, /write:contract/)
      // The platform grants any of the company's authorized scopes.
      await t.json(201, {
        method: 'POST',
        url: clients(a.id),
        body: { name: 'wider', scopes: ['read:team', 'write:contract'] },
      })
    })

    it('needs read:company to list and write:company to create or revoke', async () => {
      const reader = await companyClient(t, a.id, ['read:company'])
      const readToken = await t.tokenFor(reader.client_id, reader.client_secret)
      await t.json(200, { url: clients(a.id), token: readToken })
      const res = await t.call({
        method: 'POST',
        url: clients(a.id),
        token: readToken,
        body: { name: 'x', scopes: ['read:team'] },
      })
      assert.equal(res.statusCode, 403)
      assert.equal(res.json().code, 'insufficient_scope')
      assert.equal(
        (await t.call({ method: 'DELETE', url: `${clients(a.id)}/${reader.client_id}`, token: readToken })).statusCode,
        403,
      )
      assert.equal((await t.call({ url: clients(a.id), token: null })).statusCode, 401)
    })
  })

  describe('tokens and what the service keeps of clients', () => {
    it('grants what the company holds now: a cancellation or a plan changed by hand shows in the next token', async () => {
      const c = await company(t, {}, { features: ['stamping', 'expense'] })
      const scopes = async () => {
        const res = await token({ grant_type: 'client_credentials', ...c.client })
        assert.equal(res.statusCode, 200, res.body)
        return (res.json().scope as string).split(' ')
      }
      assert.ok((await scopes()).includes('read:expense'))
      assert.ok(
        (await scopes()).includes('read:expense'),
        'asked twice: the second answer may come from what the service keeps',
      )
      // A plan changed outside the service (psql): the next token follows once the change is announced.
      await t.app.database.db.transaction().execute(async (trx) => {
        await sql`SELECT set_config(${ANNOUNCE_SETTING}, '', true)`.execute(trx)
        await sql`UPDATE plans SET features = ARRAY['stamping'] WHERE sku = ${c.planSku}`.execute(trx)
      })
      const deadline = Date.now() + 3000
      let now = await scopes()
      while (now.includes('read:expense') && Date.now() < deadline) now = await scopes()
      assert.ok(!now.includes('read:expense') && now.includes('read:stamping'), now.join(' '))
      // Cancelled now, through the API: the very next token has no plan features left.
      await t.json(200, { method: 'PUT', url: `/api/v1/subscription/${c.id}/cancel?end_of_term=false` })
      assert.ok(!(await scopes()).includes('read:stamping'))
    })
  })

  describe('the configured platform client', () => {
    it('takes the configured secret at start-up, also when it changed', async () => {
      const rotated = 'rotated-admin-secret-0123456789'
      try {
        assert.equal(await t.app.services.oauth.ensureAdminClient({ id: ADMIN.client_id, secret: rotated }), undefined)
        assert.equal(
          (await token({ grant_type: 'client_credentials', client_id: ADMIN.client_id, client_secret: rotated }))
            .statusCode,
          200,
        )
        assert.equal((await token({ grant_type: 'client_credentials', ...ADMIN })).statusCode, 401)
      } finally {
        await t.app.services.oauth.ensureAdminClient({ id: ADMIN.client_id, secret: ADMIN.client_secret })
      }
      assert.equal((await token({ grant_type: 'client_credentials', ...ADMIN })).statusCode, 200)
      // A configured id that is a company client's stays that company's.
      await t.app.services.oauth.ensureAdminClient({
        id: a.client.client_id,
        secret: 'attempt-to-take-over-0123456789',
      })
      assert.equal(
        (
          await token({
            grant_type: 'client_credentials',
            client_id: a.client.client_id,
            client_secret: 'attempt-to-take-over-0123456789',
          })
        ).statusCode,
        401,
      )
      assert.equal((await token({ grant_type: 'client_credentials', ...a.client })).statusCode, 200)
    })

    it('a token asked for it while its secret is being settled waits for the settled secret', async () => {
      // The server listens before the configured secret is settled (its scrypt is a third of a
      // start): a request in between must meet the configured secret, not the stored one.
      const rotated = 'rotated-while-settling-0123456789'
      try {
        const settling = t.app.services.oauth.ensureAdminClient({ id: ADMIN.client_id, secret: rotated })
        const [fresh, old] = await Promise.all([
          token({ grant_type: 'client_credentials', client_id: ADMIN.client_id, client_secret: rotated }),
          token({ grant_type: 'client_credentials', ...ADMIN }),
        ])
        await settling
        assert.equal(fresh.statusCode, 200, fresh.body)
        assert.equal(old.statusCode, 401, old.body)
      } finally {
        await t.app.services.oauth.ensureAdminClient({ id: ADMIN.client_id, secret: ADMIN.client_secret })
      }
      assert.equal((await token({ grant_type: 'client_credentials', ...ADMIN })).statusCode, 200)
    })
  })

  describe('several instances on one PostgreSQL', () => {
    it('a revocation or a disabling on one instance holds on the other at once', postgresOnly(engine), async () => {
      const name = (await sql<{ name: string }>`SELECT current_database() AS name`.execute(t.app.database.db)).rows[0]!
        .name
      const database = await createDatabase({
        databaseUrl: withDatabase(process.env.TEST_DATABASE_URL!, name),
        poolSize: 2,
      })
      const config = loadConfig({}, { LOG_LEVEL: 'silent', SCHEDULER_ENABLED: false, RATE_LIMIT_MAX: 0 })
      const other = await buildApp({ config, database, clock: t.clock, realClock: t.realClock, logger: false })
      await other.ready()
      try {
        const get = (token: string) =>
          other.inject({ url: `/api/v1/companies/${a.id}`, headers: { authorization: `Bearer ${token}` } })
        /** The status the other instance answers once it settles, and how long that took. */
        async function settle(token: string, status: number) {
          const start = Date.now()
          while ((await get(token)).statusCode !== status && Date.now() - start < 8000)
            await new Promise((r) => setTimeout(r, 20))
          return { status: (await get(token)).statusCode, ms: Date.now() - start }
        }
        const client = await companyClient(t, a.id, ['read:company'])
        const clientToken = await t.tokenFor(client.client_id, client.client_secret)
        assert.equal((await get(clientToken)).statusCode, 200, 'a token of one instance works on the other')
        const tokenOnOther = () =>
          other.inject({ method: 'POST', url: TOKEN, payload: { grant_type: 'client_credentials', ...client } })
        assert.equal(
          (await tokenOnOther()).statusCode,
          200,
          'the other instance issues tokens to the client (and keeps it)',
        )

        await t.json(204, { method: 'DELETE', url: `/api/v1/companies/${a.id}/clients/${client.client_id}` })
        const revoked = await settle(clientToken, 401)
        assert.equal(revoked.status, 401)
        // Without the notification the other instance would hold its cached answer about 5 s.
        assert.ok(revoked.ms < 2500, `revocation seen after ${revoked.ms} ms`)
        assert.equal((await tokenOnOther()).statusCode, 401, 'and issues no more tokens to it')

        assert.equal((await get(a.token)).statusCode, 200)
        await t.json(202, { method: 'PUT', url: `/api/v1/companies/${a.id}` })
        try {
          const disabled = await settle(a.token, 403)
          assert.equal(disabled.status, 403)
          assert.ok(disabled.ms < 2500, `disabling seen after ${disabled.ms} ms`)
        } finally {
          await t.json(202, { method: 'PUT', url: `/api/v1/companies/${a.id}/enable` })
        }
        assert.equal((await settle(a.token, 200)).status, 200)
      } finally {
        await other.close()
        await database.close()
      }
    })
  })

  describe('tokens that must not pass', () => {
    const protectedUrl = () => `/api/v1/companies/${a.id}`

    async function expect401(tok: string | null, header?: string) {
      const res = await t.call({
        url: protectedUrl(),
        token: header ? null : tok,
        headers: header ? { authorization: header } : {},
      })
      assert.equal(res.statusCode, 401, `${header ?? tok}: ${res.body}`)
      assert.equal(res.json().code, 'unauthorized')
      assert.equal(typeof res.json().errors, 'string')
      assert.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"')
    }

    it('refuses a missing or malformed Authorization header', async () => {
      await expect401(null)
      for (const header of [
        'Bearer',
        'Bearer ',
        'Basic abc',
        'Token abc',
        `Bearer ${a.token} extra`,
        'Bearer not-a-jwt',
        'Bearer a.b.c',
      ]) {
        await expect401(null, header)
      }
    })

    it('refuses an expired token, and accepts it again only within its lifetime', async () => {
      const fresh = await t.tokenFor(a.client.client_id, a.client.client_secret)
      await t.json(200, { url: protectedUrl(), token: fresh })
      const start = t.realClock.now()
      try {
        t.realClock.advance(3600 * 1000 + 1000)
        await expect401(fresh)
      } finally {
        t.realClock.set(start)
      }
    })

    it('refuses a tampered payload, another key, alg none and HS256 with the public key', async () => {
      const [header, payload, signature] = a.token.split('.') as [string, string, string]
      const claims = decodeJwt(a.token)
      const widened = { ...claims, company_id: b.id }
      await expect401(`${header}.${b64url(widened)}.${signature}`)

      const { kid } = decodeProtectedHeader(a.token)
      const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
      const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' }).sign(privateKey)
      await expect401(forged)
      const forgedNoKid = await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA' }).sign(privateKey)
      await expect401(forgedNoKid)

      await expect401(`${b64url({ alg: 'none', typ: 'JWT' })}.${payload}.`)
      await expect401(`${b64url({ alg: 'none', kid })}.${payload}.${signature}`)

      const jwks = await t.json(200, { url: '/.well-known/jwks.json', token: null })
      const publicJwk = jwks.keys.find((k: { kid: string }) => k.kid === kid)
      for (const secret of [
        JSON.stringify(publicJwk),
        Buffer.from(publicJwk.x, 'base64url').toString('latin1'),
        publicJwk.x,
      ]) {
        const confused = await new SignJWT(claims)
          .setProtectedHeader({ alg: 'HS256', kid })
          .sign(new TextEncoder().encode(secret))
        await expect401(confused)
      }
      // The untouched token still works: the refusals above were about the changes.
      await t.json(200, { url: protectedUrl(), token: a.token })
    })

    it("refuses a token signed with the service's own key unless every claim is right", async () => {
      const row = await t.app.database.db
        .selectFrom('signing_keys')
        .selectAll()
        .orderBy('created_at')
        .orderBy('kid')
        .executeTakeFirstOrThrow()
      const key = await importJWK(row.private_jwk as JWK, 'EdDSA')
      const now = Math.floor(t.realClock.now().getTime() / 1000)
      const claims = { scope: 'read:company', company_id: a.id }
      const make = (
        change: {
          iss?: string
          aud?: string
          typ?: string
          exp?: number | null
          sub?: string | null
          payload?: Record<string, unknown>
        } = {},
      ) => {
        let jwt = new SignJWT({ ...claims, ...change.payload })
          .setProtectedHeader({ alg: 'EdDSA', kid: row.kid, typ: change.typ ?? 'at+jwt' })
          .setIssuer(change.iss ?? 'company-admin-api')
          .setAudience(change.aud ?? 'company-admin-api')
          .setIssuedAt(now)
          .setJti(randomUUID())
        if (change.sub !== null) jwt = jwt.setSubject(change.sub ?? a.client.client_id)
        if (change.exp !== null) jwt = jwt.setExpirationTime(change.exp ?? now + 600)
        return jwt.sign(key)
      }
      // The forgery works when every claim is right: what follows fails for its one wrong claim.
      await t.json(200, { url: protectedUrl(), token: await make() })
      await expect401(await make({ iss: 'someone-else' }))
      await expect401(await make({ aud: 'another-api' }))
      await expect401(await make({ typ: 'JWT' }))
      await expect401(await make({ exp: null }))
      await expect401(await make({ exp: now - 1 }))
      await expect401(await make({ sub: null }))
      await expect401(await make({ sub: 'company_no_such_client' }))
      await expect401(await make({ payload: { scope: ['read:company'] } }))
    })

    it('answers 403 forbidden while the company is disabled, and works again once enabled', async () => {
      const c = await company(t)
      await t.json(200, { url: `/api/v1/companies/${c.id}`, token: c.token })
      await t.json(202, { method: 'PUT', url: `/api/v1/companies/${c.id}` })
      for (const url of [
        `/api/v1/companies/${c.id}`,
        `/api/v1/companies/${c.id}/clients`,
        `/api/v1/companies/${c.id}/contracts`,
      ]) {
        const res = await t.call({ url, token: c.token })
        assert.equal(res.statusCode, 403, url)
        assert.equal(res.json().code, 'forbidden')
      }
      // The platform still reads it.
      assert.equal((await t.json(200, { url: `/api/v1/companies/${c.id}` })).disabled, true)
      await t.json(202, { method: 'PUT', url: `/api/v1/companies/${c.id}/enable` })
      await t.json(200, { url: `/api/v1/companies/${c.id}`, token: c.token })
    })

    it('answers 403 insufficient_scope naming the scope the route needs', async () => {
      const client = await companyClient(t, a.id, ['read:contract'])
      const narrow = await t.tokenFor(client.client_id, client.client_secret)
      await t.json(200, { url: `/api/v1/companies/${a.id}/contracts`, token: narrow })
      const res = await t.call({ url: protectedUrl(), token: narrow })
      assert.equal(res.statusCode, 403)
      assert.equal(res.json().code, 'insufficient_scope')
      assert.equal(res.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="read:company"')
      const write = await t.call({
        method: 'POST',
        url: `/api/v1/companies/${a.id}/contracts`,
        token: narrow,
        body: { first_name: 'A', last_name: 'B' },
      })
      assert.equal(write.statusCode, 403)
      assert.match(String(write.headers['www-authenticate']), /scope="write:contract"/)
      // A company token on a platform route.
      const platformOnly = await t.call({
        method: 'POST',
        url: '/api/v1/subscription/addons',
        token: a.token,
        body: { name: 'x', price: 1, period_unit: 'month' },
      })
      assert.equal(platformOnly.statusCode, 403)
      assert.equal(platformOnly.json().code, 'forbidden')
    })

    it('a public route accepts no token or a valid one, and refuses an invalid one', async () => {
      await t.json(200, { url: '/api/v1/subscription/plans', token: null })
      await t.json(200, { url: '/api/v1/subscription/plans', token: a.token })
      for (const header of ['Bearer a.b.c', 'Bearer nonsense', `Bearer ${a.token}x`, 'Basic Zm9vOmJhcg==']) {
        const res = await t.call({ url: '/api/v1/subscription/plans', token: null, headers: { authorization: header } })
        assert.equal(res.statusCode, 401, header)
        assert.equal(res.headers['www-authenticate'], 'Bearer error="invalid_token"')
      }
    })
  })
})
