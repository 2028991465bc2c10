import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { ADMIN, buildTestApp, type TestApp } from '../helpers/app.ts'
import { ALL_SCOPE_STRINGS } from '../../src/modules/oauth/scopes.ts'

/**
 * What /docs offers to authorize with: one OAuth 2.0 scheme, client credentials only, with the
 * scopes some route requires, no more, no fewer. Each operation's requirement is checked
 * against what the route does: a token holding every scope but the one named is refused with
 * 403 naming it, and a token holding no scope the routes use gets no 403 insufficient_scope
 * from a route documented as needing none.
 */

type Operation = { operationId: string; security?: Array<Record<string, string[]>>; 'x-platform-only'?: boolean }
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const

describe('the security schemes of /openapi.json', () => {
  let t: TestApp
  let doc: any
  let operations: Array<{ method: string; path: string; op: Operation }>
  before(async () => {
    t = await buildTestApp('pglite')
    doc = await t.json(200, { url: '/openapi.json', token: null })
    operations = Object.entries<Record<string, Operation>>(doc.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => ({ method: m.toUpperCase(), path, op: item[m]! })),
    )
  })
  after(async () => {
    await t?.close()
  })

  const offered = () =>
    doc.components.securitySchemes.oauth2.flows as Record<string, { tokenUrl?: string; scopes: Record<string, string> }>
  const required = () => new Set(operations.flatMap(({ op }) => (op.security ?? []).flatMap((s) => s.oauth2 ?? [])))

  it("offers one OAuth 2.0 scheme with the client-credentials flow only; the Chargebee webhook's HTTP Basic is the only other scheme", () => {
    assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['chargebeeBasic', 'oauth2'])
    assert.equal(doc.components.securitySchemes.oauth2.type, 'oauth2')
    assert.deepEqual(Object.keys(offered()), ['clientCredentials'])
    assert.equal(offered().clientCredentials!.tokenUrl, '/oauth/token')
    const basic = operations
      .filter(({ op }) => (op.security ?? []).some((s) => 'chargebeeBasic' in s))
      .map(({ op }) => op.operationId)
    assert.deepEqual(basic, ['receiveChargebeeWebhook'])
    // Every requirement names a scheme of the document.
    for (const { method, path, op } of operations) {
      for (const s of op.security ?? [])
        for (const name of Object.keys(s))
          assert.ok(name in doc.components.securitySchemes, `${method} ${path} names ${name}`)
    }
  })

  it('offers exactly the scopes that some route requires, each with a one-line description', () => {
    const scopes = offered().clientCredentials!.scopes
    assert.deepEqual(Object.keys(scopes).sort(), [...required()].sort())
    assert.ok(Object.keys(scopes).length >= 10, 'the areas of the routes are there')
    for (const [scope, description] of Object.entries(scopes)) {
      assert.ok(ALL_SCOPE_STRINGS.includes(scope), `${scope} is a scope of the specification`)
      assert.match(description, /^[A-Z][^\n]{10,160}$/, `${scope} has a one-line description`)
    }
    // The areas no route uses are not offered.
    for (const unused of ['read:expense', 'write:stamping', 'read:calendar'])
      assert.ok(!(unused in scopes), `${unused} is not offered`)
  })

  it('names, on each operation, the scope its route checks', async () => {
    const failures: string[] = []
    const tokens = new Map<string, string>()
    const without = async (scope: string) => {
      if (!tokens.has(scope))
        tokens.set(
          scope,
          await t.tokenFor(
            ADMIN.client_id,
            ADMIN.client_secret,
            ALL_SCOPE_STRINGS.filter((s) => s !== scope).join(' '),
          ),
        )
      return tokens.get(scope)!
    }
    // A scope of the specification that no route requires: a token holding only it holds none that matters.
    const unrelated = ALL_SCOPE_STRINGS.find((s) => !required().has(s))!
    const none = await t.tokenFor(ADMIN.client_id, ADMIN.client_secret, unrelated)
    for (const { method, path, op } of operations) {
      const needs = (op.security ?? []).flatMap((s) => s.oauth2 ?? [])
      if (!(op.security ?? []).some((s) => 'oauth2' in s)) continue
      const url = path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000')
      const call = { method: method as 'POST', url, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) }
      if (needs.length > 0) {
        const res = await t.call({ ...call, token: await without(needs[0]!) })
        if (res.statusCode !== 403 || res.json().errors !== `The token lacks the scope ${needs[0]}`)
          failures.push(`${method} ${path} (${needs[0]}): ${res.statusCode} ${res.body.slice(0, 120)}`)
      } else {
        const res = await t.call({ ...call, token: none })
        if (res.statusCode === 403 && res.json().code === 'insufficient_scope')
          failures.push(`${method} ${path} (documented without a scope): ${res.body}`)
      }
    }
    assert.deepEqual(failures, [])
  })

  it('marks the routes only platform clients may call', () => {
    const marked = operations.filter(({ op }) => op['x-platform-only'] === true).map(({ op }) => op.operationId)
    for (const id of ['createCompany', 'listCompanies', 'createPlan', 'enableCompany'])
      assert.ok(marked.includes(id), `${id} is platform-only`)
    for (const id of ['getCompany', 'listTeams', 'issueToken'])
      assert.ok(!marked.includes(id), `${id} is not platform-only`)
  })
})
