import { it, afterEach } from 'node:test'
import assert from 'node:assert/strict'
import { Webhook } from 'standardwebhooks'
import { sql } from 'kysely'
import { company, companyClient, contract } from './helpers/factories.ts'
import { eventually } from './helpers/eventually.ts'
import { receiver, type Behaviour } from './helpers/receivers.ts'
import { companyEndpoints, endpointSteps } from './helpers/webhook-endpoints.ts'
import { MAX_IN_FLIGHT_PER_ENDPOINT, RETRY_DELAYS_MS } from '../src/modules/webhook-endpoints/delivery.ts'
import { createWebhookEndpointsRepository } from '../src/modules/webhook-endpoints/webhook-endpoints.repository.ts'
import { MAX_LIMIT } from '../src/http/pagination.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

// Long enough that a loaded machine finishes the other calls of a test before a hanging one times out.
const TIMEOUT_MS = 5_000
const HANGING_TIMEOUT_MS = 60_000

onEachEngine('outgoing webhooks', { WEBHOOK_ALLOW_PRIVATE_TARGETS: true, WEBHOOK_TIMEOUT_MS: TIMEOUT_MS }, (t) => {
  const { receivers, listen, endpoint, deliverAt, deliverNow } = endpointSteps(() => t, { slowMs: TIMEOUT_MS * 3 })
  // As in the hanging receivers' suite below: a later test's retries must not wait on this one's slow receiver.
  afterEach(async () => {
    for (const r of receivers.splice(0)) await r.close()
  })

  const attemptsOf = (companyId: string, id: string) =>
    t.json<any[]>(200, { url: `${companyEndpoints(companyId)}/${id}/deliveries` })

  /** A company with one endpoint, hearing its contracts, on a receiver that behaves as told. */
  async function endpointOn(behaviour: Behaviour) {
    const c = await company(t)
    const r = await listen(behaviour)
    const created = await endpoint(c.id, { url: r.url, event_types: ['contract.*'] })
    return {
      r,
      /** A new contract, and its delivery made. */
      async deliverChange() {
        await contract(t, c.id)
        await deliverNow()
      },
      attempts: () => attemptsOf(c.id, created.id),
    }
  }

  it('sends each event signed per Standard Webhooks, verified by the standardwebhooks package', async () => {
    const c = await company(t)
    const r = await listen('ok')
    const res = await t.call({
      method: 'POST',
      url: companyEndpoints(c.id),
      token: c.token,
      body: { url: r.url, description: 'HR sync' },
    })
    assert.equal(res.statusCode, 201, res.body)
    const created = res.json()
    assert.equal(res.headers.location, `${companyEndpoints(c.id)}/${created.id}`)
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]+=*$/)
    assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 32)
    assert.deepEqual(
      { ...created, secret: undefined, id: undefined, created_at: undefined },
      {
        id: undefined,
        secret: undefined,
        created_at: undefined,
        company_id: c.id,
        url: r.url,
        event_types: [],
        description: 'HR sync',
        enabled: true,
        disabled_reason: null,
        created_by: c.client.client_id,
        previous_secret_expires_at: null,
      },
    )
    // The secret is shown once.
    const listed = await t.json<any[]>(200, { url: companyEndpoints(c.id), token: c.token })
    assert.equal(listed.length, 1)
    assert.equal(listed[0].secret, undefined)
    assert.equal(
      (await t.json(200, { url: `${companyEndpoints(c.id)}/${created.id}`, token: c.token })).secret,
      undefined,
    )

    const k = await contract(t, c.id)
    await deliverNow()
    assert.equal(r.received.length, 1)
    const [got] = r.received
    const verified = new Webhook(created.secret).verify(got!.body, got!.headers) as any
    assert.equal(verified.type, 'contract.created')
    assert.equal(verified.data.object.id, k)
    assert.equal(got!.headers['webhook-id'], verified.id)
    assert.equal(got!.headers['content-type'], 'application/json')
    // Another secret does not verify it.
    assert.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(got!.body, got!.headers))
    const [event] = await t.json<any[]>(200, {
      url: `/api/v1/companies/${c.id}/events`,
      query: { type: 'contract.created' },
    })
    assert.deepEqual(verified, event)

    const attempts = await attemptsOf(c.id, created.id)
    assert.equal(attempts.length, 1)
    assert.equal(attempts[0].event_id, event.id)
    assert.equal(attempts[0].event_type, 'contract.created')
    assert.equal(attempts[0].status, 'succeeded')
    assert.equal(attempts[0].status_code, 200)
    assert.equal(attempts[0].next_retry_at, null)
    assert.ok(Number.isInteger(attempts[0].duration_ms))
    // Delivered once: nothing more to send.
    await deliverAt(new Date(Date.now() + 86_400_000))
    assert.equal(r.received.length, 1)
  })

  it("one pass sends several events to several endpoints, each signed with its own endpoint's secrets", async () => {
    const [a, b] = [await company(t), await company(t)]
    const [r1, r2, r3] = [await listen('ok'), await listen('ok'), await listen('ok')]
    const e1 = await endpoint(a.id, { url: r1.url, event_types: ['contract.created'] })
    const e2 = await endpoint(a.id, { url: r2.url, event_types: ['contract.created'] })
    // Another company's event, between these, has another list of endpoints: its own alone.
    const e3 = await endpoint(b.id, { url: r3.url, event_types: ['contract.created'] })
    // The second mid-rotation: its old secret signs beside the new one.
    const rotated = await t.json<any>(200, {
      method: 'POST',
      url: `${companyEndpoints(a.id)}/${e2.id}/rotate_secret`,
      token: a.token,
    })
    const ofA = [await contract(t, a.id), await contract(t, a.id)]
    const ofB = [await contract(t, b.id)]
    ofA.push(await contract(t, a.id))
    // One pass fans out the four events (a batch holds 64).
    await deliverNow()
    const objects = (r: typeof r1, secrets: string[], others: string[]) =>
      r.received
        .map((got) => {
          for (const secret of secrets) new Webhook(secret).verify(got.body, got.headers)
          for (const other of others) assert.throws(() => new Webhook(other).verify(got.body, got.headers))
          return (JSON.parse(got.body) as { data: { object: { id: string } } }).data.object.id
        })
        .sort()
    assert.deepEqual(objects(r1, [e1.secret], [e2.secret, rotated.secret, e3.secret]), [...ofA].sort())
    assert.deepEqual(objects(r2, [e2.secret, rotated.secret], [e1.secret, e3.secret]), [...ofA].sort())
    assert.deepEqual(objects(r3, [e3.secret], [e1.secret, e2.secret, rotated.secret]), ofB)
  })

  it('retries a failed delivery with growing delays and the same webhook-id, for three days, then disables the endpoint', async () => {
    const c = await company(t)
    const r = await listen('fail')
    const created = await endpoint(c.id, { url: r.url, event_types: ['contract.created'] })
    await contract(t, c.id)
    let now = new Date(Date.now() + 1000)
    await deliverAt(now)
    assert.equal(r.received.length, 1)
    for (let i = 0; i < RETRY_DELAYS_MS.length; i++) {
      const [latest] = await attemptsOf(c.id, created.id)
      assert.equal(latest.status, 'failed')
      assert.equal(latest.status_code, 500)
      assert.equal(latest.attempt, i + 1)
      assert.equal(Date.parse(latest.next_retry_at) - now.getTime(), RETRY_DELAYS_MS[i])
      // Not before its time.
      await deliverAt(new Date(Date.parse(latest.next_retry_at) - 1))
      assert.equal(r.received.length, i + 1)
      now = new Date(latest.next_retry_at)
      await deliverAt(now)
      assert.equal(r.received.length, i + 2)
    }
    const ids = new Set(r.received.map((req) => req.headers['webhook-id']))
    assert.equal(ids.size, 1, 'every retry carries the same webhook-id')
    const secret = created.secret
    for (const req of r.received) new Webhook(secret).verify(req.body, req.headers)
    const attempts = await attemptsOf(c.id, created.id)
    assert.equal(attempts.length, RETRY_DELAYS_MS.length + 1)
    assert.equal(attempts[0].next_retry_at, null)
    const span = Date.parse(attempts[0].started_at) - Date.parse(attempts[attempts.length - 1].started_at)
    assert.ok(span > 2.9 * 86_400_000 && span < 3.1 * 86_400_000, `retried for ${span / 3_600_000} h`)
    const disabled = await t.json(200, { url: `${companyEndpoints(c.id)}/${created.id}` })
    assert.equal(disabled.enabled, false)
    assert.match(disabled.disabled_reason, /three days/)
    // A disabled endpoint hears nothing more.
    await contract(t, c.id)
    await deliverAt(new Date(now.getTime() + 86_400_000))
    assert.equal(r.received.length, RETRY_DELAYS_MS.length + 1)
    assert.equal(
      (await t.call({ method: 'POST', url: `${companyEndpoints(c.id)}/${created.id}/test` })).statusCode,
      409,
    )
  })

  it('a receiver that answers too late times out, and the attempt is retried', async () => {
    const slow = await endpointOn('slow')
    await slow.deliverChange()
    assert.equal(slow.r.received.length, 1)
    const [attempt] = await slow.attempts()
    assert.equal(attempt.status, 'timeout')
    assert.equal(attempt.status_code, null)
    assert.equal(attempt.error, 'timeout')
    assert.ok(attempt.next_retry_at)
  })

  it('a 2xx with a body larger than is read counts as delivered, and the next delivery goes through', async () => {
    const large = await endpointOn('large')
    await large.deliverChange()
    await large.deliverChange()
    assert.equal(large.r.received.length, 2)
    const attempts = await large.attempts()
    assert.deepEqual(
      attempts.map((a) => [a.status, a.status_code, a.next_retry_at]),
      [
        ['succeeded', 200, null],
        ['succeeded', 200, null],
      ],
    )
  })

  it('an informational answer is not the answer: 103 Early Hints, then the connection dropped, is an error', async () => {
    const hints = await endpointOn('hints')
    await hints.deliverChange()
    assert.equal(hints.r.received.length, 1)
    const [attempt] = await hints.attempts()
    assert.deepEqual([attempt.status, attempt.status_code], ['error', null])
    assert.ok(attempt.next_retry_at)
  })

  it("platform endpoints hear every company; a company's hear its own; event_types filter; ping reaches one endpoint", async () => {
    const a = await company(t)
    const b = await company(t)
    const platformReceiver = await listen('ok')
    const aReceiver = await listen('ok')
    const platform = await endpoint(null, { url: platformReceiver.url, event_types: ['contract.created', 'team.*'] })
    const own = await endpoint(a.id, { url: aReceiver.url, event_types: ['contract.created'] }, a.token)
    await contract(t, a.id)
    await contract(t, b.id)
    await t.call({
      method: 'POST',
      url: `/api/v1/companies/${a.id}/teams`,
      token: a.token,
      body: { name: 'Ops', code: 'OPS', team_leader_ids: [] },
    })
    await deliverNow()
    const types = (r: typeof aReceiver) =>
      r.received
        .map((req) => {
          const e = JSON.parse(req.body)
          return `${e.type}@${e.company_id}`
        })
        .sort()
    assert.deepEqual(
      types(platformReceiver),
      [`contract.created@${a.id}`, `contract.created@${b.id}`, `team.created@${a.id}`].sort(),
    )
    assert.deepEqual(types(aReceiver), [`contract.created@${a.id}`])
    assert.equal((await t.json<any[]>(200, { url: '/api/v1/webhook_endpoints' })).length >= 1, true)
    assert.ok(
      (await t.json<any[]>(200, { url: companyEndpoints(a.id), token: a.token })).every((e) => e.company_id === a.id),
    )

    const pingRes = await t.call({ method: 'POST', url: `${companyEndpoints(a.id)}/${own.id}/test`, token: a.token })
    assert.equal(pingRes.statusCode, 202, pingRes.body)
    const ping = pingRes.json()
    assert.equal(ping.type, 'ping')
    assert.deepEqual(await t.json(200, { url: String(pingRes.headers.location), token: a.token }), ping)
    const platformPing = await t.json(202, { method: 'POST', url: `/api/v1/webhook_endpoints/${platform.id}/test` })
    await deliverNow()
    const pingOf = (r: typeof aReceiver) =>
      r.received.map((req) => JSON.parse(req.body)).filter((e) => e.type === 'ping')
    assert.deepEqual(
      pingOf(aReceiver).map((e) => e.id),
      [ping.id],
    )
    assert.deepEqual(
      pingOf(platformReceiver).map((e) => e.id),
      [platformPing.id],
    )
    new Webhook(own.secret).verify(aReceiver.received.at(-1)!.body, aReceiver.received.at(-1)!.headers)
  })

  it('an endpoint made after an event was written is not sent that event, only the later ones', async () => {
    const c = await company(t)
    const before = await listen('ok')
    const after = await listen('ok')
    await endpoint(c.id, { url: before.url, event_types: ['contract.created'] })
    const earlier = await contract(t, c.id)
    // Written, not fanned out yet, when the second endpoint is made.
    await endpoint(c.id, { url: after.url, event_types: ['contract.created'] })
    const later = await contract(t, c.id)
    await deliverNow()
    const contractsAt = (r: typeof before) => r.received.map((req) => JSON.parse(req.body).data.object.id).sort()
    assert.deepEqual(contractsAt(before), [earlier, later].sort())
    assert.deepEqual(contractsAt(after), [later])
  })

  it("an endpoint disabled between an event's write and its fan-out is not sent it; re-enabled, it is sent the next ones", async () => {
    const c = await company(t)
    const r = await listen('ok')
    const created = await endpoint(c.id, { url: r.url, event_types: ['contract.created'] })
    const one = `${companyEndpoints(c.id)}/${created.id}`
    await contract(t, c.id)
    await t.json(200, { method: 'PATCH', url: one, token: c.token, body: { enabled: false } })
    await deliverNow()
    assert.equal(r.received.length, 0)
    await t.json(200, { method: 'PATCH', url: one, token: c.token, body: { enabled: true } })
    const later = await contract(t, c.id)
    await deliverNow()
    assert.deepEqual(
      r.received.map((req) => JSON.parse(req.body).data.object.id),
      [later],
    )
  })

  it('answers every 4xx: bad input, scopes, other companies, unknown endpoints, the limit', async () => {
    const a = await company(t)
    const b = await company(t)
    const url = companyEndpoints(a.id)
    for (const [body, field] of [
      [{}, 'body/url'],
      [{ url: 'not a url' }, 'body/url'],
      [{ url: 'ftp://example.com/x' }, 'body/url'],
      [{ url: 'https://u:p@example.com/x' }, 'body/url'],
      [{ url: 'https://example.com/x', event_types: ['contract.exploded'] }, 'body/event_types/0'],
      [{ url: 'https://example.com/x', event_types: 'contract.created' }, 'body/event_types'],
      [{ url: 'https://example.com/x', secret: 'whsec_mine' }, 'secret'],
      [{ url: 'https://example.com/x', enabled: 'yes' }, 'body/enabled'],
    ] as const) {
      const res = await t.call({ method: 'POST', url, token: a.token, body })
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`)
      assert.match(res.json().errors, new RegExp(field.replace(/\//g, '\\/')))
    }
    const readOnly = await companyClient(t, a.id, ['read:company'])
    const readToken = await t.tokenFor(readOnly.client_id, readOnly.client_secret)
    assert.equal(
      (await t.call({ method: 'POST', url, token: readToken, body: { url: 'https://example.com/x' } })).statusCode,
      403,
    )
    assert.equal(
      (
        await t.call({
          method: 'POST',
          url: '/api/v1/webhook_endpoints',
          token: a.token,
          body: { url: 'https://example.com/x' },
        })
      ).statusCode,
      403,
    )
    assert.equal((await t.call({ url: '/api/v1/webhook_endpoints', token: a.token })).statusCode, 403)
    assert.equal((await t.call({ url, token: null })).statusCode, 401)
    const created = await endpoint(a.id, { url: 'https://example.com/a' }, a.token)
    assert.equal((await t.call({ url, token: readToken })).statusCode, 200)
    // Another company's endpoint, through its path or the other's: 404.
    assert.equal((await t.call({ url: `${url}/${created.id}`, token: b.token })).statusCode, 404)
    assert.equal((await t.call({ url: `${companyEndpoints(b.id)}/${created.id}`, token: b.token })).statusCode, 404)
    assert.equal((await t.call({ url: `/api/v1/webhook_endpoints/${created.id}` })).statusCode, 404)
    assert.equal(
      (await t.call({ method: 'DELETE', url: `${companyEndpoints(b.id)}/${created.id}`, token: b.token })).statusCode,
      404,
    )
    assert.equal(
      (await t.call({ method: 'POST', url: `${companyEndpoints(b.id)}/${created.id}/test`, token: b.token }))
        .statusCode,
      404,
    )
    assert.equal(
      (await t.call({ url: `${companyEndpoints(b.id)}/${created.id}/deliveries`, token: b.token })).statusCode,
      404,
    )
    assert.equal(
      (await t.call({ url: `${url}/${created.id}/deliveries`, token: a.token, query: { cursor: 'nope' } })).statusCode,
      400,
    )
    assert.equal((await t.call({ url: `${url}/not-a-uuid`, token: a.token })).statusCode, 400)
    assert.equal((await t.call({ method: 'DELETE', url: `${url}/${created.id}`, token: readToken })).statusCode, 403)
    assert.equal((await t.call({ method: 'DELETE', url: `${url}/${created.id}`, token: a.token })).statusCode, 204)
    assert.equal((await t.call({ method: 'DELETE', url: `${url}/${created.id}`, token: a.token })).statusCode, 404)
    assert.equal((await t.call({ url: `${url}/${created.id}`, token: a.token })).statusCode, 404)
    // At most 16 endpoints.
    for (let i = 0; i < 16; i++) await endpoint(a.id, { url: `https://example.com/${i}` }, a.token)
    const over = await t.call({ method: 'POST', url, token: a.token, body: { url: 'https://example.com/17' } })
    assert.equal(over.statusCode, 409, over.body)
  })
})

// Receivers that hang until the test drops their connections: a timeout longer than any test,
// so what a test sees does not depend on how loaded the machine is.
onEachEngine(
  'hanging webhook receivers',
  { WEBHOOK_ALLOW_PRIVATE_TARGETS: true, WEBHOOK_TIMEOUT_MS: HANGING_TIMEOUT_MS },
  (t) => {
    const steps = endpointSteps(() => t)
    const { receivers, listen } = steps
    /** The endpoints of the test under way: they go at its end (afterEach). */
    const made: Array<{ companyId: string; id: string }> = []
    async function endpoint(companyId: string, body: Record<string, unknown>) {
      const created = await steps.endpoint(companyId, body)
      made.push({ companyId, id: created.id })
      return created
    }

    /**
     * A company whose endpoint's receiver never answers, one event, and its first call open,
     * claimed a second from now: the real clock is left there (the caller sets it back).
     */
    async function oneCallOpen() {
      const c = await company(t)
      const r = await listen('never')
      const created = await endpoint(c.id, { url: r.url, event_types: ['contract.created'] })
      await contract(t, c.id)
      const start = new Date(Date.now() + 1000)
      t.realClock.set(start)
      await t.app.services.webhookDelivery.runDue()
      await eventually(
        async () => r.received.length,
        (n) => n === 1,
        30_000,
      )
      return { c, r, created, leaseEnd: new Date(start.getTime() + HANGING_TIMEOUT_MS + 60_000) }
    }
    // A test's receivers close at its end. Its failed deliveries are retried 5 s later, which the
    // next test's step of the real clock passes: their calls must fail at once, not hang on a
    // receiver that never answers for the whole timeout while that test awaits settled() (60 s
    // per test, per engine, before).
    // Its endpoints go too: their failed deliveries, retried 5 s later, would otherwise be claimed
    // by a later test's passes once the real clock passed that, and counted among its calls (a
    // loaded machine made the bound's sum 258, two retries of the first test's).
    afterEach(async () => {
      for (const r of receivers.splice(0)) await r.close()
      for (const e of made.splice(0)) {
        const res = await t.call({ method: 'DELETE', url: `${companyEndpoints(e.companyId)}/${e.id}` })
        // 404: the test deleted it itself.
        assert.ok([204, 404].includes(res.statusCode), `${res.statusCode} ${res.body}`)
      }
    })
    const attemptsOf = (companyId: string, id: string) =>
      t.json<any[]>(200, { url: `${companyEndpoints(companyId)}/${id}/deliveries` })

    it('a receiver that never answers delays no other endpoint', async () => {
      const c = await company(t)
      const dead = await listen('never')
      const healthy = await listen('ok')
      const deadEndpoint = await endpoint(c.id, { url: dead.url, event_types: ['contract.*'] })
      await endpoint(c.id, { url: healthy.url, event_types: ['contract.*'] })
      await contract(t, c.id)
      await contract(t, c.id)
      const back = t.realClock.now()
      t.realClock.set(new Date(Date.now() + 1000))
      await t.app.services.webhookDelivery.runDue()
      t.realClock.set(back)
      // The pass is over with the dead and slow calls still under way; the healthy one completes meanwhile.
      const done = await eventually(
        async () => healthy.received.length,
        (n) => n === 2,
      )
      assert.equal(done, 2)
      // An attempt is listed once it has ended: the dead endpoint's are not yet.
      assert.deepEqual(await attemptsOf(c.id, deadEndpoint.id), [])
      // Its connections dropped: the attempts end in error and are retried.
      await eventually(
        async () => dead.received.length,
        (n) => n === 2,
        30_000,
      )
      dead.release()
      await t.app.services.webhookDelivery.settled()
      const attempts = await attemptsOf(c.id, deadEndpoint.id)
      assert.deepEqual(
        attempts.map((a) => a.status),
        ['error', 'error'],
      )
      assert.ok(attempts.every((a) => a.next_retry_at))
    })

    it('keeps at most a bound of calls open to one hanging endpoint; the rest wait without an attempt counted', async () => {
      const c = await company(t)
      const dead = await listen('never')
      const created = await endpoint(c.id, { url: dead.url, event_types: ['contract.created'] })
      for (let i = 0; i < MAX_IN_FLIGHT_PER_ENDPOINT + 2; i++) await contract(t, c.id)
      const start = new Date(Date.now() + 1000)
      const back = t.realClock.now()
      t.realClock.set(start)
      await t.app.services.webhookDelivery.runDue()
      assert.deepEqual(await attemptsOf(c.id, created.id), [], 'an attempt under way is not listed')
      await eventually(
        async () => dead.received.length,
        (n) => n === MAX_IN_FLIGHT_PER_ENDPOINT,
        30_000,
      )
      dead.release()
      await t.app.services.webhookDelivery.settled()
      // A second later, with the calls over, the two that waited go.
      t.realClock.set(new Date(start.getTime() + 1000))
      await t.app.services.webhookDelivery.runDue()
      t.realClock.set(back)
      await eventually(
        async () => dead.received.length,
        (n) => n === MAX_IN_FLIGHT_PER_ENDPOINT + 2,
        30_000,
      )
      dead.release()
      await t.app.services.webhookDelivery.settled()
      // More than a default page (100): the list's largest.
      assert.ok(MAX_IN_FLIGHT_PER_ENDPOINT + 2 <= MAX_LIMIT)
      const attempts = await t.json<any[]>(200, {
        url: `${companyEndpoints(c.id)}/${created.id}/deliveries`,
        query: { limit: String(MAX_LIMIT) },
      })
      assert.equal(attempts.length, MAX_IN_FLIGHT_PER_ENDPOINT + 2)
      assert.ok(attempts.every((a) => a.attempt === 1 && a.status === 'error'))
    })

    it('keeps the bound exact with passes asked for at once (a pass counts the slots the one before took)', async () => {
      const c = await company(t)
      const dead = await listen('never')
      await endpoint(c.id, { url: dead.url, event_types: ['contract.created'] })
      for (let i = 0; i < MAX_IN_FLIGHT_PER_ENDPOINT + 6; i++) await contract(t, c.id)
      const back = t.realClock.now()
      t.realClock.set(new Date(Date.now() + 1000))
      // Four at once, as a write's wake-up, a call's end and the poll may ask: one claim up to the bound, then none.
      const claimed = await Promise.all(Array.from({ length: 4 }, () => t.app.services.webhookDelivery.runDue()))
      t.realClock.set(back)
      assert.equal(
        claimed.reduce((a, b) => a + b, 0),
        MAX_IN_FLIGHT_PER_ENDPOINT,
      )
      await eventually(
        async () => dead.received.length,
        (n) => n === MAX_IN_FLIGHT_PER_ENDPOINT,
        30_000,
      )
      dead.release()
      await t.app.services.webhookDelivery.settled()
    })

    it('an endpoint at its bound delays no other endpoint: each gets its share in every pass', async () => {
      const c = await company(t)
      const dead = await listen('never')
      const healthy = await listen('ok')
      await endpoint(c.id, { url: dead.url, event_types: ['contract.created'] })
      await endpoint(c.id, { url: healthy.url, event_types: ['contract.created'] })
      // A backlog for the hanging receiver beyond its bound; each event goes to both endpoints.
      for (let i = 0; i < MAX_IN_FLIGHT_PER_ENDPOINT + 4; i++) await contract(t, c.id)
      const back = t.realClock.now()
      t.realClock.set(new Date(Date.now() + 1000))
      try {
        // Passes as the running loop makes them when calls end: the healthy endpoint's bound + 4 go the bound, then 4.
        await eventually(
          async () => {
            await t.app.services.webhookDelivery.runDue()
            return healthy.received.length
          },
          (n) => n === MAX_IN_FLIGHT_PER_ENDPOINT + 4,
          30_000,
        )
        assert.equal(healthy.received.length, MAX_IN_FLIGHT_PER_ENDPOINT + 4)
        // The hanging endpoint's calls were started in the first pass; on a busy machine some are
        // still on their way to its receiver (256 of them): they arrive, and no more than them.
        await eventually(
          async () => dead.received.length,
          (n) => n >= MAX_IN_FLIGHT_PER_ENDPOINT,
          30_000,
        )
        assert.equal(dead.received.length, MAX_IN_FLIGHT_PER_ENDPOINT)
        // A new event, with the hanging endpoint's 4 due deliveries waiting and its calls at the bound open:
        // the healthy endpoint's delivery is claimed in the next pass, and the waiting ones are not.
        await contract(t, c.id)
        // The clock set above may be past by now on a loaded machine: the new event, written at
        // the database's time, would not be due yet at it.
        t.realClock.set(new Date(Date.now() + 1000))
        await t.app.services.webhookDelivery.runDue()
        await eventually(
          async () => healthy.received.length,
          (n) => n === MAX_IN_FLIGHT_PER_ENDPOINT + 5,
          30_000,
        )
        assert.equal(healthy.received.length, MAX_IN_FLIGHT_PER_ENDPOINT + 5)
        assert.equal(dead.received.length, MAX_IN_FLIGHT_PER_ENDPOINT)
      } finally {
        t.realClock.set(back)
      }
      await eventually(
        async () => dead.received.length,
        (n) => n === MAX_IN_FLIGHT_PER_ENDPOINT,
        30_000,
      )
      dead.release()
      await t.app.services.webhookDelivery.settled()
    })

    it('an attempt whose instance stopped is retried when its lease runs out, with the same webhook-id', async () => {
      const c = await company(t)
      const r = await listen('never')
      const created = await endpoint(c.id, { url: r.url, event_types: ['contract.created'] })
      await contract(t, c.id)
      const start = new Date(Date.now() + 1000)
      const back = t.realClock.now()
      t.realClock.set(start)
      await t.app.services.webhookDelivery.runDue()
      // As if this instance had died during the call: its outcome is not in yet when the lease
      // (the timeout and a minute) runs out, and another pass takes the delivery over.
      t.realClock.set(new Date(start.getTime() + HANGING_TIMEOUT_MS + 60_000))
      await t.app.services.webhookDelivery.runDue()
      t.realClock.set(back)
      await eventually(
        async () => r.received.length,
        (n) => n === 2,
        30_000,
      )
      // The second attempt, under way, is not listed; the first is, lost.
      assert.deepEqual(
        (await attemptsOf(c.id, created.id)).map((a) => [a.attempt, a.status]),
        [[1, 'lost']],
      )
      r.release()
      await t.app.services.webhookDelivery.settled()
      assert.equal(r.received.length, 2)
      assert.equal(r.received[0]!.headers['webhook-id'], r.received[1]!.headers['webhook-id'])
      const attempts = await attemptsOf(c.id, created.id)
      assert.deepEqual(
        attempts.map((a) => a.attempt),
        [2, 1],
      )
      // The second attempt decides what comes next; the first's late outcome is kept.
      assert.ok(attempts[0].next_retry_at)
      assert.equal(attempts[1].next_retry_at, null)
    })

    it("a lease that runs out after some of an event's first calls succeeded sends again only the unanswered one", async () => {
      const c = await company(t)
      const quick = await listen('ok')
      const hanging = await listen('never')
      const answered = await endpoint(c.id, { url: quick.url, event_types: ['contract.created'] })
      const unanswered = await endpoint(c.id, { url: hanging.url, event_types: ['contract.created'] })
      await contract(t, c.id)
      const start = new Date(Date.now() + 1000)
      const back = t.realClock.now()
      try {
        t.realClock.set(start)
        await t.app.services.webhookDelivery.runDue()
        await eventually(
          async () => hanging.received.length,
          (n) => n === 1,
          30_000,
        )
        // The quick call's success is written (the hanging one's call is still open).
        await eventually(
          async () => (await attemptsOf(c.id, answered.id)).length,
          (n) => n === 1,
          30_000,
        )
        // The lease runs out: only the call still awaiting its outcome gets a delivery, and is sent again.
        t.realClock.set(new Date(start.getTime() + HANGING_TIMEOUT_MS + 60_000))
        await t.app.services.webhookDelivery.runDue()
        await eventually(
          async () => hanging.received.length,
          (n) => n === 2,
          30_000,
        )
        hanging.release()
        await t.app.services.webhookDelivery.settled()
      } finally {
        t.realClock.set(back)
      }
      assert.equal(quick.received.length, 1)
      assert.deepEqual(
        (await attemptsOf(c.id, answered.id)).map((a) => [a.attempt, a.status]),
        [[1, 'succeeded']],
      )
      assert.deepEqual(
        (await attemptsOf(c.id, unanswered.id)).map((a) => a.attempt),
        [2, 1],
      )
      assert.equal(hanging.received[0]!.headers['webhook-id'], hanging.received[1]!.headers['webhook-id'])
    })

    it('a delivery given up because its endpoint was disabled has its unanswered attempt marked lost', async () => {
      const back = t.realClock.now()
      try {
        const { c, r, created, leaseEnd } = await oneCallOpen()
        await t.json(200, {
          method: 'PATCH',
          url: `${companyEndpoints(c.id)}/${created.id}`,
          token: c.token,
          body: { enabled: false },
        })
        // The lease runs out with the call still open, as if its instance had died: the pass gives the delivery up.
        t.realClock.set(leaseEnd)
        await t.app.services.webhookDelivery.runDue()
        const [attempt] = await attemptsOf(c.id, created.id)
        assert.deepEqual([attempt.attempt, attempt.status], [1, 'lost'])
        assert.equal(r.received.length, 1, 'nothing more is sent to a disabled endpoint')
      } finally {
        t.realClock.set(back)
        // The hanging call ends (receivers close after each test), and its late outcome is written.
        for (const r of receivers) r.release()
        await t.app.services.webhookDelivery.settled()
      }
    })

    it('an endpoint deleted during its call: the outcome is dropped, the others of the event are recorded, nothing is owed', async () => {
      const c = await company(t)
      const gone = await listen('never')
      const staying = await listen('never')
      const deleted = await endpoint(c.id, { url: gone.url, event_types: ['contract.created'] })
      const kept = await endpoint(c.id, { url: staying.url, event_types: ['contract.created'] })
      const written = await contract(t, c.id)
      const back = t.realClock.now()
      t.realClock.set(new Date(Date.now() + 1000))
      try {
        await t.app.services.webhookDelivery.runDue()
        await eventually(
          async () => gone.received.length + staying.received.length,
          (n) => n === 2,
          30_000,
        )
        assert.equal(
          (await t.call({ method: 'DELETE', url: `${companyEndpoints(c.id)}/${deleted.id}`, token: c.token }))
            .statusCode,
          204,
        )
        // Both answer at once: their outcomes share a batch, which the deleted endpoint's must not fail.
        assert.ok(gone.answerOldest(200) && staying.answerOldest(200))
        await t.app.services.webhookDelivery.settled()
      } finally {
        t.realClock.set(back)
      }
      assert.deepEqual(
        (await attemptsOf(c.id, kept.id)).map((a) => a.status),
        ['succeeded'],
      )
      // The event's fan-out is done: no lease left to run out and send it again.
      const owed =
        await sql`SELECT f.event_id FROM webhook_fanouts f JOIN events e ON e.id = f.event_id WHERE e.data -> 'object' ->> 'id' = ${written}`.execute(
          t.app.database.db,
        )
      assert.deepEqual(owed.rows, [])
    })

    it('a late outcome still counts while nothing else has taken its delivery: a 2xx after the lease ran out delivers it', async () => {
      const back = t.realClock.now()
      try {
        const { c, r, created, leaseEnd } = await oneCallOpen()
        // The lease runs out: a fan-out pass writes the direct call's delivery (pending at seq 1,
        // its attempt lost), and no claim has taken it when the first call's 2xx arrives.
        await createWebhookEndpointsRepository(t.app.database.db).fanOutDue({
          now: leaseEnd,
          leaseUntil: new Date(leaseEnd.getTime() + HANGING_TIMEOUT_MS + 60_000),
          bound: MAX_IN_FLIGHT_PER_ENDPOINT,
          busy: [],
          batch: 10,
        })
        assert.deepEqual(
          (await attemptsOf(c.id, created.id)).map((a) => [a.attempt, a.status]),
          [[1, 'lost']],
        )
        assert.ok(r.answerOldest(200))
        await t.app.services.webhookDelivery.settled()
        const [attempt, ...others] = await attemptsOf(c.id, created.id)
        assert.deepEqual(
          [attempt.attempt, attempt.status, attempt.next_retry_at, others.length],
          [1, 'succeeded', null, 0],
        )
        // Delivered: nothing is sent again.
        t.realClock.set(new Date(leaseEnd.getTime() + 1000))
        await t.app.services.webhookDelivery.runDue()
        await t.app.services.webhookDelivery.settled()
        assert.equal(r.received.length, 1)
      } finally {
        t.realClock.set(back)
      }
    })

    it('a late outcome decides nothing: a 2xx after the lease ran out leaves the delivery to the attempt that owns it', async () => {
      const back = t.realClock.now()
      try {
        const { c, r, created, leaseEnd } = await oneCallOpen()
        // The lease runs out with the first call still open: a second attempt owns the delivery.
        t.realClock.set(leaseEnd)
        await t.app.services.webhookDelivery.runDue()
        await eventually(
          async () => r.received.length,
          (n) => n === 2,
          30_000,
        )
        // The first call succeeds now, late; the second fails.
        assert.ok(r.answerOldest(200))
        r.release()
        await t.app.services.webhookDelivery.settled()
        const [second, first] = await attemptsOf(c.id, created.id)
        assert.deepEqual([first.attempt, first.status, first.next_retry_at], [1, 'succeeded', null])
        assert.equal(second.attempt, 2)
        assert.equal(second.status, 'error')
        assert.equal(Date.parse(second.next_retry_at), leaseEnd.getTime() + RETRY_DELAYS_MS[1]!)
        // Not delivered: the retry the second attempt decided goes out, with the same webhook-id.
        r.set('ok')
        t.realClock.set(new Date(second.next_retry_at))
        await t.app.services.webhookDelivery.runDue()
        await t.app.services.webhookDelivery.settled()
        assert.equal(r.received.length, 3)
        assert.equal(new Set(r.received.map((req) => req.headers['webhook-id'])).size, 1)
        assert.equal((await attemptsOf(c.id, created.id))[0].status, 'succeeded')
      } finally {
        t.realClock.set(back)
      }
    })
  },
)

onEachEngine(
  (engine) => `webhook targets on ${engine} (private targets refused)`,
  { WEBHOOK_TIMEOUT_MS: TIMEOUT_MS },
  (t) => {
    it('refuses loopback, private, link-local and multicast targets and plain http at creation, and again at delivery', async () => {
      const c = await company(t)
      for (const target of [
        'https://127.0.0.1/hook',
        'https://10.1.2.3/hook',
        'https://172.16.0.1/',
        'https://192.168.1.10/',
        'https://169.254.169.254/latest/meta-data',
        'https://[::1]/hook',
        'https://[fe80::1]/',
        'https://[fd00::1]/',
        'https://[::ffff:127.0.0.1]/',
        'https://224.0.0.1/',
        'https://0.0.0.0/',
      ]) {
        const res = await t.call({ method: 'POST', url: companyEndpoints(c.id), token: c.token, body: { url: target } })
        assert.equal(res.statusCode, 400, `${target}: ${res.body}`)
        assert.match(res.json().errors, /body\/url .*(loopback|private)/)
      }
      const plain = await t.call({
        method: 'POST',
        url: companyEndpoints(c.id),
        token: c.token,
        body: { url: 'http://example.com/hook' },
      })
      assert.equal(plain.statusCode, 400)
      assert.match(plain.json().errors, /body\/url must be an https URL/)

      // A name that resolves to a loopback address passes creation's check (it is a name) and
      // is refused at delivery, after resolution: stored here as a creation would store it.
      const r = await receiver('ok')
      try {
        const id = '7d4f1c2e-9a8b-4c6d-8e0f-1a2b3c4d5e6f'
        await t.app.database.db
          .insertInto('webhook_endpoints')
          .values({
            id,
            company_id: c.id,
            url: `http://localhost:${r.port}/hook`,
            event_types: [],
            description: null,
            secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
          })
          .execute()
        await contract(t, c.id)
        const back = t.realClock.now()
        t.realClock.set(new Date(Date.now() + 1000))
        await t.app.services.webhookDelivery.runDue()
        t.realClock.set(back)
        await t.app.services.webhookDelivery.settled()
        assert.equal(r.received.length, 0)
        const [attempt] = await t.json<any[]>(200, {
          url: `${companyEndpoints(c.id)}/${id}/deliveries`,
          token: c.token,
        })
        assert.equal(attempt.status, 'refused')
        assert.equal(attempt.error, 'connection_refused')
        assert.ok(attempt.next_retry_at)
      } finally {
        await r.close()
      }
    })
  },
)
