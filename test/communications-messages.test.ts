import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { buildTestApp, engines, type TestApp } from './helpers/app.ts'
import { company, companyClient, contract, subsidiary } from './helpers/factories.ts'
import { commsUrl, createComm, messagesOf, report, runAt } from './communications.fixtures.ts'

const inboxUrl = (companyId: string, contractId: string) => `/api/v1/companies/${companyId}/contracts/${contractId}/messages`
const messageUrl = (companyId: string, messageId: string, what: 'open' | 'action') => commsUrl(companyId, `/messages/${messageId}/${what}`)

for (const engine of engines) {
  describe(`communication messages on ${engine}`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(engine) })
    after(async () => { await t?.close() })

    /** A company with `count` active contracts in one subsidiary and one delivered communication to it. */
    async function delivered(count: number, fields: Record<string, unknown> = {}) {
      const c = await company(t)
      const s = await subsidiary(t, c.id)
      const contracts: string[] = []
      for (let i = 0; i < count; i++) contracts.push(await contract(t, c.id, { subsidiary_id: s }))
      const sendAt = new Date(t.clock.now().getTime() - 1000).toISOString()
      const id = await createComm(t, c, { send_at: sendAt, destination_subsidiary_ids: [s], ...fields })
      await t.app.services.scheduler.runDue()
      return { c, s, id, sendAt, contracts }
    }

    it('counts openings and acknowledgements in the report, recording the first time only', async () => {
      const { c, id, sendAt, contracts } = await delivered(3, { action_required: 'acknowledge', subject: 'Sign the policy' })
      const messages = await messagesOf(t, c, id, sendAt)
      assert.equal(messages.length, 3)
      const [m1, m2] = messages
      assert.equal((await t.call({ method: 'PUT', url: messageUrl(c.id, m1.id, 'open'), token: c.token })).statusCode, 202)
      const openedAt = (await messagesOf(t, c, id, sendAt)).find((m: any) => m.id === m1.id).opened_at
      assert.equal(openedAt, t.clock.now().toISOString())
      t.clock.advance(60_000)
      assert.equal((await t.call({ method: 'PUT', url: messageUrl(c.id, m1.id, 'open'), token: c.token })).statusCode, 202)
      assert.equal((await messagesOf(t, c, id, sendAt)).find((m: any) => m.id === m1.id).opened_at, openedAt)
      // Acknowledging also records the opening; twice changes nothing.
      assert.equal((await t.call({ method: 'PUT', url: messageUrl(c.id, m2.id, 'action'), token: c.token })).statusCode, 202)
      const acted = (await messagesOf(t, c, id, sendAt)).find((m: any) => m.id === m2.id)
      t.clock.advance(60_000)
      assert.equal((await t.call({ method: 'PUT', url: messageUrl(c.id, m2.id, 'action'), token: c.token })).statusCode, 202)
      assert.deepEqual((await messagesOf(t, c, id, sendAt)).find((m: any) => m.id === m2.id), acted)
      assert.ok(acted.action_done_at && acted.opened_at === acted.action_done_at)
      assert.deepEqual(await report(t, c, id), [{ send_at: sendAt, recipients: 3, delivered: 3, opened: 2, actions_done: 1 }])
      // Filters of endpoint 32.
      const ids = async (query: Record<string, string>) => (await messagesOf(t, c, id, sendAt, query)).map((m: any) => m.id).sort()
      assert.deepEqual(await ids({ opened: 'true' }), [m1.id, m2.id].sort())
      assert.deepEqual(await ids({ opened: 'false' }), [messages[2].id])
      assert.deepEqual(await ids({ actions: 'true' }), [m2.id])
      assert.deepEqual(await ids({ actions: 'false', opened: 'true' }), [m1.id])
      // The recipient's inbox.
      const inbox = await t.json(200, { url: inboxUrl(c.id, m2.contract_id), token: c.token })
      assert.equal(inbox.total, 1)
      assert.equal(inbox.messages[0].subject, 'Sign the policy')
      assert.equal(inbox.messages[0].action_required, 'acknowledge')
      assert.equal(inbox.messages[0].action_done_at, acted.action_done_at)
      assert.ok(contracts.includes(m2.contract_id))
      assert.equal((await t.json(200, { url: inboxUrl(c.id, m2.contract_id), token: c.token, query: { opened: 'false' } })).total, 0)
    })

    it('refuses an acknowledgement that the communication does not ask for', async () => {
      const { c, id, sendAt } = await delivered(1)
      const [m] = await messagesOf(t, c, id, sendAt)
      const res = await t.call({ method: 'PUT', url: messageUrl(c.id, m.id, 'action'), token: c.token })
      assert.equal(res.statusCode, 409)
      assert.equal(res.json().code, 'conflict')
      assert.equal((await report(t, c, id))[0].actions_done, 0)
    })

    it('pages the messages of an occurrence: default 20, at most 100, past the end empty', async () => {
      const { c, id, sendAt } = await delivered(45)
      const url = commsUrl(c.id, `/messages/by_communication/${id}`)
      const first = await t.json(200, { url, token: c.token, query: { send_at: sendAt } })
      assert.equal(first.page, 1)
      assert.equal(first.page_size, 20)
      assert.equal(first.total, 45)
      assert.equal(first.messages.length, 20)
      assert.deepEqual(Object.keys(first.messages[0]).sort(), ['action_done_at', 'communication_id', 'contract_id', 'delivered_at', 'id', 'opened_at', 'send_at'])
      const third = await t.json(200, { url, token: c.token, query: { send_at: sendAt, page: '3' } })
      assert.equal(third.messages.length, 5)
      const fourth = await t.json(200, { url, token: c.token, query: { send_at: sendAt, page: '4' } })
      assert.deepEqual([fourth.messages.length, fourth.total], [0, 45])
      const seen = new Set([...first.messages, ...(await t.json(200, { url, token: c.token, query: { send_at: sendAt, page: '2' } })).messages, ...third.messages].map((m: any) => m.id))
      assert.equal(seen.size, 45)
      const max = await t.json(200, { url, token: c.token, query: { send_at: sendAt, page_size: '100' } })
      assert.equal(max.messages.length, 45)
      const exact = await t.json(200, { url, token: c.token, query: { send_at: sendAt, page_size: '45' } })
      assert.equal(exact.messages.length, 45)
      assert.equal((await t.json(200, { url, token: c.token, query: { send_at: sendAt, page_size: '45', page: '2' } })).messages.length, 0)
      // Another instant names another occurrence: none.
      assert.equal((await t.json(200, { url, token: c.token, query: { send_at: '2000-01-01T00:00:00Z' } })).total, 0)
      for (const query of <Record<string, string>[]>[{ send_at: sendAt, page_size: '101' }, { send_at: sendAt, page_size: '0' }, { send_at: sendAt, page: '0' }, { send_at: sendAt, page: 'x' }, {}, { send_at: 'yesterday' }, { send_at: sendAt, opened: 'maybe' }]) {
        const res = await t.call({ url, token: c.token, query })
        assert.equal(res.statusCode, 400, JSON.stringify(query))
        assert.match(res.json().errors, /querystring/)
      }
      const inbox = await t.call({ url: inboxUrl(c.id, 'not-a-uuid'), token: c.token })
      assert.equal(inbox.statusCode, 400)
    })

    if (engine === 'postgres') {
      it('reports over 100,000 messages in one quick query', async () => {
        const c = await company(t)
        const s = await subsidiary(t, c.id)
        // The recipients are made by SQL: 100,000 HTTP calls would test nothing more.
        await sql`INSERT INTO contracts (company_id, id, first_name, last_name, subsidiary_id)
          SELECT ${c.id}::uuid, gen_random_uuid(), 'Bulk', 'Contract ' || g, ${s}::uuid FROM generate_series(1, 100000) g`.execute(t.app.database.db)
        const sendAt = '2087-01-01T08:00:00.000Z'
        const id = await createComm(t, c, { send_at: sendAt, destination_subsidiary_ids: [s] })
        await runAt(t, sendAt)
        const started = performance.now()
        const rows = await report(t, c, id)
        const elapsed = performance.now() - started
        assert.deepEqual(rows, [{ send_at: sendAt, recipients: 100_000, delivered: 100_000, opened: 0, actions_done: 0 }])
        assert.ok(elapsed < 3000, `report took ${Math.round(elapsed)} ms`)
        const deep = await t.json(200, { url: commsUrl(c.id, `/messages/by_communication/${id}`), token: c.token, query: { send_at: sendAt, page: '1000', page_size: '100' } })
        assert.deepEqual([deep.messages.length, deep.total], [100, 100_000])
      })
    }

    it('needs the message scope, and answers 404 across companies on every route', async () => {
      const { c, id, sendAt, contracts } = await delivered(1, { action_required: 'acknowledge' })
      const [m] = await messagesOf(t, c, id, sendAt)
      const other = await delivered(1, { action_required: 'acknowledge' })
      const [otherMessage] = await messagesOf(t, other.c, other.id, other.sendAt)
      const routes = [
        { method: 'GET' as const, url: commsUrl(c.id, `/messages/by_communication/${id}`), query: { send_at: sendAt } },
        { method: 'GET' as const, url: inboxUrl(c.id, contracts[0]!) },
        { method: 'PUT' as const, url: messageUrl(c.id, m.id, 'open') },
        { method: 'PUT' as const, url: messageUrl(c.id, m.id, 'action') },
      ]
      const communicationOnly = await companyClient(t, c.id, ['read:company_communication', 'write:company_communication'])
      const wrongScope = await t.tokenFor(communicationOnly.client_id, communicationOnly.client_secret)
      for (const route of routes) {
        assert.equal((await t.call({ ...route, token: null })).statusCode, 401, route.url)
        assert.equal((await t.call({ ...route, token: wrongScope })).statusCode, 403, route.url)
        assert.equal((await t.call({ ...route, token: other.c.token })).statusCode, 404, route.url)
      }
      for (const route of [
        { method: 'GET' as const, url: commsUrl(c.id, `/messages/by_communication/${other.id}`), query: { send_at: other.sendAt } },
        { method: 'GET' as const, url: inboxUrl(c.id, other.contracts[0]!) },
        { method: 'PUT' as const, url: messageUrl(c.id, otherMessage.id, 'open') },
        { method: 'PUT' as const, url: messageUrl(c.id, otherMessage.id, 'action') },
      ]) {
        const res = await t.call({ ...route, token: c.token })
        assert.equal(res.statusCode, 404, route.url)
        assert.equal(res.json().code, 'not_found')
      }
      assert.deepEqual(await report(t, other.c, other.id), [{ send_at: other.sendAt, recipients: 1, delivered: 1, opened: 0, actions_done: 0 }])
    })
  })
}
