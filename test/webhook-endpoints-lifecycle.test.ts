import { it, after } from 'node:test'
import assert from 'node:assert/strict'
import { Webhook } from 'standardwebhooks'
import { sql } from 'kysely'
import { company, companyClient, contract } from './helpers/factories.ts'
import { companyEndpoints, endpointSteps, type Receiver } from './helpers/webhook-endpoints.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/** Re-enabling and changing an endpoint (PATCH), and rotating its secret (docs/webhooks.md). */
onEachEngine(
  "webhook endpoints' lifecycle",
  { WEBHOOK_ALLOW_PRIVATE_TARGETS: true, WEBHOOK_TIMEOUT_MS: 5_000 },
  (t) => {
    const { receivers, listen, endpoint, deliverNow } = endpointSteps(() => t)
    after(async () => {
      for (const r of receivers) await r.close()
    })

    /** Sends a ping and delivers it now; answers what the receiver got. */
    async function ping(companyId: string, id: string, r: Receiver) {
      const res = await t.call({ method: 'POST', url: `${companyEndpoints(companyId)}/${id}/test` })
      assert.equal(res.statusCode, 202, res.body)
      await deliverNow()
      const got = r.received.at(-1)!
      assert.equal(got.headers['webhook-id'], res.json().id)
      return got
    }

    it('re-enables an endpoint disabled after its failures, and changes its url, types and description', async () => {
      const c = await company(t)
      const r = await listen()
      const created = await endpoint(c.id, { url: 'https://example.com/old', event_types: ['contract.created'] })
      const one = `${companyEndpoints(c.id)}/${created.id}`
      // As the last failed retry leaves it (delivery.ts).
      await sql`UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'Disabled: three days of failures' WHERE id = ${created.id}`.execute(
        t.app.database.db,
      )
      assert.equal((await t.call({ method: 'POST', url: `${one}/test`, token: c.token })).statusCode, 409)

      const updated = await t.json<any>(200, {
        method: 'PATCH',
        url: one,
        token: c.token,
        body: { enabled: true, url: r.url, event_types: ['team.*'], description: 'Fixed' },
      })
      assert.deepEqual(
        { ...updated, created_at: undefined },
        {
          id: created.id,
          company_id: c.id,
          url: r.url,
          event_types: ['team.*'],
          description: 'Fixed',
          enabled: true,
          disabled_reason: null,
          // Re-enabled by the company's client, which now answers for it.
          created_by: c.client.client_id,
          previous_secret_expires_at: null,
          created_at: undefined,
        },
      )
      assert.deepEqual(await t.json(200, { url: one, token: c.token }), updated)
      const got = await ping(c.id, created.id, r)
      assert.equal((new Webhook(created.secret).verify(got.body, got.headers) as { type: string }).type, 'ping')

      // Disabled by the client: a reason says so; nothing is sent. An empty body changes nothing.
      const off = await t.json<any>(200, { method: 'PATCH', url: one, token: c.token, body: { enabled: false } })
      assert.equal(off.enabled, false)
      assert.match(off.disabled_reason, /through the API/)
      assert.equal((await t.call({ method: 'POST', url: `${one}/test`, token: c.token })).statusCode, 409)
      assert.deepEqual(await t.json(200, { method: 'PATCH', url: one, token: c.token, body: {} }), off)
      // The platform's own endpoints take the same PATCH.
      const platform = await t.json<any>(201, {
        method: 'POST',
        url: '/api/v1/webhook_endpoints',
        body: { url: 'https://example.com/p' },
      })
      assert.equal(
        (
          await t.json<any>(200, {
            method: 'PATCH',
            url: `/api/v1/webhook_endpoints/${platform.id}`,
            body: { description: 'All' },
          })
        ).description,
        'All',
      )
    })

    it('rotates the secret: the new one is shown once, the old one signs beside it until its time, then alone the new', async () => {
      const c = await company(t)
      const r = await listen()
      const created = await endpoint(c.id, { url: r.url })
      const one = `${companyEndpoints(c.id)}/${created.id}`
      const before = Date.now()
      const rotated = await t.json<any>(200, { method: 'POST', url: `${one}/rotate_secret`, token: c.token })
      assert.match(rotated.secret, /^whsec_[A-Za-z0-9+/]+=*$/)
      assert.notEqual(rotated.secret, created.secret)
      const until = Date.parse(rotated.previous_secret_expires_at)
      assert.ok(
        until >= before + 86_400_000 - 1000 && until <= Date.now() + 86_400_000 + 1000,
        rotated.previous_secret_expires_at,
      )
      const shown = await t.json<any>(200, { url: one, token: c.token })
      assert.equal(shown.secret, undefined)
      assert.equal(shown.previous_secret_expires_at, rotated.previous_secret_expires_at)

      // Two signatures: a receiver with either secret accepts the delivery.
      let got = await ping(c.id, created.id, r)
      assert.equal(got.headers['webhook-signature']!.split(' ').length, 2)
      new Webhook(rotated.secret).verify(got.body, got.headers)
      new Webhook(created.secret).verify(got.body, got.headers)

      // A rotation with no grace: the secret it replaces stops at once.
      const again = await t.json<any>(200, {
        method: 'POST',
        url: `${one}/rotate_secret`,
        token: c.token,
        body: { previous_secret_expires_in: 0 },
      })
      assert.equal(again.previous_secret_expires_at, null)
      got = await ping(c.id, created.id, r)
      assert.equal(got.headers['webhook-signature']!.split(' ').length, 1)
      new Webhook(again.secret).verify(got.body, got.headers)
      assert.throws(() => new Webhook(rotated.secret).verify(got.body, got.headers))

      // A grace that has run out signs nothing more.
      const short = await t.json<any>(200, {
        method: 'POST',
        url: `${one}/rotate_secret`,
        token: c.token,
        body: { previous_secret_expires_in: 60 },
      })
      await sql`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = ${created.id}`.execute(
        t.app.database.db,
      )
      assert.equal((await t.json<any>(200, { url: one, token: c.token })).previous_secret_expires_at, null)
      got = await ping(c.id, created.id, r)
      assert.equal(got.headers['webhook-signature']!.split(' ').length, 1)
      new Webhook(short.secret).verify(got.body, got.headers)
      assert.throws(() => new Webhook(again.secret).verify(got.body, got.headers))
    })

    it('sends a company endpoint only the events of the areas its creator could read; naming others is a 403', async () => {
      const c = await company(t)
      const narrow = await companyClient(t, c.id, ['read:company', 'write:company'])
      const token = await t.tokenFor(narrow.client_id, narrow.client_secret)
      const refused = await t.call({
        method: 'POST',
        url: companyEndpoints(c.id),
        token,
        body: { url: 'https://example.com/hook', event_types: ['company.updated', 'contract.*'] },
      })
      assert.equal(refused.statusCode, 403, refused.body)
      assert.equal(refused.json().code, 'insufficient_scope')
      assert.match(refused.headers['www-authenticate'] as string, /scope="read:contract"/)

      const narrowReceiver = await listen()
      const everyReceiver = await listen()
      const created = await t.json<any>(201, {
        method: 'POST',
        url: companyEndpoints(c.id),
        token,
        body: { url: narrowReceiver.url },
      })
      const patched = await t.call({
        method: 'PATCH',
        url: `${companyEndpoints(c.id)}/${created.id}`,
        token,
        body: { event_types: ['holiday.created'] },
      })
      assert.equal(patched.statusCode, 403, patched.body)
      await t.json<any>(201, {
        method: 'POST',
        url: companyEndpoints(c.id),
        token: c.token,
        body: { url: everyReceiver.url },
      })

      await contract(t, c.id)
      assert.equal(
        (await t.call({ method: 'PATCH', url: `/api/v1/companies/${c.id}`, token: c.token, body: { city: 'Torino' } }))
          .statusCode,
        202,
      )
      await deliverNow()
      const typesAt = (r: Receiver) => r.received.map((got) => JSON.parse(got.body).type).sort()
      assert.deepEqual(typesAt(narrowReceiver), ['company.updated'])
      assert.deepEqual(typesAt(everyReceiver), ['company.updated', 'contract.created'])
    })

    it('answers every 4xx of PATCH and rotate_secret: bad input, scopes, other companies, unknown endpoints', async () => {
      const a = await company(t)
      const b = await company(t)
      const created = await endpoint(a.id, { url: 'https://example.com/a' })
      const one = `${companyEndpoints(a.id)}/${created.id}`
      for (const [body, field] of [
        [{ url: 'not a url' }, 'body/url'],
        [{ url: 'ftp://example.com/x' }, 'body/url'],
        [{ url: 'https://u:p@example.com/x' }, 'body/url'],
        [{ event_types: ['contract.exploded'] }, 'body/event_types/0'],
        [{ event_types: 'team.*' }, 'body/event_types'],
        [{ enabled: 'yes' }, 'body/enabled'],
        [{ description: 7 }, 'body/description'],
        [{ secret: 'whsec_mine' }, 'secret'],
      ] as const) {
        const res = await t.call({ method: 'PATCH', url: one, token: a.token, body })
        assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`)
        assert.match(res.json().errors, new RegExp(field.replace(/\//g, '\\/')))
      }
      for (const [body, field] of [
        [{ previous_secret_expires_in: -1 }, 'body/previous_secret_expires_in'],
        [{ previous_secret_expires_in: 604801 }, 'body/previous_secret_expires_in'],
        [{ previous_secret_expires_in: '60' }, 'body/previous_secret_expires_in'],
        [{ grace: 60 }, 'grace'],
      ] as const) {
        const res = await t.call({ method: 'POST', url: `${one}/rotate_secret`, token: a.token, body })
        assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`)
        assert.match(res.json().errors, new RegExp(field.replace(/\//g, '\\/')))
      }
      const readOnly = await companyClient(t, a.id, ['read:company'])
      const readToken = await t.tokenFor(readOnly.client_id, readOnly.client_secret)
      const unknown = `${companyEndpoints(a.id)}/00000000-0000-4000-8000-000000000000`
      for (const [method, path, body] of [
        ['PATCH', '', { enabled: true }],
        ['POST', '/rotate_secret', {}],
      ] as const) {
        assert.equal((await t.call({ method, url: `${one}${path}`, token: readToken, body })).statusCode, 403)
        assert.equal((await t.call({ method, url: `${one}${path}`, token: null, body })).statusCode, 401)
        assert.equal(
          (await t.call({ method, url: `${companyEndpoints(b.id)}/${created.id}${path}`, token: b.token, body }))
            .statusCode,
          404,
        )
        assert.equal(
          (await t.call({ method, url: `/api/v1/webhook_endpoints/${created.id}${path}`, body })).statusCode,
          404,
        )
        assert.equal((await t.call({ method, url: `${unknown}${path}`, token: a.token, body })).statusCode, 404)
        assert.equal(
          (await t.call({ method, url: `${companyEndpoints(a.id)}/not-a-uuid${path}`, token: a.token, body }))
            .statusCode,
          400,
        )
      }
      // Nothing changed by the refused calls.
      const now = await t.json<any>(200, { url: one, token: a.token })
      const { secret: _shownOnce, ...unchanged } = created
      assert.deepEqual(now, unchanged)
    })
  },
)
