import { it } from 'node:test'
import assert from 'node:assert/strict'
import { company, companyClient, contract, subsidiary, team } from './helpers/factories.ts'
import {
  FAR_FUTURE,
  commBody,
  commsUrl,
  createComm,
  getComm,
  organisation,
  putComm,
  report,
  runAt,
} from './communications.fixtures.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

onEachEngine('communications', (t) => {
  it('creates a communication and reads it back, send_at in UTC, sender the calling client', async () => {
    const c = await company(t)
    const s = await subsidiary(t, c.id)
    const k = await team(t, c.id)
    const id = await createComm(t, c, {
      send_at: '2099-03-01T10:00:00+01:00',
      destination_subsidiary_ids: [s, s],
      destination_team_ids: [k],
      recurrent: 'weekly',
      recurrent_until: '2099-04-01',
      action_required: 'acknowledge',
      id: 'ignored',
      company_id: 'ignored',
      change_log: [{ junk: true }],
    })
    const got = await getComm(t, c, id)
    assert.equal(got.id, id)
    assert.equal(got.company_id, c.id)
    assert.equal(got.send_at, '2099-03-01T09:00:00.000Z')
    assert.equal(got.status, 'scheduled')
    assert.equal(got.sender_id, c.client.client_id)
    assert.deepEqual(got.destination_subsidiary_ids, [s])
    assert.deepEqual(got.destination_team_ids, [k])
    assert.equal(got.recurrent_until, '2099-04-01')
    assert.deepEqual(got.attachments, [])
    assert.equal(got.change_log.length, 1)
    assert.equal(got.change_log[0].action, 'created')
    assert.equal(got.change_log[0].by, c.client.client_id)
    assert.deepEqual(got.change_log[0].changes.subject, [null, 'Fire drill'])
  })

  it('takes a contract of the company as sender, nothing else', async () => {
    const c = await company(t)
    const k = await contract(t, c.id)
    const id = await createComm(t, c, { status: 'draft', sender_id: k })
    assert.equal((await getComm(t, c, id)).sender_id, k)
    const other = await company(t)
    const foreign = await contract(t, other.id)
    for (const sender of [foreign, 'someone-else']) {
      const res = await t.call({
        method: 'POST',
        url: commsUrl(c.id),
        token: c.token,
        body: commBody({ status: 'draft', sender_id: sender }),
      })
      assert.equal(res.statusCode, 400)
      assert.match(res.json().errors, /body\/sender_id/)
    }
  })

  it('lists newest send_at first, by year of the company calendar and by status', async () => {
    const c = await company(t) // Europe/Rome
    const old = await createComm(t, c, { status: 'draft', send_at: '2091-06-01T09:00:00Z' })
    const newYear = await createComm(t, c, { status: 'draft', send_at: '2091-12-31T23:30:00Z' }) // 2092-01-01 00:30 in Rome
    const later = await createComm(t, c, { status: 'draft', send_at: '2092-03-01T09:00:00Z' })
    await putComm(t, c, later, { status: 'discontinued' })
    const all = await t.json(200, { url: commsUrl(c.id), token: c.token })
    assert.deepEqual(
      all.map((x: any) => x.id),
      [later, newYear, old],
    )
    const y2092 = await t.json(200, { url: commsUrl(c.id), token: c.token, query: { year: '2092' } })
    assert.deepEqual(
      y2092.map((x: any) => x.id),
      [later, newYear],
    )
    const y2091 = await t.json(200, { url: commsUrl(c.id), token: c.token, query: { year: '2091' } })
    assert.deepEqual(
      y2091.map((x: any) => x.id),
      [old],
    )
    const drafts = await t.json(200, { url: commsUrl(c.id), token: c.token, query: { status: 'draft' } })
    assert.deepEqual(
      drafts.map((x: any) => x.id),
      [newYear, old],
    )
    const both = await t.json(200, {
      url: commsUrl(c.id),
      token: c.token,
      query: { status: 'discontinued', year: '2092' },
    })
    assert.deepEqual(
      both.map((x: any) => x.id),
      [later],
    )
    for (const query of <Record<string, string>[]>[
      { year: 'abc' },
      { year: '1899' },
      { year: '2200' },
      { status: 'sent' },
      { color: 'red' },
    ]) {
      assert.equal(
        (await t.call({ url: commsUrl(c.id), token: c.token, query })).statusCode,
        400,
        JSON.stringify(query),
      )
    }
  })

  it('refuses invalid bodies with 400 naming the field', async () => {
    const c = await company(t)
    const s = await subsidiary(t, c.id)
    const other = await company(t)
    const foreignSub = await subsidiary(t, other.id)
    const foreignTeam = await team(t, other.id)
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ recurrent: 'weekly' }, /recurrent_until is required/],
      [{ recurrent: 'weekly', recurrent_until: '2098-12-31' }, /recurrent_until must not be before/],
      [{ recurrent: 'monthly', recurrent_until: '2099-02-30' }, /recurrent_until/],
      [{ recurrent_until: '2099-05-01' }, /recurrent_until must be null/],
      [{ recurrent: 'hourly', recurrent_until: '2099-05-01' }, /body\/recurrent/],
      [{ send_at: '2099-01-01 09:00' }, /body\/send_at/],
      [{ send_at: '2099-01-01T09:00:00' }, /body\/send_at/],
      [{ subject: 42 }, /body\/subject must be string/],
      [{ subject: '' }, /body\/subject/],
      [{ color: 'red' }, /body\/color is not a known field/],
      [{ status: 'active' }, /body\/status/],
      [{ status: 'discontinued' }, /body\/status/],
      [{ action_required: 'sign' }, /body\/action_required/],
      [{ destination_subsidiary_ids: [] }, /needs a destination/],
      [{ destination_subsidiary_ids: [foreignSub] }, /destination_subsidiary_ids/],
      [{ destination_team_ids: [foreignTeam] }, /destination_team_ids/],
      [{ destination_team_ids: ['not-a-uuid'] }, /destination_team_ids/],
      [{ attachments: [{ id: '00000000-0000-4000-8000-000000000000' }] }, /body\/attachments/],
    ]
    for (const [fields, message] of cases) {
      const res = await t.call({
        method: 'POST',
        url: commsUrl(c.id),
        token: c.token,
        body: commBody({ destination_subsidiary_ids: [s], ...fields }),
      })
      assert.equal(res.statusCode, 400, `${JSON.stringify(fields)}: ${res.body}`)
      assert.equal(res.json().code, 'validation_failed')
      assert.match(res.json().errors, message, JSON.stringify(fields))
    }
    const missing = await t.call({
      method: 'POST',
      url: commsUrl(c.id),
      token: c.token,
      body: { subject: 'x', send_at: FAR_FUTURE },
    })
    assert.match(missing.json().errors, /body\/message is required/)
    assert.deepEqual(await t.json(200, { url: commsUrl(c.id), token: c.token }), [])
  })

  it('draft: kept, never sent; scheduled later with a past send_at, delivered at the next run', async () => {
    const { c, subB, contracts } = await organisation(t)
    const past = new Date(t.clock.now().getTime() - 3_600_000).toISOString()
    const id = await createComm(t, c, { status: 'draft', send_at: past, destination_subsidiary_ids: [subB] })
    await t.app.services.scheduler.runDue()
    assert.deepEqual(await report(t, c, id), [])
    assert.equal((await putComm(t, c, id, { status: 'scheduled', subject: 'Now' })).statusCode, 202)
    await t.app.services.scheduler.runDue()
    const got = await getComm(t, c, id)
    assert.equal(got.status, 'submitted')
    assert.deepEqual(
      (await report(t, c, id)).map((r: any) => [r.send_at, r.recipients]),
      [[past, 1]],
    )
    assert.deepEqual(
      got.change_log.map((e: any) => e.action),
      ['created', 'updated', 'delivered'],
    )
    assert.deepEqual(got.change_log[1].changes, { subject: ['Fire drill', 'Now'], status: ['draft', 'scheduled'] })
    assert.deepEqual(got.change_log[2], {
      at: t.clock.now().toISOString(),
      by: 'scheduler',
      action: 'delivered',
      changes: { status: ['scheduled', 'submitted'] },
      occurrence: past,
    })
    const inbox = await t.json(200, {
      url: `/api/v1/companies/${c.id}/contracts/${contracts.b1}/messages`,
      token: c.token,
    })
    assert.equal(inbox.messages[0].subject, 'Now')
  })

  it('scheduled: back to draft, rescheduled, discontinued; each cancels or moves the pending occurrence', async () => {
    const { c, subB } = await organisation(t)
    const first = '2093-05-01T08:00:00.000Z'
    const moved = '2093-06-01T08:00:00.000Z'
    const toDraft = await createComm(t, c, { send_at: first, destination_subsidiary_ids: [subB] })
    const toMove = await createComm(t, c, { send_at: first, destination_subsidiary_ids: [subB] })
    const toStop = await createComm(t, c, { send_at: first, destination_subsidiary_ids: [subB] })
    assert.equal((await putComm(t, c, toDraft, { status: 'draft' })).statusCode, 202)
    assert.equal((await putComm(t, c, toMove, { send_at: moved })).statusCode, 202)
    assert.equal((await putComm(t, c, toStop, { status: 'discontinued' })).statusCode, 202)
    await runAt(t, '2093-05-15T00:00:00Z')
    for (const id of [toDraft, toMove, toStop]) assert.deepEqual(await report(t, c, id), [])
    assert.equal((await getComm(t, c, toMove)).status, 'scheduled')
    await runAt(t, '2093-06-15T00:00:00Z')
    assert.deepEqual(
      (await report(t, c, toMove)).map((r: any) => r.send_at),
      [moved],
    )
    assert.deepEqual(await report(t, c, toDraft), [])
    const stopped = await getComm(t, c, toStop)
    assert.equal(stopped.status, 'discontinued')
    assert.equal(stopped.change_log.at(-1).action, 'discontinued')
    assert.deepEqual(stopped.change_log.at(-1).changes, { status: ['scheduled', 'discontinued'] })
    // Discontinued is final; a body that changes nothing is still accepted.
    for (const body of [{ status: 'scheduled' }, { status: 'draft' }, { subject: 'Again' }]) {
      const res = await putComm(t, c, toStop, body)
      assert.equal(res.statusCode, 409, JSON.stringify(body))
      assert.equal(res.json().code, 'conflict')
    }
    assert.equal((await putComm(t, c, toStop, stopped)).statusCode, 202)
    assert.equal((await getComm(t, c, toStop)).change_log.length, stopped.change_log.length)
  })

  it('draft: edited and discontinued; a series set back to draft and rescheduled to the same instant is still delivered', async () => {
    const { c, subB } = await organisation(t)
    const draft = await createComm(t, c, { status: 'draft' })
    assert.equal(
      (await putComm(t, c, draft, { subject: 'Edited', destination_subsidiary_ids: [subB] })).statusCode,
      202,
    )
    const edited = await getComm(t, c, draft)
    assert.deepEqual([edited.status, edited.subject, edited.destination_subsidiary_ids], ['draft', 'Edited', [subB]])
    assert.deepEqual(edited.change_log.at(-1).changes, {
      subject: ['Fire drill', 'Edited'],
      destination_subsidiary_ids: [[], [subB]],
    })
    assert.equal((await putComm(t, c, draft, { status: 'discontinued' })).statusCode, 202)
    assert.equal((await putComm(t, c, draft, { status: 'draft' })).statusCode, 409)

    const at = '2093-09-01T08:00:00.000Z'
    const id = await createComm(t, c, { send_at: at, destination_subsidiary_ids: [subB] })
    assert.equal((await putComm(t, c, id, { status: 'draft' })).statusCode, 202)
    await runAt(t, at) // nothing: its job was cancelled (and would find a draft)
    assert.equal((await putComm(t, c, id, { status: 'scheduled', subject: 'Second try' })).statusCode, 202)
    await runAt(t, at)
    assert.deepEqual(
      (await report(t, c, id)).map((r: any) => [r.send_at, r.recipients]),
      [[at, 1]],
    )
    assert.equal((await getComm(t, c, id)).status, 'submitted')
  })

  it('active: a delivered occurrence refuses every change but discontinued, which stops the rest', async () => {
    const { c, subB } = await organisation(t)
    const id = await createComm(t, c, {
      send_at: '2094-01-10T08:00:00Z',
      recurrent: 'daily',
      recurrent_until: '2094-01-20',
      destination_subsidiary_ids: [subB],
    })
    await runAt(t, '2094-01-10T08:00:00Z')
    const active = await getComm(t, c, id)
    assert.equal(active.status, 'active')
    for (const body of [
      { subject: 'Changed' },
      { status: 'scheduled' },
      { status: 'draft' },
      { recurrent_until: '2094-01-30' },
      { status: 'discontinued', subject: 'Changed' },
    ]) {
      const res = await putComm(t, c, id, body)
      assert.equal(res.statusCode, 409, JSON.stringify(body))
    }
    assert.equal((await putComm(t, c, id, { status: 'submitted' })).statusCode, 400)
    assert.equal((await putComm(t, c, id, active)).statusCode, 202) // sent back unchanged
    assert.equal((await putComm(t, c, id, { status: 'discontinued' })).statusCode, 202)
    await runAt(t, '2094-01-25T00:00:00Z')
    assert.deepEqual(
      (await report(t, c, id)).map((r: any) => r.send_at),
      ['2094-01-10T08:00:00.000Z'],
    )
    const stopped = await getComm(t, c, id)
    assert.equal(stopped.status, 'discontinued')
    assert.deepEqual(
      stopped.change_log.map((e: any) => e.action),
      ['created', 'delivered', 'discontinued'],
    )
    assert.deepEqual(stopped.change_log[1].changes, { status: ['scheduled', 'active'] })
    assert.equal((await putComm(t, c, id, { status: 'scheduled' })).statusCode, 409)
  })

  it('submitted: every occurrence delivered, nothing can change any more', async () => {
    const { c, subB } = await organisation(t)
    const id = await createComm(t, c, { send_at: '2094-02-01T08:00:00Z', destination_subsidiary_ids: [subB] })
    await runAt(t, '2094-02-01T08:00:00Z')
    assert.equal((await getComm(t, c, id)).status, 'submitted')
    for (const body of [{ status: 'discontinued' }, { subject: 'x' }, { status: 'scheduled' }]) {
      assert.equal((await putComm(t, c, id, body)).statusCode, 409, JSON.stringify(body))
    }
  })

  it('needs a token with the scope, and answers 404 across companies on every route', async () => {
    const c = await company(t)
    const s = await subsidiary(t, c.id)
    const id = await createComm(t, c, { destination_subsidiary_ids: [s] })
    const other = await company(t)
    const otherId = await createComm(t, other, { status: 'draft' })
    const routes = [
      { method: 'POST' as const, url: commsUrl(c.id), body: commBody() },
      { method: 'GET' as const, url: commsUrl(c.id) },
      { method: 'GET' as const, url: commsUrl(c.id, `/${id}`) },
      { method: 'PUT' as const, url: commsUrl(c.id, `/${id}`), body: { subject: 'x' } },
      { method: 'GET' as const, url: commsUrl(c.id, `/${id}/report`) },
    ]
    const readOnly = await companyClient(t, c.id, ['read:company_communication'])
    const readToken = await t.tokenFor(readOnly.client_id, readOnly.client_secret)
    for (const route of routes) {
      assert.equal((await t.call({ ...route, token: null })).statusCode, 401, route.url)
      assert.equal((await t.call({ ...route, token: other.token })).statusCode, 404, route.url)
      const limited = await t.call({ ...route, token: readToken })
      assert.equal(limited.statusCode, route.method === 'GET' ? 200 : 403, `${route.method} ${route.url}`)
    }
    for (const route of [
      { method: 'GET' as const, url: commsUrl(c.id, `/${otherId}`) },
      { method: 'PUT' as const, url: commsUrl(c.id, `/${otherId}`), body: { subject: 'x' } },
      { method: 'GET' as const, url: commsUrl(c.id, `/${otherId}/report`) },
    ]) {
      const res = await t.call({ ...route, token: c.token })
      assert.equal(res.statusCode, 404, route.url)
      assert.equal(res.json().code, 'not_found')
    }
    assert.equal((await getComm(t, other, otherId)).subject, 'Fire drill')
  })
})
