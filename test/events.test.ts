import { it } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { addToTeams, company, companyClient, contract, subsidiary, team } from './helpers/factories.ts'
import { createComm, messagesOf } from './communications.fixtures.ts'
import { EVENT_TYPES } from '../src/modules/events/outbox.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const eventsUrl = (companyId: string) => `/api/v1/companies/${companyId}/events`

onEachEngine('events', (t) => {
  /** Every event of the company, oldest first (the route answers newest first). */
  async function typesOf(companyId: string, token?: string): Promise<string[]> {
    const events = await t.json<any[]>(200, { url: eventsUrl(companyId), token, query: { limit: '500' } })
    return events.map((e) => e.type).reverse()
  }

  it('writes an event for every change of every resource, in order, with the object as it now is', async () => {
    const c = await company(t)
    const s = await subsidiary(t, c.id)
    const k = await contract(t, c.id, { subsidiary_id: s })
    const k2 = await contract(t, c.id)
    assert.equal(
      (
        await t.call({
          method: 'PUT',
          url: `/api/v1/companies/${c.id}/contracts/${k}`,
          token: c.token,
          body: { first_name: 'Giulia', last_name: 'Verdi', email: 'g@example.com', subsidiary_id: s },
        })
      ).statusCode,
      202,
    )
    const x = await team(t, c.id, { team_leader_ids: [k] })
    await addToTeams(t, c.id, k2, [x])
    const holidayRes = await t.call({
      method: 'POST',
      url: `/api/v1/companies/${c.id}/holidays`,
      token: c.token,
      body: { name: 'Patrono', day: '2026-06-24' },
    })
    assert.equal(holidayRes.statusCode, 202)
    const sendAt = new Date(t.clock.now().getTime() - 1000).toISOString()
    const comm = await createComm(t, c, { send_at: sendAt, destination_team_ids: [x], action_required: 'acknowledge' })
    await t.app.services.scheduler.runDue()
    const [m1, m2] = await messagesOf(t, c, comm, sendAt)
    assert.equal(
      (
        await t.call({
          method: 'PUT',
          url: `/api/v1/companies/${c.id}/communications/messages/${m1.id}/open`,
          token: c.token,
        })
      ).statusCode,
      202,
    )
    assert.equal(
      (
        await t.call({
          method: 'PUT',
          url: `/api/v1/companies/${c.id}/communications/messages/${m2.id}/action`,
          token: c.token,
        })
      ).statusCode,
      202,
    )
    assert.equal(
      (await t.call({ method: 'PUT', url: `/api/v1/subscription/${c.id}/cancel?end_of_term=true`, token: c.token }))
        .statusCode,
      200,
    )
    assert.equal((await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}` })).statusCode, 202)
    assert.equal((await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}/enable` })).statusCode, 202)

    const types = await typesOf(c.id)
    const expected = [
      'company.created',
      'subscription.created',
      'subsidiary.created',
      'contract.created',
      'contract.created',
      'contract.updated',
      'team.created',
      'team.member_added',
      'team.member_added',
      'holiday.created',
      'communication.created',
      'communication.occurrence_delivered',
      'communication.updated',
      'message.opened',
      'message.opened',
      'message.acknowledged',
      'subscription.cancellation_scheduled',
      'company.disabled',
      'company.enabled',
    ]
    // Statements of one transaction may come in another order than the requests' (the
    // delivery's occurrence record and its status change): compared as multisets, then the
    // order of the requests.
    assert.deepEqual([...types].sort(), [...expected].sort())
    assert.deepEqual(
      types.filter((type) => !type.startsWith('communication.')),
      expected.filter((type) => !type.startsWith('communication.')),
    )
    for (const type of types) assert.ok((EVENT_TYPES as readonly string[]).includes(type), `${type} is listed`)

    const [latest] = await t.json<any[]>(200, {
      url: eventsUrl(c.id),
      token: c.token,
      query: { type: 'contract.updated' },
    })
    assert.equal(latest.company_id, c.id)
    assert.equal(latest.data.object.id, k)
    assert.equal(latest.data.object.first_name, 'Giulia')
    assert.equal(latest.data.previous_attributes.first_name, 'Mario')
    assert.match(latest.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const [cancelled] = await t.json<any[]>(200, {
      url: eventsUrl(c.id),
      query: { type: 'subscription.cancellation_scheduled' },
    })
    // In trial, a cancellation at the end of the term keeps the status and schedules the end.
    assert.ok(cancelled.data.object.scheduled_cancellation_at)
    assert.equal(cancelled.data.previous_attributes.scheduled_cancellation_at, null)
  })

  it('a change that fails writes no event; a write of the same values writes none either', async () => {
    const c = await company(t)
    const code = 'SAME-CODE'
    await team(t, c.id, { code })
    const before = await typesOf(c.id)
    // 409: the code is taken (the batched insert fails for this item only).
    assert.equal(
      (
        await t.call({
          method: 'POST',
          url: `/api/v1/companies/${c.id}/teams`,
          token: c.token,
          body: { name: 'Other', code, team_leader_ids: [] },
        })
      ).statusCode,
      409,
    )
    // A transaction whose change committed nothing: the trigger's event rolls back with it.
    await assert.rejects(
      t.app.database.db.transaction().execute(async (trx) => {
        await trx.updateTable('companies').set({ name: 'Rolled back' }).where('id', '=', c.id).execute()
        throw new Error('abort')
      }),
    )
    const k = await contract(t, c.id, { first_name: 'Anna', last_name: 'Bianchi', email: 'a@example.com' })
    assert.equal(
      (
        await t.call({
          method: 'PUT',
          url: `/api/v1/companies/${c.id}/contracts/${k}`,
          token: c.token,
          body: { first_name: 'Anna', last_name: 'Bianchi', email: 'a@example.com' },
        })
      ).statusCode,
      202,
    )
    assert.deepEqual(await typesOf(c.id), [...before, 'contract.created'])
    const rows = await sql<{
      n: number
    }>`SELECT count(*)::int AS n FROM events WHERE company_id = ${c.id} AND data->'object'->>'name' = 'Rolled back'`.execute(
      t.app.database.db,
    )
    assert.equal(rows.rows[0]!.n, 0)
  })

  it('filters by type (exact or resource.*) and created_after, pages newest first with Link', async () => {
    const c = await company(t)
    for (let i = 0; i < 5; i++) await contract(t, c.id)
    const all = await t.json<any[]>(200, { url: eventsUrl(c.id), token: c.token })
    assert.deepEqual(
      all.map((e) => e.type),
      [
        'contract.created',
        'contract.created',
        'contract.created',
        'contract.created',
        'contract.created',
        'subscription.created',
        'company.created',
      ],
    )
    assert.deepEqual(
      (await t.json<any[]>(200, { url: eventsUrl(c.id), query: { type: 'subscription.*' } })).map((e) => e.type),
      ['subscription.created'],
    )
    assert.equal((await t.json<any[]>(200, { url: eventsUrl(c.id), query: { type: 'company.created' } })).length, 1)
    const after = all[2].created_at
    assert.ok(
      (await t.json<any[]>(200, { url: eventsUrl(c.id), query: { created_after: after } })).every(
        (e) => e.created_at > after,
      ),
    )

    const seen: string[] = []
    let url: string | undefined = `${eventsUrl(c.id)}?limit=3`
    while (url) {
      const res = await t.call({ url, token: c.token })
      assert.equal(res.statusCode, 200, res.body)
      seen.push(...res.json().map((e: any) => e.id))
      url = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link ?? ''))?.[1]
    }
    assert.deepEqual(
      seen,
      all.map((e) => e.id),
    )

    for (const [query, field] of [
      [{ type: 'contract.exploded' }, 'querystring/type'],
      [{ type: 'nothing.*' }, 'querystring/type'],
      [{ limit: '0' }, 'querystring/limit'],
      [{ limit: '501' }, 'querystring/limit'],
      [{ cursor: 'not-a-cursor' }, 'querystring/cursor'],
      [{ created_after: 'yesterday' }, 'querystring/created_after'],
      [{ colour: 'red' }, 'colour'],
    ] as const) {
      const res = await t.call({ url: eventsUrl(c.id), query: query as Record<string, string> })
      assert.equal(res.statusCode, 400, `${JSON.stringify(query)}: ${res.body}`)
      assert.match(res.json().errors, new RegExp(field.replace('/', '\\/')))
    }
  })

  it('answers pages of 100 without limit (a log is never answered whole); a cursor is bound to its list and filters', async () => {
    const c = await company(t)
    await sql`SELECT write_event('contract.created', ${c.id}::uuid, '{"object": {}}'::jsonb) FROM generate_series(1, 120)`.execute(
      t.app.database.db,
    )
    const first = await t.call({ url: eventsUrl(c.id), token: c.token })
    assert.equal(first.statusCode, 200, first.body)
    assert.equal(first.json().length, 100)
    const next = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link ?? ''))?.[1]
    assert.ok(next, 'a Link to the next page')
    const rest = await t.call({ url: next, token: c.token })
    assert.equal(rest.statusCode, 200, rest.body)
    assert.equal(rest.json().length, 120 + 2 - 100) // company.created and subscription.created came first
    assert.equal(rest.headers.link, undefined)
    const seen = new Set([...first.json(), ...rest.json()].map((e: { id: string }) => e.id))
    assert.equal(seen.size, 122)
    const cursor = new URL(next, 'http://x').searchParams.get('cursor')!
    const elsewhere = await t.call({
      url: eventsUrl(c.id),
      token: c.token,
      query: { cursor, type: 'contract.created' },
    })
    assert.equal(elsewhere.statusCode, 400)
    assert.match(elsewhere.json().errors, /querystring\/cursor/)
  })

  it("is tenant-isolated: a company reads only its own events, the platform log is the platform's", async () => {
    const a = await company(t)
    const b = await company(t)
    await contract(t, b.id)
    assert.equal((await t.call({ url: eventsUrl(b.id), token: a.token })).statusCode, 404)
    assert.equal((await t.call({ url: '/api/v1/events', token: a.token })).statusCode, 403)
    assert.equal((await t.call({ url: eventsUrl(a.id), token: null })).statusCode, 401)
    const writeOnly = await companyClient(t, a.id, ['write:company'])
    assert.equal(
      (await t.call({ url: eventsUrl(a.id), token: await t.tokenFor(writeOnly.client_id, writeOnly.client_secret) }))
        .statusCode,
      403,
    )
    const readOnly = await companyClient(t, a.id, ['read:company'])
    assert.equal(
      (await t.call({ url: eventsUrl(a.id), token: await t.tokenFor(readOnly.client_id, readOnly.client_secret) }))
        .statusCode,
      200,
    )
    assert.ok((await t.json<any[]>(200, { url: eventsUrl(a.id), token: a.token })).every((e) => e.company_id === a.id))

    const [ofB] = await t.json<any[]>(200, { url: eventsUrl(b.id), token: b.token })
    assert.deepEqual(await t.json(200, { url: `${eventsUrl(b.id)}/${ofB.id}`, token: b.token }), ofB)
    assert.deepEqual(await t.json(200, { url: `/api/v1/events/${ofB.id}` }), ofB)
    assert.equal((await t.call({ url: `${eventsUrl(a.id)}/${ofB.id}`, token: a.token })).statusCode, 404)
    assert.equal((await t.call({ url: `/api/v1/events/${ofB.id}`, token: a.token })).statusCode, 403)
    const platform = await t.json<any[]>(200, { url: '/api/v1/events', query: { limit: '500' } })
    assert.ok(platform.some((e) => e.company_id === a.id) && platform.some((e) => e.company_id === b.id))
    const onlyB = await t.json<any[]>(200, { url: '/api/v1/events', query: { company_id: b.id } })
    assert.ok(onlyB.length > 0 && onlyB.every((e) => e.company_id === b.id))
  })

  it('shows a company token only the events of the areas it may read (read:contract for contract events, ...)', async () => {
    const c = await company(t)
    const k = await contract(t, c.id)
    const x = await team(t, c.id)
    await addToTeams(t, c.id, k, [x])
    const companyOnly = await companyClient(t, c.id, ['read:company'])
    const companyOnlyToken = await t.tokenFor(companyOnly.client_id, companyOnly.client_secret)
    const withContracts = await companyClient(t, c.id, ['read:company', 'read:contract'])
    const withContractsToken = await t.tokenFor(withContracts.client_id, withContracts.client_secret)

    assert.deepEqual(await typesOf(c.id, companyOnlyToken), ['company.created', 'subscription.created'])
    assert.deepEqual(await typesOf(c.id, withContractsToken), [
      'company.created',
      'subscription.created',
      'contract.created',
    ])
    const all = await typesOf(c.id, c.token)
    assert.deepEqual(all, [
      'company.created',
      'subscription.created',
      'contract.created',
      'team.created',
      'team.member_added',
    ])
    // A filter for an area the token may not read answers an empty list; one event of it is not found.
    assert.deepEqual(
      await t.json<unknown[]>(200, { url: eventsUrl(c.id), token: companyOnlyToken, query: { type: 'contract.*' } }),
      [],
    )
    const [contractEvent] = await t.json<any[]>(200, {
      url: eventsUrl(c.id),
      token: c.token,
      query: { type: 'contract.created' },
    })
    assert.equal(
      (await t.call({ url: `${eventsUrl(c.id)}/${contractEvent.id}`, token: companyOnlyToken })).statusCode,
      404,
    )
    assert.equal(
      (await t.call({ url: `${eventsUrl(c.id)}/${contractEvent.id}`, token: withContractsToken })).statusCode,
      200,
    )
    // A platform token reads every event.
    assert.equal((await t.call({ url: `${eventsUrl(c.id)}/${contractEvent.id}` })).statusCode, 200)
  })

  it('lists an event of a type newer than the documented list instead of failing the list (it was a 500)', async () => {
    const c = await company(t)
    // A verb a later change of the subscriptions' history may bring before this list knows it.
    await sql`SELECT write_event('subscription.newer_verb', ${c.id}::uuid, '{"object": {}}'::jsonb)`.execute(
      t.app.database.db,
    )
    const [latest] = await t.json<any[]>(200, { url: eventsUrl(c.id), token: c.token })
    assert.equal(latest.type, 'subscription.newer_verb')
    const doc = await t.json(200, { url: '/openapi.json', token: null })
    assert.ok(
      JSON.stringify(doc).includes('"communication.occurrence_delivered"'),
      'the types are listed in the OpenAPI document',
    )
  })

  it('keeps events EVENTS_RETENTION_DAYS: the hourly job deletes older ones', async () => {
    const c = await company(t)
    assert.ok((await typesOf(c.id)).length > 0)
    const back = t.clock.now()
    t.clock.set(new Date(Date.now() + 31 * 86_400_000))
    try {
      await t.app.services.scheduler.runDue()
    } finally {
      t.clock.set(back)
    }
    // The jobs due by then (the trial's end) write events of their own, now.
    const left = await sql<{
      n: number
    }>`SELECT count(*)::int AS n FROM events WHERE company_id = ${c.id} AND created_at <= ${back}`.execute(
      t.app.database.db,
    )
    assert.equal(left.rows[0]!.n, 0)
  })
})
