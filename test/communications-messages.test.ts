import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { company, companyClient, contract, subsidiary } from './helpers/factories.ts'
import { postgresOnly } from './helpers/requires.ts'
import { readMigrations } from '../src/db/migrate.ts'
import { commsUrl, counterDrift, createComm, messagesOf, report, runAt } from './communications.fixtures.ts'
import { withStatementTimeout } from '../src/db/database.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const inboxUrl = (companyId: string, contractId: string) =>
  `/api/v1/companies/${companyId}/contracts/${contractId}/messages`
const messageUrl = (companyId: string, messageId: string, what: 'open' | 'action') =>
  commsUrl(companyId, `/messages/${messageId}/${what}`)

// The delivery to 100,000 recipients is one job: on a loaded 2-core machine it can take more than
// the jobs' default bound, which would fail it (and leave the report empty) rather than test it.
onEachEngine('communication messages', { DATABASE_JOB_STATEMENT_TIMEOUT_MS: 600_000 }, (t, engine) => {
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
    const { c, id, sendAt, contracts } = await delivered(3, {
      action_required: 'acknowledge',
      subject: 'Sign the policy',
    })
    const messages = await messagesOf(t, c, id, sendAt)
    assert.equal(messages.length, 3)
    const [m1, m2] = messages
    assert.equal(
      (await t.call({ method: 'PUT', url: messageUrl(c.id, m1.id, 'open'), token: c.token })).statusCode,
      202,
    )
    const openedAt = (await messagesOf(t, c, id, sendAt)).find((m: any) => m.id === m1.id).opened_at
    assert.equal(openedAt, t.clock.now().toISOString())
    t.clock.advance(60_000)
    assert.equal(
      (await t.call({ method: 'PUT', url: messageUrl(c.id, m1.id, 'open'), token: c.token })).statusCode,
      202,
    )
    assert.equal((await messagesOf(t, c, id, sendAt)).find((m: any) => m.id === m1.id).opened_at, openedAt)
    // Acknowledging also records the opening; twice changes nothing.
    assert.equal(
      (await t.call({ method: 'PUT', url: messageUrl(c.id, m2.id, 'action'), token: c.token })).statusCode,
      202,
    )
    const acted = (await messagesOf(t, c, id, sendAt)).find((m: any) => m.id === m2.id)
    t.clock.advance(60_000)
    assert.equal(
      (await t.call({ method: 'PUT', url: messageUrl(c.id, m2.id, 'action'), token: c.token })).statusCode,
      202,
    )
    assert.deepEqual(
      (await messagesOf(t, c, id, sendAt)).find((m: any) => m.id === m2.id),
      acted,
    )
    assert.ok(acted.action_done_at && acted.opened_at === acted.action_done_at)
    assert.deepEqual(await report(t, c, id), [
      { send_at: sendAt, recipients: 3, delivered: 3, opened: 2, actions_done: 1 },
    ])
    // Filters of endpoint 32.
    const ids = async (query: Record<string, string>) =>
      (await messagesOf(t, c, id, sendAt, query)).map((m: any) => m.id).sort()
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
    assert.equal(
      (await t.json(200, { url: inboxUrl(c.id, m2.contract_id), token: c.token, query: { opened: 'false' } })).total,
      0,
    )
  })

  it('refuses an acknowledgement that the communication does not ask for', async () => {
    const { c, id, sendAt } = await delivered(1)
    const [m] = await messagesOf(t, c, id, sendAt)
    const res = await t.call({ method: 'PUT', url: messageUrl(c.id, m.id, 'action'), token: c.token })
    assert.equal(res.statusCode, 409)
    assert.equal(res.json().code, 'conflict')
    assert.equal((await report(t, c, id))[0].actions_done, 0)
  })

  it('keeps the report exact per occurrence: fan-out, openings, repeated ones, acknowledgements with and without an opening', async () => {
    const until = new Date(t.clock.now().getTime() + 4 * 86_400_000).toISOString().slice(0, 10)
    const { c, id, sendAt } = await delivered(5, {
      action_required: 'acknowledge',
      recurrent: 'daily',
      recurrent_until: until,
    })
    const put = async (messageId: string, what: 'open' | 'action') =>
      assert.equal(
        (await t.call({ method: 'PUT', url: messageUrl(c.id, messageId, what), token: c.token })).statusCode,
        202,
      )
    const row = (opened: number, actions: number, at = sendAt) => ({
      send_at: at,
      recipients: 5,
      delivered: 5,
      opened,
      actions_done: actions,
    })
    assert.deepEqual(await report(t, c, id), [row(0, 0)])
    const [m1, m2, m3] = await messagesOf(t, c, id, sendAt)
    await put(m1.id, 'open')
    assert.deepEqual(await report(t, c, id), [row(1, 0)])
    t.clock.advance(60_000)
    await put(m1.id, 'open')
    assert.deepEqual(await report(t, c, id), [row(1, 0)])
    await put(m2.id, 'action') // not opened yet: an opening and an acknowledgement
    assert.deepEqual(await report(t, c, id), [row(2, 1)])
    await put(m3.id, 'open')
    await put(m3.id, 'action') // opened already: an acknowledgement only
    assert.deepEqual(await report(t, c, id), [row(3, 2)])
    await put(m3.id, 'action')
    await put(m2.id, 'action')
    await put(m2.id, 'open')
    assert.deepEqual(await report(t, c, id), [row(3, 2)])
    // The next day's occurrence has counters of its own.
    await runAt(t, new Date(Date.parse(sendAt) + 26 * 3_600_000))
    const second = (await report(t, c, id))[1].send_at
    assert.deepEqual(await report(t, c, id), [row(3, 2), row(0, 0, second)])
    const [n1] = await messagesOf(t, c, id, second)
    await put(n1.id, 'action')
    assert.deepEqual(await report(t, c, id), [row(3, 2), row(1, 1, second)])
    assert.deepEqual(await counterDrift(t.app.database.db), [])
  })

  it('counts concurrent openings and acknowledgements of one message once', async () => {
    for (let round = 0; round < 3; round++) {
      const { c, id, sendAt } = await delivered(8, { action_required: 'acknowledge' })
      const ms = await messagesOf(t, c, id, sendAt)
      const put = (i: number, what: 'open' | 'action') =>
        t.call({ method: 'PUT', url: messageUrl(c.id, ms[i].id, what), token: c.token })
      assert.equal((await put(3, 'open')).statusCode, 202) // opened before the race
      const calls = []
      for (let k = 0; k < 6; k++) {
        calls.push(put(0, 'open')) // openings only
        calls.push(put(1, 'action')) // acknowledgements only
        calls.push(put(2, k % 2 ? 'action' : 'open')) // both, on a message not opened yet
        calls.push(put(3, k % 2 ? 'open' : 'action')) // both, on a message opened already
      }
      calls.push(put(4, 'open'), put(5, 'action')) // other messages of the occurrence at the same time
      const statuses = (await Promise.all(calls)).map((r) => r.statusCode)
      assert.deepEqual([...new Set(statuses)], [202])
      assert.deepEqual(await report(t, c, id), [
        { send_at: sendAt, recipients: 8, delivered: 8, opened: 6, actions_done: 4 },
      ])
      const after = await messagesOf(t, c, id, sendAt)
      assert.equal(after.filter((m: any) => m.opened_at).length, 6)
      assert.equal(after.filter((m: any) => m.action_done_at).length, 4)
    }
    assert.deepEqual(await counterDrift(t.app.database.db), [])
  })

  it('backfills the counters from the messages delivered before migration 0007', async () => {
    const { c, s, id, sendAt } = await delivered(3, { action_required: 'acknowledge' })
    const nobody = await delivered(0)
    const [m1, m2, m3] = await messagesOf(t, c, id, sendAt)
    for (const [m, what] of [
      [m1, 'open'],
      [m2, 'action'],
    ] as const) {
      assert.equal((await t.call({ method: 'PUT', url: messageUrl(c.id, m.id, what), token: c.token })).statusCode, 202)
    }
    const late = await contract(t, c.id, { subsidiary_id: s })
    const before = [await report(t, c, id), await report(t, nobody.c, nobody.id)]
    assert.deepEqual(before, [
      [{ send_at: sendAt, recipients: 3, delivered: 3, opened: 2, actions_done: 1 }],
      [{ send_at: nobody.sendAt, recipients: 0, delivered: 0, opened: 0, actions_done: 0 }],
    ])
    const migration = readMigrations().find((m) => m.version === '0007_occurrence_counters')
    assert.ok(migration)
    const counters = (trx: typeof t.app.database.db, companyId: string) =>
      sql<Record<string, unknown>>`
      SELECT recipients, opened, actions_done FROM communication_occurrences WHERE company_id = ${companyId}`
        .execute(trx)
        .then((r) => r.rows)
    // In a transaction rolled back at the end: the schema of this file's database stays as migrated.
    const rollback = new Error('rollback')
    await assert.rejects(
      t.app.database.db.transaction().execute(async (trx) => {
        // Writes that know nothing of counters, as before the migration: one more message, opened
        // and acknowledged, and an opening.
        await sql`INSERT INTO communication_messages (company_id, id, communication_id, contract_id, send_at, delivered_at, opened_at, action_done_at)
        VALUES (${c.id}, gen_random_uuid(), ${id}, ${late}, ${sendAt}, ${sendAt}, ${sendAt}, ${sendAt})`.execute(trx)
        await sql`UPDATE communication_messages SET opened_at = ${sendAt} WHERE company_id = ${c.id} AND id = ${m3.id}`.execute(
          trx,
        )
        await sql`ALTER TABLE communication_occurrences DROP COLUMN recipients, DROP COLUMN opened, DROP COLUMN actions_done`.execute(
          trx,
        )
        await sql.raw(migration.sql).execute(trx)
        assert.deepEqual(await counters(trx, c.id), [{ recipients: 4, opened: 4, actions_done: 2 }])
        assert.deepEqual(await counters(trx, nobody.c.id), [{ recipients: 0, opened: 0, actions_done: 0 }])
        assert.deepEqual(await counterDrift(trx), [])
        throw rollback
      }),
      (err) => err === rollback,
    )
    assert.deepEqual([await report(t, c, id), await report(t, nobody.c, nobody.id)], before)
  })

  it('refuses to delete contracts and communications or change their keys, so that no message names a missing one', async () => {
    const { c, id, sendAt, contracts } = await delivered(2)
    const unnamed = await contract(t, c.id) // named by no message: a foreign key would have let it go
    const other = await company(t)
    const refused = (table: string, what: RegExp) => (err: any) => {
      assert.equal(err.code, '23001', String(err))
      assert.match(err.message, new RegExp(`^${table} rows ${what.source}`))
      return true
    }
    const deleted = /are never deleted/
    const rekeyed = /never change their key/
    const statements: Array<[string, RegExp, ReturnType<typeof sql>]> = [
      ['contracts', deleted, sql`DELETE FROM contracts WHERE company_id = ${c.id} AND id = ${contracts[0]}`],
      ['contracts', deleted, sql`DELETE FROM contracts WHERE company_id = ${c.id} AND id = ${unnamed}`],
      ['contracts', deleted, sql`TRUNCATE contracts CASCADE`],
      [
        'contracts',
        rekeyed,
        sql`UPDATE contracts SET id = gen_random_uuid() WHERE company_id = ${c.id} AND id = ${contracts[0]}`,
      ],
      [
        'contracts',
        rekeyed,
        sql`UPDATE contracts SET company_id = ${other.id} WHERE company_id = ${c.id} AND id = ${unnamed}`,
      ],
      ['communications', deleted, sql`DELETE FROM communications WHERE company_id = ${c.id} AND id = ${id}`],
      ['communications', deleted, sql`TRUNCATE communications CASCADE`],
      [
        'communications',
        rekeyed,
        sql`UPDATE communications SET id = gen_random_uuid() WHERE company_id = ${c.id} AND id = ${id}`,
      ],
    ]
    for (const [table, what, statement] of statements) {
      // Each in a transaction of its own: a statement let through is rolled back with it.
      await assert.rejects(
        t.app.database.db.transaction().execute(async (trx) => {
          await statement.execute(trx)
          throw new Error(`${table}: the statement went through`)
        }),
        refused(table, what),
      )
    }
    assert.deepEqual((await messagesOf(t, c, id, sendAt)).map((m: any) => m.contract_id).sort(), [...contracts].sort())
    // Any other column still changes, through the API as before.
    const patched = await t.call({
      method: 'PUT',
      url: `/api/v1/companies/${c.id}/contracts/${contracts[0]}`,
      token: c.token,
      body: { first_name: 'Renamed', last_name: 'Person' },
    })
    assert.equal(patched.statusCode, 202, patched.body)
  })

  it('pages the messages of an occurrence: default 20, at most 100, past the end empty', async () => {
    const { c, id, sendAt } = await delivered(45)
    const url = commsUrl(c.id, `/messages/by_communication/${id}`)
    const first = await t.json(200, { url, token: c.token, query: { send_at: sendAt } })
    assert.equal(first.page, 1)
    assert.equal(first.page_size, 20)
    assert.equal(first.total, 45)
    assert.equal(first.messages.length, 20)
    assert.deepEqual(Object.keys(first.messages[0]).sort(), [
      'action_done_at',
      'communication_id',
      'contract_id',
      'delivered_at',
      'id',
      'opened_at',
      'send_at',
    ])
    const third = await t.json(200, { url, token: c.token, query: { send_at: sendAt, page: '3' } })
    assert.equal(third.messages.length, 5)
    const fourth = await t.json(200, { url, token: c.token, query: { send_at: sendAt, page: '4' } })
    assert.deepEqual([fourth.messages.length, fourth.total], [0, 45])
    const seen = new Set(
      [
        ...first.messages,
        ...(await t.json(200, { url, token: c.token, query: { send_at: sendAt, page: '2' } })).messages,
        ...third.messages,
      ].map((m: any) => m.id),
    )
    assert.equal(seen.size, 45)
    const max = await t.json(200, { url, token: c.token, query: { send_at: sendAt, page_size: '100' } })
    assert.equal(max.messages.length, 45)
    const exact = await t.json(200, { url, token: c.token, query: { send_at: sendAt, page_size: '45' } })
    assert.equal(exact.messages.length, 45)
    assert.equal(
      (await t.json(200, { url, token: c.token, query: { send_at: sendAt, page_size: '45', page: '2' } })).messages
        .length,
      0,
    )
    // Another instant names another occurrence: none.
    assert.equal((await t.json(200, { url, token: c.token, query: { send_at: '2000-01-01T00:00:00Z' } })).total, 0)
    for (const query of <Record<string, string>[]>[
      { send_at: sendAt, page_size: '101' },
      { send_at: sendAt, page_size: '0' },
      { send_at: sendAt, page: '0' },
      { send_at: sendAt, page: 'x' },
      {},
      { send_at: 'yesterday' },
      { send_at: sendAt, opened: 'maybe' },
    ]) {
      const res = await t.call({ url, token: c.token, query })
      assert.equal(res.statusCode, 400, JSON.stringify(query))
      assert.match(res.json().errors, /querystring/)
    }
    const inbox = await t.call({ url: inboxUrl(c.id, 'not-a-uuid'), token: c.token })
    assert.equal(inbox.statusCode, 400)
  })

  describe('at scale (PostgreSQL only)', () => {
    it('reports over 100,000 messages', postgresOnly(engine), async () => {
      const c = await company(t)
      const s = await subsidiary(t, c.id)
      // The recipients are made by SQL: 100,000 HTTP calls would test nothing more. Bulk set-up,
      // not a request: free of the requests' statement bound (the server's and this process's).
      await withStatementTimeout(0, () =>
        t.app.database.db.transaction().execute(async (trx) => {
          await sql`SET LOCAL statement_timeout = 0`.execute(trx)
          await sql`INSERT INTO contracts (company_id, id, first_name, last_name, subsidiary_id)
          SELECT ${c.id}::uuid, gen_random_uuid(), 'Bulk', 'Contract ' || g, ${s}::uuid FROM generate_series(1, 100000) g`.execute(
            trx,
          )
        }),
      )
      const sendAt = '2087-01-01T08:00:00.000Z'
      const id = await createComm(t, c, { send_at: sendAt, destination_subsidiary_ids: [s] })
      await runAt(t, sendAt)
      // How quick it is, is the bench's to measure (npm run bench); here, that it is right.
      const rows = await report(t, c, id)
      assert.deepEqual(rows, [{ send_at: sendAt, recipients: 100_000, delivered: 100_000, opened: 0, actions_done: 0 }])
      const deep = await t.json(200, {
        url: commsUrl(c.id, `/messages/by_communication/${id}`),
        token: c.token,
        query: { send_at: sendAt, page: '1000', page_size: '100' },
      })
      assert.deepEqual([deep.messages.length, deep.total], [100, 100_000])
    })
  })

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
    const communicationOnly = await companyClient(t, c.id, [
      'read:company_communication',
      'write:company_communication',
    ])
    const wrongScope = await t.tokenFor(communicationOnly.client_id, communicationOnly.client_secret)
    for (const route of routes) {
      assert.equal((await t.call({ ...route, token: null })).statusCode, 401, route.url)
      assert.equal((await t.call({ ...route, token: wrongScope })).statusCode, 403, route.url)
      assert.equal((await t.call({ ...route, token: other.c.token })).statusCode, 404, route.url)
    }
    for (const route of [
      {
        method: 'GET' as const,
        url: commsUrl(c.id, `/messages/by_communication/${other.id}`),
        query: { send_at: other.sendAt },
      },
      { method: 'GET' as const, url: inboxUrl(c.id, other.contracts[0]!) },
      { method: 'PUT' as const, url: messageUrl(c.id, otherMessage.id, 'open') },
      { method: 'PUT' as const, url: messageUrl(c.id, otherMessage.id, 'action') },
    ]) {
      const res = await t.call({ ...route, token: c.token })
      assert.equal(res.statusCode, 404, route.url)
      assert.equal(res.json().code, 'not_found')
    }
    assert.deepEqual(await report(t, other.c, other.id), [
      { send_at: other.sendAt, recipients: 1, delivered: 1, opened: 0, actions_done: 0 },
    ])
  })

  it('leaves no occurrence of this file whose counters differ from its messages', async () => {
    // A delivery of its own too: run alone or first, the check would look at an empty table.
    const { c, id, sendAt } = await delivered(2)
    assert.equal((await report(t, c, id))[0]?.recipients, 2, sendAt)
    assert.deepEqual(await counterDrift(t.app.database.db), [])
  })
})
