import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { LightMyRequestResponse } from 'fastify'
import { locationId, uniq } from './helpers/app.ts'
import { company, companyClient, type CompanyFixture } from './helpers/factories.ts'
import { companyEndpoints } from './helpers/webhook-endpoints.ts'
import { readMigrations } from '../src/db/migrate.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/** The migration that erases the secrets found in the answers the Idempotency-Key store keeps. */
const ERASE = '0044_idempotency_without_secrets'
/** A webhook target the creation accepts with WEBHOOK_ALLOW_PRIVATE_TARGETS (nothing is delivered in these tests). */
const TARGET = 'http://127.0.0.1:9/hook'

interface SecretRoute {
  name: string
  /** Makes what the route needs; answers its url, body, token, expected status and secret field. */
  setUp(): Promise<{
    url: string
    body: unknown
    other: unknown
    token?: string
    status: number
    field: string
    read: (res: LightMyRequestResponse) => string
  }>
}

onEachEngine('secrets and Idempotency-Key replays', { WEBHOOK_ALLOW_PRIVATE_TARGETS: true }, (t) => {
  let c: CompanyFixture
  before(async () => {
    c = await company(t)
  })

  const keyed = (url: string, body: unknown, key: string, token?: string) =>
    t.call({ method: 'POST', url, body, token, headers: { 'idempotency-key': key } })
  const stored = async () =>
    JSON.stringify(await t.app.database.db.selectFrom('idempotency_keys').selectAll().execute())
  const endpointOf = async (url: string, token?: string) =>
    t.json(201, { method: 'POST', url, token, body: { url: TARGET } })

  const routes: SecretRoute[] = [
    {
      name: "a company client's creation (client_secret)",
      async setUp() {
        const url = `/api/v1/companies/${c.id}/clients`
        return {
          url,
          body: { name: uniq('keyed'), scopes: ['read:team'] },
          other: { name: 'other', scopes: ['read:team'] },
          token: c.token,
          status: 201,
          field: 'client_secret',
          read: (res) => String(res.headers.location),
        }
      },
    },
    {
      name: "a company webhook endpoint's creation (secret)",
      async setUp() {
        return {
          url: companyEndpoints(c.id),
          body: { url: TARGET, description: uniq('keyed') },
          other: { url: TARGET, description: 'other' },
          token: c.token,
          status: 201,
          field: 'secret',
          read: (res) => String(res.headers.location),
        }
      },
    },
    {
      name: "a platform webhook endpoint's creation (secret)",
      async setUp() {
        return {
          url: '/api/v1/webhook_endpoints',
          body: { url: TARGET, description: uniq('keyed') },
          other: { url: TARGET },
          status: 201,
          field: 'secret',
          read: (res) => String(res.headers.location),
        }
      },
    },
    {
      name: "a company webhook endpoint's secret rotation (secret)",
      async setUp() {
        const made = await endpointOf(companyEndpoints(c.id), c.token)
        const one = `${companyEndpoints(c.id)}/${made.id}`
        return {
          url: `${one}/rotate_secret`,
          body: { previous_secret_expires_in: 60 },
          other: {},
          token: c.token,
          status: 200,
          field: 'secret',
          read: () => one,
        }
      },
    },
    {
      name: "a platform webhook endpoint's secret rotation (secret)",
      async setUp() {
        const made = await endpointOf('/api/v1/webhook_endpoints')
        const one = `/api/v1/webhook_endpoints/${made.id}`
        return {
          url: `${one}/rotate_secret`,
          body: { previous_secret_expires_in: 0 },
          other: { previous_secret_expires_in: 1 },
          status: 200,
          field: 'secret',
          read: () => one,
        }
      },
    },
  ]

  for (const route of routes) {
    it(`${route.name}: the first answer alone shows the secret (no-store); a replay answers the same resource with it null; the store never holds it`, async () => {
      const { url, body, other, token, status, field, read } = await route.setUp()
      const key = randomUUID()
      const first = await keyed(url, body, key, token)
      assert.equal(first.statusCode, status, first.body)
      assert.equal(first.headers['cache-control'], 'no-store')
      assert.equal(first.headers['idempotent-replayed'], undefined)
      const secret = first.json()[field]
      assert.equal(typeof secret, 'string')
      assert.ok(secret.length >= 20)
      assert.ok(!(await stored()).includes(secret), 'the idempotency store holds no secret')

      const replay = await keyed(url, body, key, token)
      assert.equal(replay.statusCode, status, replay.body)
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      assert.equal(replay.headers['cache-control'], 'no-store')
      assert.equal(replay.headers.location, first.headers.location)
      assert.deepEqual(replay.json(), { ...first.json(), [field]: null })
      assert.ok(!replay.body.includes(secret))
      // The replay ran nothing: the resource is the first answer's, and its secret still the first one.
      const resource = await t.json(200, { url: read(first), token })
      for (const [name, value] of Object.entries(resource))
        if (name in first.json()) assert.deepEqual(value, first.json()[name], name)
      if (field === 'client_secret') await t.tokenFor(first.json().client_id, secret)
      else
        assert.equal(
          (
            await t.app.database.db
              .selectFrom('webhook_endpoints')
              .select('secret')
              .where('id', '=', first.json().id)
              .executeTakeFirstOrThrow()
          ).secret,
          secret,
        )

      // Another body under the key is refused (409), without a secret.
      const differing = await keyed(url, other, key, token)
      assert.equal(differing.statusCode, 409, differing.body)
      assert.equal(differing.json().code, 'conflict')
      assert.ok(!differing.body.includes(secret))
      assert.ok(!(await stored()).includes(secret))
    })
  }

  it('a client created with a key is one client, however often the request is replayed', async () => {
    const url = `/api/v1/companies/${c.id}/clients`
    const name = uniq('once')
    const key = randomUUID()
    const answers = [
      await keyed(url, { name, scopes: ['read:team'] }, key, c.token),
      await keyed(url, { name, scopes: ['read:team'] }, key, c.token),
    ]
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      [201, 201],
    )
    assert.equal(answers[1]!.json().client_secret, null)
    assert.equal(answers[1]!.json().client_id, answers[0]!.json().client_id)
    const clients = await t.json(200, { url, token: c.token })
    assert.equal(clients.filter((k: { name: string }) => k.name === name).length, 1)
    // The secret of the first answer is the one that works.
    await t.tokenFor(answers[0]!.json().client_id, answers[0]!.json().client_secret)
    const refusal = await keyed(url, { name, scopes: ['read:team'] }, 'k'.repeat(256), c.token)
    assert.equal(refusal.statusCode, 400)
    assert.match(refusal.json().errors, /idempotency-key/i)
  })

  it('two clients of one company using the same key on the same route get a result each (keys are per client)', async () => {
    const second = await companyClient(t, c.id)
    const secondToken = await t.tokenFor(second.client_id, second.client_secret)
    const key = randomUUID()
    const url = `/api/v1/companies/${c.id}/subsidiaries`
    const body = { name: uniq('Shared key') }
    const mine = await keyed(url, body, key, c.token)
    const theirs = await keyed(url, body, key, secondToken)
    assert.equal(mine.statusCode, 202, mine.body)
    assert.equal(theirs.statusCode, 202, theirs.body)
    assert.equal(theirs.headers['idempotent-replayed'], undefined, "the second client's request ran")
    assert.notEqual(locationId(theirs), locationId(mine))
    // With another body, the second client's key is still its own: no 409 from the first client's.
    const other = randomUUID()
    const endpoint = await keyed(companyEndpoints(c.id), { url: TARGET }, other, c.token)
    const endpoint2 = await keyed(companyEndpoints(c.id), { url: TARGET, description: 'theirs' }, other, secondToken)
    assert.equal(endpoint.statusCode, 201, endpoint.body)
    assert.equal(endpoint2.statusCode, 201, endpoint2.body)
    assert.notEqual(endpoint2.json().id, endpoint.json().id)
    assert.equal(typeof endpoint2.json().secret, 'string')
    const listed = await t.json(200, { url, token: c.token })
    assert.equal(listed.filter((s: { name: string }) => s.name === body.name).length, 2)
  })

  it(`migration ${ERASE} erases the secrets of answers kept before, and their replays answer the same resource with the secret null`, async () => {
    const migration = readMigrations().find((m) => m.version === ERASE)
    assert.ok(migration, `${ERASE} exists`)
    const db = t.app.database.db
    const json = 'application/json; charset=utf-8'
    // Three kept answers in the forms the migration's header describes: a webhook endpoint's
    // creation and a rotation with their secret in the body, a client's creation without a body.
    const made = await t.json(201, {
      method: 'POST',
      url: companyEndpoints(c.id),
      token: c.token,
      body: { url: TARGET },
    })
    const old = [
      {
        url: companyEndpoints(c.id),
        body: { url: TARGET, description: uniq('old') },
        field: 'secret',
        keep: (first: any, res: LightMyRequestResponse) => ({
          response_body: JSON.stringify(first),
          response_headers: JSON.stringify({ location: String(res.headers.location), 'content-type': json }),
        }),
      },
      {
        url: `${companyEndpoints(c.id)}/${made.id}/rotate_secret`,
        body: {},
        field: 'secret',
        keep: (first: any) => ({
          response_body: JSON.stringify(first),
          response_headers: JSON.stringify({ 'content-type': json }),
        }),
      },
      {
        url: `/api/v1/companies/${c.id}/clients`,
        body: { name: uniq('old'), scopes: ['read:team'] },
        field: 'client_secret',
        keep: (_first: any, res: LightMyRequestResponse) => ({
          response_body: null,
          response_headers: JSON.stringify({
            location: String(res.headers.location),
            'content-type': json,
            'cache-control': 'no-store',
          }),
        }),
      },
    ].map((o) => ({ ...o, key: randomUUID() }))
    const firsts: LightMyRequestResponse[] = []
    for (const o of old) {
      const first = await keyed(o.url, o.body, o.key, c.token)
      assert.ok(first.statusCode === 200 || first.statusCode === 201, first.body)
      firsts.push(first)
      await db.updateTable('idempotency_keys').set(o.keep(first.json(), first)).where('key', '=', o.key).execute()
    }
    // Not secrets: a description that quotes one, and an answer without a body, stay as they are.
    const quoted = {
      key: randomUUID(),
      status_code: 201,
      response_headers: JSON.stringify({ 'content-type': json }),
      response_body: JSON.stringify({ id: 'x', description: '"secret":"whsec_abc" "client_secret":"y"' }),
    }
    const empty = {
      key: randomUUID(),
      status_code: 202,
      response_headers: JSON.stringify({ location: '/api/v1/x' }),
      response_body: '',
    }
    for (const row of [quoted, empty])
      await db
        .insertInto('idempotency_keys')
        .values({ owner: c.client.client_id, request_hash: 'h', created_at: t.realClock.now(), ...row })
        .execute()
    assert.ok((await stored()).includes(firsts[0]!.json().secret))

    await sql.raw(migration.sql).execute(db)

    const text = await stored()
    for (const [i, o] of old.entries())
      assert.ok(!text.includes(firsts[i]!.json()[o.field]), `${o.url}: no secret kept`)
    for (const [i, o] of old.entries()) {
      const replay = await keyed(o.url, o.body, o.key, c.token)
      assert.equal(replay.statusCode, firsts[i]!.statusCode, replay.body)
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      assert.equal(replay.headers['cache-control'], 'no-store')
      assert.deepEqual(replay.json(), { ...firsts[i]!.json(), [o.field]: null })
    }
    const kept = new Map(
      (await db.selectFrom('idempotency_keys').selectAll().where('key', 'in', [quoted.key, empty.key]).execute()).map(
        (r) => [r.key, r],
      ),
    )
    assert.equal(kept.get(quoted.key)!.response_body, quoted.response_body)
    assert.deepEqual(kept.get(quoted.key)!.response_headers, { 'content-type': json })
    assert.equal(kept.get(empty.key)!.response_body, '')
    assert.deepEqual(kept.get(empty.key)!.response_headers, { location: '/api/v1/x' })
  })

  it('documents the secret fields as nullable, and Cache-Control and Idempotent-Replayed on their answers', async () => {
    const doc = (await t.call({ url: '/openapi.json', token: null })).json()
    const schemas = doc.components.schemas
    const allowsNull = (schema: any) =>
      (schema.anyOf ?? schema.oneOf ?? []).some((s: any) => s.type === 'null') || [schema.type].flat().includes('null')
    assert.ok(allowsNull(schemas.CreatedClient.properties.client_secret))
    assert.ok(allowsNull(schemas.CreatedWebhookEndpoint.properties.secret))
    const answers: Array<[string, string, string]> = [
      ['/api/v1/companies/{company_id}/clients', 'post', '201'],
      ['/api/v1/companies/{company_id}/webhook_endpoints', 'post', '201'],
      ['/api/v1/webhook_endpoints', 'post', '201'],
      ['/api/v1/companies/{company_id}/webhook_endpoints/{id}/rotate_secret', 'post', '200'],
      ['/api/v1/webhook_endpoints/{id}/rotate_secret', 'post', '200'],
    ]
    for (const [path, method, status] of answers) {
      const headers = doc.paths[path][method].responses[status].headers ?? {}
      assert.match(
        headers['Cache-Control']?.schema?.const ?? headers['Cache-Control']?.schema?.enum?.[0] ?? '',
        /^no-store$/,
        `${path} Cache-Control`,
      )
      assert.ok(headers['Idempotent-Replayed'], `${path} Idempotent-Replayed`)
    }
    // Every keyed answer may be a replay; only the ones with a secret are no-store.
    const subsidiary = doc.paths['/api/v1/companies/{company_id}/subsidiaries'].post.responses['202'].headers
    assert.ok(subsidiary['Idempotent-Replayed'])
    assert.equal(subsidiary['Cache-Control'], undefined)
  })
})
