import { it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { ADMIN } from './helpers/app.ts'
import { company } from './helpers/factories.ts'
import { ALL_SCOPE_STRINGS } from '../src/modules/oauth/scopes.ts'
import { hashChosenSecret, MAX_WAITING_HASHES } from '../src/modules/oauth/oauth.secrets.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Client secrets at rest (docs/adr/0023-client-secrets-and-signing-keys.md): a secret a person chose
 * (the platform client's, ADMIN_CLIENT_SECRET) is stored with scrypt, salted, its parameters
 * beside it; a row of the previous version (unsalted SHA-256) still authenticates and is
 * upgraded.
 */

const TOKEN = '/oauth/token'
const SCRYPT = /^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex')

onEachEngine('client secrets', (t) => {
  const token = (client_id: string, client_secret: string) =>
    t.call({
      method: 'POST',
      url: TOKEN,
      token: null,
      body: { grant_type: 'client_credentials', client_id, client_secret },
    })
  const storedHash = async (clientId: string) =>
    (
      await t.app.database.db
        .selectFrom('oauth_clients')
        .select('secret_hash')
        .where('client_id', '=', clientId)
        .executeTakeFirstOrThrow()
    ).secret_hash

  async function expectInvalidClient(clientId: string, secret: string) {
    const res = await token(clientId, secret)
    assert.equal(res.statusCode, 401, res.body)
    assert.equal(res.json().error, 'invalid_client')
  }

  it('stores the configured platform secret with scrypt, salted: never a bare SHA-256, never the same twice', async () => {
    const stored = await storedHash(ADMIN.client_id)
    assert.notEqual(stored, sha256(ADMIN.client_secret))
    assert.ok(!stored.includes(ADMIN.client_secret))
    assert.match(stored, SCRYPT)

    // A second platform client with the same secret (another deployment's ADMIN_CLIENT_ID): another salt, another hash.
    await t.app.services.oauth.ensureAdminClient({ id: 'admin-two', secret: ADMIN.client_secret })
    const other = await storedHash('admin-two')
    assert.match(other, SCRYPT)
    assert.notEqual(other, stored)
    assert.notEqual(other.split('$')[4], stored.split('$')[4], 'different salts')

    for (const id of [ADMIN.client_id, 'admin-two']) {
      assert.equal((await token(id, ADMIN.client_secret)).statusCode, 200)
      // After a success (whose verification the service may keep), a wrong secret is still refused.
      await expectInvalidClient(id, `${ADMIN.client_secret}x`)
      await expectInvalidClient(id, ADMIN.client_secret.slice(0, -1))
      await expectInvalidClient(id, '')
      assert.equal((await token(id, ADMIN.client_secret)).statusCode, 200)
    }
  })

  it('a flood of wrong secrets at a platform client is told to come back (503 + Retry-After) past a short queue; past ten wrong ones the id is locked for a minute', async () => {
    // A platform client that no start-up configured and no request verified yet: every guess costs a scrypt.
    const id = 'admin-flooded'
    await t.app.database.db
      .insertInto('oauth_clients')
      .values({
        client_id: id,
        secret_hash: await hashChosenSecret(ADMIN.client_secret),
        name: 'admin',
        company_id: null,
        scopes: [...ALL_SCOPE_STRINGS],
      })
      .execute()
    const guesses = await Promise.all(
      Array.from({ length: MAX_WAITING_HASHES * 3 }, (_, i) => token(id, `wrong-secret-${i}`)),
    )
    const statuses = guesses.map((res) => res.statusCode)
    assert.deepEqual(
      [...new Set(statuses)].sort(),
      [401, 429, 503],
      'every guess refused (401), sent back (503), or locked out past the tenth wrong one (429)',
    )
    const busy = guesses.find((res) => res.statusCode === 503)!
    assert.equal(busy.headers['retry-after'], '1')
    assert.deepEqual(Object.keys(busy.json()).sort(), ['code', 'errors'])
    assert.equal(statuses.filter((s) => s === 401).length, 10, 'ten wrong secrets told apart, no more')
    assert.equal((await token(id, ADMIN.client_secret)).statusCode, 429)
    t.realClock.advance(60_000)
    assert.equal((await token(id, ADMIN.client_secret)).statusCode, 200)
  })

  it('a start-up with a changed secret forgets the old one, however recently it was verified', async () => {
    const id = 'admin-changing'
    const first = 'first-chosen-secret-0123'
    const second = 'second-chosen-secret-0123'
    await t.app.services.oauth.ensureAdminClient({ id, secret: first })
    assert.equal((await token(id, first)).statusCode, 200)
    assert.equal((await token(id, first)).statusCode, 200)
    await t.app.services.oauth.ensureAdminClient({ id, secret: second })
    await expectInvalidClient(id, first)
    assert.equal((await token(id, second)).statusCode, 200)
    // Started again with the same secret: the stored hash stays as it is (no needless write).
    const before = await storedHash(id)
    await t.app.services.oauth.ensureAdminClient({ id, secret: second })
    assert.equal(await storedHash(id), before)
  })

  it('a platform client of the previous version (unsalted SHA-256) still authenticates, and its hash is upgraded at its next use', async () => {
    const id = 'legacy-admin'
    const secret = 'a-secret-a-person-chose-long-ago'
    await t.app.database.db
      .insertInto('oauth_clients')
      .values({
        client_id: id,
        secret_hash: sha256(secret),
        name: 'admin',
        company_id: null,
        scopes: [...ALL_SCOPE_STRINGS],
      })
      .execute()
    await expectInvalidClient(id, 'not-the-secret')
    assert.equal(await storedHash(id), sha256(secret), 'a failed attempt changes nothing')

    const res = await token(id, secret)
    assert.equal(res.statusCode, 200, res.body)
    await t.json(200, { url: '/api/v1/subscription/plans', token: res.json().access_token })
    const upgraded = await storedHash(id)
    assert.match(upgraded, SCRYPT)
    assert.equal((await token(id, secret)).statusCode, 200)
    await expectInvalidClient(id, 'not-the-secret')
    assert.equal(await storedHash(id), upgraded)
  })

  it('the configured platform client of the previous version is upgraded at start-up', async () => {
    const id = 'legacy-configured'
    const secret = 'configured-before-the-upgrade'
    await t.app.database.db
      .insertInto('oauth_clients')
      .values({
        client_id: id,
        secret_hash: sha256(secret),
        name: 'admin',
        company_id: null,
        scopes: [...ALL_SCOPE_STRINGS],
      })
      .execute()
    await t.app.services.oauth.ensureAdminClient({ id, secret })
    assert.match(await storedHash(id), SCRYPT)
    assert.equal((await token(id, secret)).statusCode, 200)
  })

  it("keeps company clients' generated secrets (256 random bits) as SHA-256, and still refuses a wrong one", async () => {
    const a = await company(t)
    const client = await t.json(201, {
      method: 'POST',
      url: `/api/v1/companies/${a.id}/clients`,
      body: { name: 'hr', scopes: ['read:company'] },
    })
    assert.equal(await storedHash(client.client_id), sha256(client.client_secret))
    assert.equal((await token(client.client_id, client.client_secret)).statusCode, 200)
    await expectInvalidClient(client.client_id, `${client.client_secret}x`)
  })
})
