import { it, after } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { ADMIN } from './helpers/app.ts'
import { company, companyClient, contract } from './helpers/factories.ts'
import { companyEndpoints, endpointSteps, type Receiver } from './helpers/webhook-endpoints.ts'
import { createWebhookEndpointsRepository } from '../src/modules/webhook-endpoints/webhook-endpoints.repository.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Who may point an endpoint somewhere, and who answers for it (decisions §9.1; docs/webhooks.md,
 * "Who may change an endpoint" and "Who made it"): the scopes every sending change needs, the
 * creator recorded, and the endpoint stopped with its creator or its company.
 */
onEachEngine("webhook endpoints' access", { WEBHOOK_ALLOW_PRIVATE_TARGETS: true, WEBHOOK_TIMEOUT_MS: 5_000 }, (t) => {
  const { receivers, listen, endpoint, deliverNow } = endpointSteps(() => t)
  after(async () => {
    for (const r of receivers) await r.close()
  })

  const typesAt = (r: Receiver) => r.received.map((got) => JSON.parse(got.body).type as string)
  const disable = (id: string) =>
    sql`UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'Disabled: three days of failures' WHERE id = ${id}`.execute(
      t.app.database.db,
    )

  /** A company client's token with these scopes, and its id. */
  async function clientWith(companyId: string, scopes: string[]) {
    const client = await companyClient(t, companyId, scopes)
    return { id: client.client_id, token: await t.tokenFor(client.client_id, client.client_secret) }
  }

  /** Asserts a 403 insufficient_scope naming `scope`, in the sentence and in WWW-Authenticate. */
  function assertMissing(
    res: { statusCode: number; body: string; headers: Record<string, unknown>; json(): any },
    scope: string,
  ) {
    assert.equal(res.statusCode, 403, res.body)
    assert.equal(res.json().code, 'insufficient_scope')
    assert.match(res.json().errors, new RegExp(scope))
    assert.match(res.headers['www-authenticate'] as string, new RegExp(`scope="${scope}"`))
  }

  it('lets a company token change the url or types, rotate, re-enable or test an endpoint only when it may read all it is sent', async () => {
    const c = await company(t)
    const narrow = await clientWith(c.id, ['read:company', 'write:company'])
    const writeOnly = await clientWith(c.id, ['write:company'])
    // Made by a token that reads every area, with every type: sent contract events among others.
    const wide = await endpoint(c.id, { url: 'https://example.com/wide' }, c.token)
    const one = `${companyEndpoints(c.id)}/${wide.id}`
    const calls = [
      { method: 'PATCH', url: one, body: { url: 'https://attacker.example.com/x' } },
      { method: 'PATCH', url: one, body: { event_types: ['company.*', 'contract.*'] } },
      { method: 'POST', url: `${one}/rotate_secret`, body: {} },
      { method: 'POST', url: `${one}/test` },
    ] as const
    for (const call of calls) assertMissing(await t.call({ ...call, token: narrow.token }), 'read:contract')
    // Without read:company, the company's own events are missing first.
    for (const call of calls) assertMissing(await t.call({ ...call, token: writeOnly.token }), 'read:company')
    await disable(wide.id)
    assertMissing(
      await t.call({ method: 'PATCH', url: one, token: narrow.token, body: { enabled: true } }),
      'read:contract',
    )
    // Nothing changed by the refused calls.
    const now = await t.json<any>(200, { url: one, token: c.token })
    assert.equal(now.url, 'https://example.com/wide')
    assert.deepEqual(now.event_types, [])
    assert.equal(now.enabled, false)

    // What does not send more, or sends nothing, needs write:company alone.
    assert.equal(
      (await t.json<any>(200, { method: 'PATCH', url: one, token: writeOnly.token, body: { description: 'Noted' } }))
        .description,
      'Noted',
    )
    assert.equal(
      (await t.json<any>(200, { method: 'PATCH', url: one, token: writeOnly.token, body: { enabled: false } })).enabled,
      false,
    )
    // Narrowed to what the token reads, the endpoint is then the token's to change.
    const narrowed = await t.json<any>(200, {
      method: 'PATCH',
      url: one,
      token: narrow.token,
      body: { event_types: ['company.*', 'subscription.*'], enabled: true },
    })
    assert.equal(narrowed.enabled, true)
    assert.equal(
      (
        await t.json<any>(200, {
          method: 'PATCH',
          url: one,
          token: narrow.token,
          body: { url: 'https://example.com/moved' },
        })
      ).url,
      'https://example.com/moved',
    )
    assert.equal(
      (await t.call({ method: 'POST', url: `${one}/rotate_secret`, token: narrow.token, body: {} })).statusCode,
      200,
    )
    assert.equal((await t.call({ method: 'POST', url: `${one}/test`, token: narrow.token })).statusCode, 202)
    assert.equal((await t.call({ method: 'DELETE', url: one, token: writeOnly.token })).statusCode, 204)
  })

  it('counts what an endpoint made by the platform, or before creators were recorded, is sent: every area its types name', async () => {
    const c = await company(t)
    const narrow = await clientWith(c.id, ['read:company', 'write:company'])
    const every = await endpoint(c.id, { url: 'https://example.com/every' })
    const teams = await endpoint(c.id, {
      url: 'https://example.com/teams',
      event_types: ['company.updated', 'team.member_added'],
    })
    const own = await endpoint(c.id, { url: 'https://example.com/own', event_types: ['company.*', 'invoice.paid'] })
    assertMissing(
      await t.call({
        method: 'PATCH',
        url: `${companyEndpoints(c.id)}/${every.id}`,
        token: narrow.token,
        body: { url: 'https://example.com/x' },
      }),
      'read:contract',
    )
    assertMissing(
      await t.call({ method: 'POST', url: `${companyEndpoints(c.id)}/${teams.id}/rotate_secret`, token: narrow.token }),
      'read:team',
    )
    assert.equal(
      (await t.call({ method: 'POST', url: `${companyEndpoints(c.id)}/${own.id}/rotate_secret`, token: narrow.token }))
        .statusCode,
      200,
    )
  })

  it('leaves platform tokens and a company token that reads every area unaffected', async () => {
    const c = await company(t)
    const r = await listen()
    const created = await endpoint(c.id, { url: 'https://example.com/a' })
    const one = `${companyEndpoints(c.id)}/${created.id}`
    for (const token of [t.platformToken, c.token]) {
      assert.equal(
        (await t.call({ method: 'PATCH', url: one, token, body: { url: r.url, event_types: ['contract.*'] } }))
          .statusCode,
        200,
      )
      assert.equal((await t.call({ method: 'POST', url: `${one}/rotate_secret`, token, body: {} })).statusCode, 200)
      assert.equal((await t.call({ method: 'POST', url: `${one}/test`, token })).statusCode, 202)
      await disable(created.id)
      assert.equal(
        (await t.json<any>(200, { method: 'PATCH', url: one, token, body: { enabled: true } })).enabled,
        true,
      )
    }
    const platform = await endpoint(null, { url: 'https://example.com/p' })
    assert.equal(
      (
        await t.call({
          method: 'PATCH',
          url: `/api/v1/webhook_endpoints/${platform.id}`,
          body: { url: 'https://example.com/q' },
        })
      ).statusCode,
      200,
    )
    // Platform endpoints hear every company: gone before another test delivers.
    assert.equal((await t.call({ method: 'DELETE', url: `/api/v1/webhook_endpoints/${platform.id}` })).statusCode, 204)
  })

  it('records the client that created an endpoint as created_by, in every answer', async () => {
    const c = await company(t)
    const byCompany = await endpoint(c.id, { url: 'https://example.com/c' }, c.token)
    const byPlatform = await endpoint(c.id, { url: 'https://example.com/p' })
    const platforms = await endpoint(null, { url: 'https://example.com/all' })
    assert.equal(byCompany.created_by, c.client.client_id)
    assert.equal(byPlatform.created_by, ADMIN.client_id)
    assert.equal(platforms.created_by, ADMIN.client_id)
    const listed = await t.json<any[]>(200, { url: companyEndpoints(c.id), token: c.token })
    assert.deepEqual(
      listed.map((e) => e.created_by),
      [c.client.client_id, ADMIN.client_id],
    )
    assert.equal(
      (await t.json<any>(200, { url: `${companyEndpoints(c.id)}/${byCompany.id}`, token: c.token })).created_by,
      c.client.client_id,
    )
    assert.equal(
      (
        await t.json<any>(200, {
          method: 'PATCH',
          url: `${companyEndpoints(c.id)}/${byCompany.id}`,
          body: { description: 'x' },
        })
      ).created_by,
      c.client.client_id,
    )
    assert.equal(
      (
        await t.json<any>(200, {
          method: 'POST',
          url: `${companyEndpoints(c.id)}/${byCompany.id}/rotate_secret`,
          body: {},
        })
      ).created_by,
      c.client.client_id,
    )
    assert.equal((await t.call({ method: 'DELETE', url: `/api/v1/webhook_endpoints/${platforms.id}` })).statusCode, 204)
  })

  it('stops the endpoints of a revoked client (client_revoked): what was written before is sent, nothing after', async () => {
    const c = await company(t)
    const a = await clientWith(c.id, ['read:company', 'write:company', 'read:contract'])
    const b = await clientWith(c.id, ['read:company', 'write:company', 'read:contract'])
    const [ra, rb, rp] = [await listen(), await listen(), await listen()]
    const ofA = await endpoint(c.id, { url: ra.url, event_types: ['contract.*'] }, a.token)
    const ofB = await endpoint(c.id, { url: rb.url, event_types: ['contract.*'] }, b.token)
    const ofPlatform = await endpoint(c.id, { url: rp.url, event_types: ['contract.*'] })
    const before = await contract(t, c.id)
    assert.equal((await t.call({ method: 'DELETE', url: `/api/v1/companies/${c.id}/clients/${a.id}` })).statusCode, 204)
    const after = await contract(t, c.id)
    await deliverNow()

    const stopped = await t.json<any>(200, { url: `${companyEndpoints(c.id)}/${ofA.id}` })
    assert.equal(stopped.enabled, false)
    assert.equal(stopped.disabled_reason, 'client_revoked')
    assert.equal(stopped.created_by, a.id)
    const ids = (r: Receiver) => r.received.map((got) => JSON.parse(got.body).data.object.id)
    assert.deepEqual(ids(ra), [before])
    assert.deepEqual(ids(rb).sort(), [before, after].sort())
    assert.deepEqual(ids(rp).sort(), [before, after].sort())
    for (const other of [ofB, ofPlatform])
      assert.equal((await t.json<any>(200, { url: `${companyEndpoints(c.id)}/${other.id}` })).enabled, true)
    // A ping to it is refused: it sends nothing. Disabling it again keeps the reason it stopped for.
    assert.equal((await t.call({ method: 'POST', url: `${companyEndpoints(c.id)}/${ofA.id}/test` })).statusCode, 409)
    assert.equal(
      (
        await t.json<any>(200, {
          method: 'PATCH',
          url: `${companyEndpoints(c.id)}/${ofA.id}`,
          body: { enabled: false },
        })
      ).disabled_reason,
      'client_revoked',
    )
  })

  it("stops a company's endpoints when it is disabled (company_disabled): company.disabled is the last event they are sent", async () => {
    const c = await company(t)
    const [rc, rp, rall] = [await listen(), await listen(), await listen()]
    const ofCompany = await endpoint(c.id, { url: rc.url }, c.token)
    const byPlatform = await endpoint(c.id, { url: rp.url })
    const platforms = await endpoint(null, { url: rall.url, event_types: ['contract.*', 'company.*'] })
    const before = await contract(t, c.id)
    assert.equal((await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}` })).statusCode, 202)
    // The platform still writes for a disabled company: its events go to the platform's endpoints only.
    const after = await contract(t, c.id)
    await deliverNow()

    for (const [created, r] of [
      [ofCompany, rc],
      [byPlatform, rp],
    ] as const) {
      const stopped = await t.json<any>(200, { url: `${companyEndpoints(c.id)}/${created.id}` })
      assert.equal(stopped.enabled, false)
      assert.equal(stopped.disabled_reason, 'company_disabled')
      // Delivered concurrently, so compared as a set: the event before, the disabling, nothing after.
      assert.deepEqual(typesAt(r).sort(), ['company.disabled', 'contract.created'])
      assert.deepEqual(
        r.received.map((got) => JSON.parse(got.body).data.object.id).filter((id) => id !== c.id),
        [before],
      )
    }
    const seen = rall.received.map((got) => JSON.parse(got.body).data.object.id)
    assert.ok(seen.includes(before) && seen.includes(after), JSON.stringify(typesAt(rall)))
    assert.equal((await t.json<any>(200, { url: `/api/v1/webhook_endpoints/${platforms.id}` })).enabled, true)
    // Enabling the company enables no endpoint: it is re-enabled explicitly.
    assert.equal((await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}/enable` })).statusCode, 202)
    assert.equal((await t.json<any>(200, { url: `${companyEndpoints(c.id)}/${ofCompany.id}` })).enabled, false)
  })

  it('sends a stopped endpoint what it is owed through the queue too, when its slots were full at the fan-out', async () => {
    const c = await company(t)
    const r = await listen()
    const created = await endpoint(c.id, { url: r.url }, c.token)
    const before = await contract(t, c.id)
    assert.equal((await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}` })).statusCode, 202)
    const after = await contract(t, c.id)
    // No free slot: every event the fan-out finds for the endpoint becomes a queued delivery, which the claim takes.
    const now = new Date(Date.now() + 1000)
    await createWebhookEndpointsRepository(t.app.database.db).fanOutDue({
      now,
      leaseUntil: new Date(now.getTime() + 60_000),
      bound: 0,
      busy: [],
      batch: 1000,
    })
    const queued = await sql<{
      n: number
    }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ${created.id} AND status = 'pending'`.execute(
      t.app.database.db,
    )
    assert.equal(queued.rows[0]!.n, 2)
    await deliverNow()
    assert.deepEqual(typesAt(r).sort(), ['company.disabled', 'contract.created'])
    const ids = r.received.map((got) => JSON.parse(got.body).data.object.id)
    assert.ok(ids.includes(before) && !ids.includes(after), JSON.stringify(ids))
  })

  it('makes the client that points an endpoint elsewhere, or changes what it is sent, the one it answers to', async () => {
    const c = await company(t)
    const a = await clientWith(c.id, ['read:company', 'write:company', 'read:contract'])
    const b = await clientWith(c.id, ['read:company', 'write:company', 'read:contract'])
    const created = await endpoint(c.id, { url: 'https://example.com/a', event_types: ['contract.*'] }, a.token)
    const one = `${companyEndpoints(c.id)}/${created.id}`
    assert.equal(
      (await t.json<any>(200, { method: 'PATCH', url: one, token: b.token, body: { description: 'only words' } }))
        .created_by,
      a.id,
    )
    assert.equal(
      (await t.json<any>(200, { method: 'PATCH', url: one, token: b.token, body: { url: 'https://example.com/b' } }))
        .created_by,
      b.id,
    )
    assert.equal(
      (
        await t.json<any>(200, {
          method: 'PATCH',
          url: one,
          token: a.token,
          body: { event_types: ['contract.created'] },
        })
      ).created_by,
      a.id,
    )
    assert.equal(
      (await t.json<any>(200, { method: 'PATCH', url: one, token: b.token, body: { url: 'https://example.com/b2' } }))
        .created_by,
      b.id,
    )
    // Revoking the client it answered to before changes nothing; revoking the one that pointed it stops it.
    assert.equal((await t.call({ method: 'DELETE', url: `/api/v1/companies/${c.id}/clients/${a.id}` })).statusCode, 204)
    assert.equal((await t.json<any>(200, { url: one })).enabled, true)
    assert.equal((await t.call({ method: 'DELETE', url: `/api/v1/companies/${c.id}/clients/${b.id}` })).statusCode, 204)
    const stopped = await t.json<any>(200, { url: one })
    assert.equal(stopped.enabled, false)
    assert.equal(stopped.disabled_reason, 'client_revoked')
  })

  it('re-enables a stopped endpoint for a client that may read all it is sent, which then answers for it; never while its company is disabled', async () => {
    const c = await company(t)
    const a = await clientWith(c.id, ['read:company', 'write:company', 'read:contract'])
    const narrow = await clientWith(c.id, ['read:company', 'write:company'])
    const b = await clientWith(c.id, ['read:company', 'write:company', 'read:contract'])
    const r = await listen()
    const created = await endpoint(c.id, { url: r.url, event_types: ['contract.*'] }, a.token)
    const one = `${companyEndpoints(c.id)}/${created.id}`
    assert.equal((await t.call({ method: 'DELETE', url: `/api/v1/companies/${c.id}/clients/${a.id}` })).statusCode, 204)
    assertMissing(
      await t.call({ method: 'PATCH', url: one, token: narrow.token, body: { enabled: true } }),
      'read:contract',
    )

    const again = await t.json<any>(200, { method: 'PATCH', url: one, token: b.token, body: { enabled: true } })
    assert.equal(again.enabled, true)
    assert.equal(again.disabled_reason, null)
    assert.equal(again.created_by, b.id)
    const k = await contract(t, c.id)
    await deliverNow()
    assert.deepEqual(
      r.received.map((got) => JSON.parse(got.body).data.object.id),
      [k],
    )
    // Now b's: revoking b stops it again.
    assert.equal((await t.call({ method: 'DELETE', url: `/api/v1/companies/${c.id}/clients/${b.id}` })).statusCode, 204)
    assert.equal((await t.json<any>(200, { url: one })).disabled_reason, 'client_revoked')

    // While the company is disabled, nothing re-enables it, nor makes one for it: 409.
    assert.equal((await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}` })).statusCode, 202)
    const refused = await t.call({ method: 'PATCH', url: one, body: { enabled: true } })
    assert.equal(refused.statusCode, 409, refused.body)
    assert.equal(refused.json().code, 'conflict')
    assert.equal(
      (await t.call({ method: 'POST', url: companyEndpoints(c.id), body: { url: 'https://example.com/x' } }))
        .statusCode,
      409,
    )
    assert.equal((await t.json<any>(200, { url: one })).enabled, false)
    assert.equal((await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}/enable` })).statusCode, 202)
    const byPlatform = await t.json<any>(200, { method: 'PATCH', url: one, body: { enabled: true } })
    assert.equal(byPlatform.enabled, true)
    assert.equal(byPlatform.created_by, ADMIN.client_id)
  })
})
