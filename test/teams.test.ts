import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { locationId, uniq } from './helpers/app.ts'
import { randomUUID } from 'node:crypto'
import { createTeamsRepository } from '../src/modules/teams/teams.repository.ts'
import {
  addToTeams,
  company,
  companyClient,
  contract,
  subsidiary,
  team,
  type CompanyFixture,
} from './helpers/factories.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const api = (companyId: string) => `/api/v1/companies/${companyId}`

onEachEngine('teams', (t) => {
  let acme: CompanyFixture
  let other: CompanyFixture
  before(async () => {
    acme = await company(t)
    other = await company(t)
  })

  const getTeam = (c: CompanyFixture, id: string) => t.json(200, { url: `${api(c.id)}/teams/${id}`, token: c.token })
  const members = (c: CompanyFixture, id: string) =>
    t.json<any[]>(200, { url: `${api(c.id)}/teams/${id}/contracts`, token: c.token })
  const teamIdsOf = async (c: CompanyFixture, contractId: string) =>
    (await t.json(200, { url: `${api(c.id)}/contracts/${contractId}`, token: c.token })).team_ids as string[]
  const move = (c: CompanyFixture, teamId: string, action: string, body: unknown, token = c.token) =>
    t.call({ method: 'PUT', url: `${api(c.id)}/teams/${teamId}/${action}`, token, body })

  it('creates a team with leaders (202 + Location) and reads it back, alone and in the list', async () => {
    const s = await subsidiary(t, acme.id)
    const [a, b] = [await contract(t, acme.id), await contract(t, acme.id)]
    const res = await t.call({
      method: 'POST',
      url: `${api(acme.id)}/teams`,
      token: acme.token,
      // id and company_id are server-owned: accepted and ignored.
      body: {
        id: 'whatever',
        company_id: other.id,
        name: 'Sales',
        code: uniq('SALES'),
        subsidiary_id: s,
        team_leader_ids: [b, a, a],
      },
    })
    assert.equal(res.statusCode, 202)
    assert.equal(res.body, '')
    const id = locationId(res)
    assert.equal(res.headers.location, `${api(acme.id)}/teams/${id}`)
    const got = await t.json(200, { url: res.headers.location as string, token: acme.token })
    assert.deepEqual(got, {
      id,
      name: 'Sales',
      code: got.code,
      company_id: acme.id,
      subsidiary_id: s,
      team_leader_ids: [a, b].sort(),
    })
    const list = await t.json<any[]>(200, { url: `${api(acme.id)}/teams`, token: acme.token })
    assert.deepEqual(
      list.find((x) => x.id === id),
      got,
    )
    assert.ok(list.every((x) => x.company_id === acme.id))
    // Leaders are members, and the contracts' team_ids say so.
    const m = await members(acme, id)
    assert.deepEqual(
      m.map((x) => [x.id, x.is_leader]).sort(),
      [
        [a, true],
        [b, true],
      ].sort(),
    )
    assert.deepEqual(await teamIdsOf(acme, a), [id])
    assert.equal(m[0].first_name, 'Mario')
    assert.deepEqual(m[0].team_ids, [id])
  })

  it('creates a team without leaders nor subsidiary', async () => {
    const id = await team(t, acme.id, { team_leader_ids: undefined }, acme.token)
    const got = await getTeam(acme, id)
    assert.equal(got.subsidiary_id, null)
    assert.deepEqual(got.team_leader_ids, [])
    assert.deepEqual(await members(acme, id), [])
  })

  it('refuses invalid bodies with 400 naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ code: 'X1' }, /body\/name is required/],
      [{ name: 123, code: 'X1' }, /body\/name must be string/],
      [{ name: 'A' }, /body\/code is required/],
      [{ name: '', code: 'X1' }, /body\/name/],
      [{ name: 'A', code: 'X1', colour: 'red' }, /body\/colour is not a known field/],
      [{ name: 'A', code: 'X1', team_leader_ids: ['not-a-uuid'] }, /body\/team_leader_ids\/0/],
      [{ name: 'A', code: 'X1', subsidiary_id: 'nope' }, /body\/subsidiary_id/],
    ]
    for (const [body, message] of cases) {
      const res = await t.call({ method: 'POST', url: `${api(acme.id)}/teams`, token: acme.token, body })
      assert.equal(res.statusCode, 400, JSON.stringify(body))
      assert.equal(res.json().code, 'validation_failed')
      assert.match(res.json().errors, message)
    }
  })

  it('refuses leaders and subsidiaries of another company with 400, storing nothing', async () => {
    const foreignContract = await contract(t, other.id)
    const foreignSubsidiary = await subsidiary(t, other.id)
    const own = await contract(t, acme.id)
    const code = uniq('REF')
    let res = await t.call({
      method: 'POST',
      url: `${api(acme.id)}/teams`,
      token: acme.token,
      body: { name: 'A', code, team_leader_ids: [own, foreignContract] },
    })
    assert.equal(res.statusCode, 400)
    assert.match(res.json().errors, /body\/team_leader_ids/)
    res = await t.call({
      method: 'POST',
      url: `${api(acme.id)}/teams`,
      token: acme.token,
      body: { name: 'A', code, subsidiary_id: foreignSubsidiary },
    })
    assert.equal(res.statusCode, 400)
    assert.match(res.json().errors, /body\/subsidiary_id/)
    const list = await t.json<any[]>(200, { url: `${api(acme.id)}/teams`, token: acme.token })
    assert.ok(!list.some((x) => x.code === code))
    assert.deepEqual(await teamIdsOf(acme, own), [])
  })

  it('keeps code unique within a company (409), also under a race, but not across companies', async () => {
    const code = uniq('DUP')
    await team(t, acme.id, { code }, acme.token)
    const res = await t.call({
      method: 'POST',
      url: `${api(acme.id)}/teams`,
      token: acme.token,
      body: { name: 'Again', code },
    })
    assert.equal(res.statusCode, 409)
    assert.equal(res.json().code, 'conflict')
    assert.match(res.json().errors, /code/)
    await team(t, other.id, { code }, other.token)

    const raced = uniq('RACE')
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.call({ method: 'POST', url: `${api(acme.id)}/teams`, token: acme.token, body: { name: 'R', code: raced } }),
      ),
    )
    assert.deepEqual(answers.map((r) => r.statusCode).sort(), [202, 409, 409, 409, 409, 409, 409, 409])

    // An update onto another team's code is a conflict too, and changes nothing.
    const second = await team(t, acme.id, {}, acme.token)
    const before = await getTeam(acme, second)
    const upd = await t.call({
      method: 'PUT',
      url: `${api(acme.id)}/teams/${second}`,
      token: acme.token,
      body: { name: 'Z', code },
    })
    assert.equal(upd.statusCode, 409)
    assert.deepEqual(await getTeam(acme, second), before)
  })

  it('answers each of many concurrent creations on its own: created, code taken, foreign leader or subsidiary', async () => {
    // Each refusal stays with its request, in a statement of its own or shared (src/db/write-batches.ts; the
    // repository test below makes them share one).
    const [a, b] = [await contract(t, acme.id), await contract(t, acme.id)]
    const foreignContract = await contract(t, other.id)
    const foreignSubsidiary = await subsidiary(t, other.id)
    const taken = uniq('TAKEN')
    await team(t, acme.id, { code: taken }, acme.token)
    const shared = uniq('SHARED')
    const fresh = Array.from({ length: 6 }, (_, i) => uniq(`FRESH${i}`))
    const bodies: Array<[unknown, number]> = [
      ...fresh.map((code, i): [unknown, number] => [
        { name: `F${i}`, code, team_leader_ids: i % 2 ? [a] : [b, a] },
        202,
      ]),
      [{ name: 'S', code: shared }, 202],
      [{ name: 'S', code: shared }, 409],
      [{ name: 'S', code: shared }, 409],
      [{ name: 'T', code: taken }, 409],
      [{ name: 'L', code: uniq('LEAD'), team_leader_ids: [a, foreignContract] }, 400],
      [{ name: 'U', code: uniq('SUB'), subsidiary_id: foreignSubsidiary }, 400],
    ]
    const answers = await Promise.all(
      bodies.map(([body]) => t.call({ method: 'POST', url: `${api(acme.id)}/teams`, token: acme.token, body })),
    )
    assert.deepEqual(
      answers.slice(0, 6).map((r) => r.statusCode),
      bodies.slice(0, 6).map(([, status]) => status),
    )
    assert.deepEqual(
      answers
        .slice(6, 9)
        .map((r) => r.statusCode)
        .sort(),
      [202, 409, 409],
    )
    assert.deepEqual(
      answers.slice(9).map((r) => r.statusCode),
      [409, 400, 400],
    )
    assert.match(answers[10]!.json().errors, new RegExp(`unknown: ${foreignContract}`))
    assert.match(answers[11]!.json().errors, /body\/subsidiary_id/)
    for (const [i, code] of fresh.entries()) {
      const got = await getTeam(acme, locationId(answers[i]!))
      assert.deepEqual([got.code, got.name, got.team_leader_ids], [code, `F${i}`, (i % 2 ? [a] : [a, b]).sort()])
    }
    const list = await t.json<any[]>(200, { url: `${api(acme.id)}/teams`, token: acme.token })
    assert.equal(list.filter((x) => x.code === shared).length, 1)
    assert.equal(list.filter((x) => x.code === taken).length, 1)
    assert.ok(!list.some((x) => x.name === 'L' || x.name === 'U'))
    // Operators see the batches in /metrics.
    const metrics = await t.call({ url: '/metrics', token: null })
    const written = /db_write_batch_items_sum\{name="team_creation",outcome="written"\} (\d+)/.exec(metrics.body)
    assert.ok(written && Number(written[1]) >= bodies.length, metrics.body.slice(0, 200))
  })

  it('shares one statement between creations of the same moment: the first of a code wins, an odd name fails no one', async () => {
    const batches: number[] = []
    const repo = createTeamsRepository(t.app.database.db, {
      observer: (_name, items, outcome) => {
        if (outcome === 'written') batches.push(items)
      },
    })
    const leader = await contract(t, acme.id)
    const code = uniq('SAME')
    const now = new Date()
    const ids = Array.from({ length: 12 }, () => randomUUID())
    // Asked in the same turn, so they go in one statement (src/db/write-batches.ts).
    const outcomes = await Promise.all([
      ...ids
        .slice(0, 11)
        .map((id, i) =>
          repo.createTeam(acme.id, id, { name: `Team ${i}`, code, subsidiary_id: null }, i % 2 ? [] : [leader], now),
        ),
      repo.createTeam(
        acme.id,
        ids[11]!,
        { name: 'Lone \ud800 surrogate', code: uniq('ODD'), subsidiary_id: null },
        [],
        now,
      ),
    ])
    assert.deepEqual(batches, [12])
    assert.deepEqual(
      outcomes.map((o) => o.created),
      [true, ...Array(10).fill(false), true],
    )
    assert.equal((await getTeam(acme, ids[0]!)).name, 'Team 0')
    assert.equal((await getTeam(acme, ids[11]!)).name, 'Lone \ufffd surrogate')
  })

  it("refuses a NUL in a new team's name or code with 400 naming the field", async () => {
    for (const [field, body] of [
      ['name', { name: 'a\u0000b', code: uniq('NUL') }],
      ['code', { name: 'N', code: 'a\u0000b' }],
    ] as const) {
      const res = await t.call({ method: 'POST', url: `${api(acme.id)}/teams`, token: acme.token, body })
      assert.equal(res.statusCode, 400)
      assert.match(res.json().errors, new RegExp(`body/${field} must not contain the NUL character`))
    }
  })

  it('counts a creation run again after its commit went through as created, not as its own code taken', async () => {
    // What write-batches.ts does when a batch's answer is lost: the same teams, once more.
    const repo = createTeamsRepository(t.app.database.db)
    const leader = await contract(t, acme.id)
    const [id, code, now] = [randomUUID(), uniq('AGAIN'), new Date()]
    const values = { name: 'Again', code, subsidiary_id: null }
    assert.equal((await repo.createTeam(acme.id, id, values, [leader], now)).created, true)
    assert.equal((await repo.createTeam(acme.id, id, values, [leader], now)).created, true)
    assert.equal((await repo.createTeam(acme.id, randomUUID(), values, [leader], now)).created, false)
    assert.deepEqual((await getTeam(acme, id)).team_leader_ids, [leader])
  })

  it('updates a team (24): team_leader_ids replaces the leaders; new ones join, removed ones stay members', async () => {
    const [a, b, c] = [await contract(t, acme.id), await contract(t, acme.id), await contract(t, acme.id)]
    const s = await subsidiary(t, acme.id)
    const id = await team(t, acme.id, { team_leader_ids: [a, b] }, acme.token)
    const code = uniq('NEW')
    const res = await t.call({
      method: 'PUT',
      url: `${api(acme.id)}/teams/${id}`,
      token: acme.token,
      body: { id: 'ignored', name: 'Renamed', code, subsidiary_id: s, team_leader_ids: [b, c] },
    })
    assert.equal(res.statusCode, 202)
    assert.equal(res.body, '')
    assert.deepEqual(await getTeam(acme, id), {
      id,
      name: 'Renamed',
      code,
      company_id: acme.id,
      subsidiary_id: s,
      team_leader_ids: [b, c].sort(),
    })
    const m = Object.fromEntries((await members(acme, id)).map((x) => [x.id, x.is_leader]))
    assert.deepEqual(m, { [a]: false, [b]: true, [c]: true })
    for (const k of [a, b, c]) assert.deepEqual(await teamIdsOf(acme, k), [id])

    // Left out, the leaders stay; the subsidiary is replaced (none).
    await t.json(202, {
      method: 'PUT',
      url: `${api(acme.id)}/teams/${id}`,
      token: acme.token,
      body: { name: 'Again', code },
    })
    const got = await getTeam(acme, id)
    assert.deepEqual(got.team_leader_ids, [b, c].sort())
    assert.equal(got.subsidiary_id, null)
    // An empty list demotes everyone, who stay members.
    await t.json(202, {
      method: 'PUT',
      url: `${api(acme.id)}/teams/${id}`,
      token: acme.token,
      body: { name: 'Again', code, team_leader_ids: [] },
    })
    assert.deepEqual((await getTeam(acme, id)).team_leader_ids, [])
    assert.equal((await members(acme, id)).length, 3)
  })

  it('refuses an update with 400 (body, foreign leader or subsidiary) and 404 (unknown team)', async () => {
    const id = await team(t, acme.id, {}, acme.token)
    const before = await getTeam(acme, id)
    const foreign = await contract(t, other.id)
    for (const body of [
      { name: 'x' },
      { name: 'x', code: 'y', team_leader_ids: [foreign] },
      { name: 'x', code: 'y', subsidiary_id: await subsidiary(t, other.id) },
    ]) {
      const res = await t.call({ method: 'PUT', url: `${api(acme.id)}/teams/${id}`, token: acme.token, body })
      assert.equal(res.statusCode, 400, JSON.stringify(body))
    }
    assert.deepEqual(await getTeam(acme, id), before)
    const res = await t.call({
      method: 'PUT',
      url: `${api(acme.id)}/teams/${crypto.randomUUID()}`,
      token: acme.token,
      body: { name: 'x', code: uniq('y') },
    })
    assert.equal(res.statusCode, 404)
  })

  it('upgrades (20) and downgrades (23) idempotently; a non-member joins on upgrade', async () => {
    const id = await team(t, acme.id, {}, acme.token)
    const k = await contract(t, acme.id)
    for (let i = 0; i < 2; i++) {
      const res = await move(acme, id, 'upgrade_contract', { contract_id: k, team_id: id })
      assert.equal(res.statusCode, 202)
      assert.equal(res.body, '')
      assert.deepEqual((await getTeam(acme, id)).team_leader_ids, [k])
      assert.deepEqual(
        (await members(acme, id)).map((x) => [x.id, x.is_leader]),
        [[k, true]],
      )
      assert.deepEqual(await teamIdsOf(acme, k), [id])
    }
    for (let i = 0; i < 2; i++) {
      assert.equal((await move(acme, id, 'downgrade_contract', { contract_id: k })).statusCode, 202)
      assert.deepEqual((await getTeam(acme, id)).team_leader_ids, [])
      assert.deepEqual(
        (await members(acme, id)).map((x) => [x.id, x.is_leader]),
        [[k, false]],
      )
    }
    // A downgrade of a non-member changes nothing: it does not join.
    const outsider = await contract(t, acme.id)
    assert.equal((await move(acme, id, 'downgrade_contract', { contract_id: outsider })).statusCode, 202)
    assert.deepEqual(await teamIdsOf(acme, outsider), [])
  })

  it('removes a contract from a team with its leadership, idempotently', async () => {
    const k = await contract(t, acme.id)
    const id = await team(t, acme.id, { team_leader_ids: [k] }, acme.token)
    const keep = await team(t, acme.id, { team_leader_ids: [k] }, acme.token)
    for (let i = 0; i < 2; i++) {
      assert.equal((await move(acme, id, 'remove_contract', { contract_id: k, team_id: id })).statusCode, 202)
      assert.deepEqual(await members(acme, id), [])
      assert.deepEqual((await getTeam(acme, id)).team_leader_ids, [])
      assert.deepEqual(await teamIdsOf(acme, k), [keep])
    }
  })

  it('adds a contract to several teams (35), idempotently and all or nothing', async () => {
    const k = await contract(t, acme.id)
    const [x, y] = [await team(t, acme.id, {}, acme.token), await team(t, acme.id, {}, acme.token)]
    await addToTeams(t, acme.id, k, [x, y, x], acme.token)
    await addToTeams(t, acme.id, k, [y], acme.token)
    assert.deepEqual(await teamIdsOf(acme, k), [x, y].sort())
    for (const id of [x, y])
      assert.deepEqual(
        (await members(acme, id)).map((m) => [m.id, m.is_leader]),
        [[k, false]],
      )
    // A leader added again stays a leader.
    await move(acme, x, 'upgrade_contract', { contract_id: k })
    await addToTeams(t, acme.id, k, [x], acme.token)
    assert.deepEqual((await getTeam(acme, x)).team_leader_ids, [k])
    // One team of another company: 404 and the others are not joined either.
    const z = await team(t, acme.id, {}, acme.token)
    const foreignTeam = await team(t, other.id, {}, other.token)
    const res = await t.call({
      method: 'PUT',
      url: `${api(acme.id)}/teams/add_contract`,
      token: acme.token,
      body: { contract_id: k, team_ids: [z, foreignTeam] },
    })
    assert.equal(res.statusCode, 404)
    assert.deepEqual(await teamIdsOf(acme, k), [x, y].sort())
    const bad = await t.call({
      method: 'PUT',
      url: `${api(acme.id)}/teams/add_contract`,
      token: acme.token,
      body: { contract_id: k },
    })
    assert.equal(bad.statusCode, 400)
    assert.match(bad.json().errors, /body\/team_ids is required/)
  })

  it('never duplicates a membership nor fails under 20 concurrent up/downgrades and adds', async () => {
    const id = await team(t, acme.id, {}, acme.token)
    const k = await contract(t, acme.id)
    const calls = Array.from({ length: 20 }, (_, i) =>
      i % 3 === 2
        ? t.call({
            method: 'PUT',
            url: `${api(acme.id)}/teams/add_contract`,
            token: acme.token,
            body: { contract_id: k, team_ids: [id] },
          })
        : move(acme, id, i % 3 === 0 ? 'upgrade_contract' : 'downgrade_contract', { contract_id: k }),
    )
    const answers = await Promise.all(calls)
    assert.deepEqual([...new Set(answers.map((r) => r.statusCode))], [202])
    assert.equal((await members(acme, id)).length, 1)
    assert.deepEqual(await teamIdsOf(acme, k), [id])
  })

  it("refuses a body team_id other than the path's (400) and unknown or foreign teams and contracts (404)", async () => {
    const id = await team(t, acme.id, {}, acme.token)
    const k = await contract(t, acme.id)
    const foreignContract = await contract(t, other.id)
    const foreignTeam = await team(t, other.id, {}, other.token)
    for (const action of ['upgrade_contract', 'downgrade_contract', 'remove_contract']) {
      let res = await move(acme, id, action, { contract_id: k, team_id: foreignTeam })
      assert.equal(res.statusCode, 400, action)
      assert.match(res.json().errors, /body\/team_id/)
      assert.equal((await move(acme, id, action, {})).statusCode, 400, action)
      for (const [teamId, contractId] of [
        [foreignTeam, k],
        [id, foreignContract],
        [crypto.randomUUID(), k],
        [id, crypto.randomUUID()],
      ]) {
        res = await move(acme, teamId!, action, { contract_id: contractId })
        assert.equal(res.statusCode, 404, `${action} ${teamId} ${contractId}`)
        assert.equal(res.json().code, 'not_found')
      }
    }
    // Nothing moved in the other company.
    assert.deepEqual(await members(other, foreignTeam), [])
    assert.deepEqual(await teamIdsOf(other, foreignContract), [])
    const res = await t.call({
      method: 'PUT',
      url: `${api(acme.id)}/teams/add_contract`,
      token: acme.token,
      body: { contract_id: foreignContract, team_ids: [id] },
    })
    assert.equal(res.statusCode, 404)
    assert.deepEqual(await members(acme, id), [])
  })

  it("answers 404 for another company's team on this company's path (GET, PUT, contracts)", async () => {
    const foreignTeam = await team(t, other.id, {}, other.token)
    for (const url of [`${api(acme.id)}/teams/${foreignTeam}`, `${api(acme.id)}/teams/${foreignTeam}/contracts`]) {
      const res = await t.call({ url, token: acme.token })
      assert.equal(res.statusCode, 404, url)
    }
    const res = await t.call({
      method: 'PUT',
      url: `${api(acme.id)}/teams/${foreignTeam}`,
      token: acme.token,
      body: { name: 'hijack', code: uniq('H') },
    })
    assert.equal(res.statusCode, 404)
    assert.notEqual((await getTeam(other, foreignTeam)).name, 'hijack')
  })

  it("answers 404 to another company's token on every route of this company, as for a missing company", async () => {
    const id = await team(t, acme.id, {}, acme.token)
    const k = await contract(t, acme.id)
    const routes: Array<{ method: 'GET' | 'POST' | 'PUT'; url: string; body?: unknown }> = [
      { method: 'POST', url: `${api(acme.id)}/teams`, body: { name: 'x', code: uniq('x') } },
      { method: 'GET', url: `${api(acme.id)}/teams` },
      { method: 'GET', url: `${api(acme.id)}/teams/${id}` },
      { method: 'PUT', url: `${api(acme.id)}/teams/${id}`, body: { name: 'x', code: uniq('x') } },
      { method: 'PUT', url: `${api(acme.id)}/teams/${id}/upgrade_contract`, body: { contract_id: k } },
      { method: 'PUT', url: `${api(acme.id)}/teams/${id}/downgrade_contract`, body: { contract_id: k } },
      { method: 'PUT', url: `${api(acme.id)}/teams/${id}/remove_contract`, body: { contract_id: k } },
      { method: 'PUT', url: `${api(acme.id)}/teams/add_contract`, body: { contract_id: k, team_ids: [id] } },
      { method: 'GET', url: `${api(acme.id)}/teams/${id}/contracts` },
    ]
    const missing = crypto.randomUUID()
    for (const route of routes) {
      const res = await t.call({ ...route, token: other.token })
      assert.equal(res.statusCode, 404, `${route.method} ${route.url}`)
      assert.equal(res.json().code, 'not_found')
      // The platform client sees a missing company the same way.
      const gone = await t.call({ ...route, url: route.url.replace(acme.id, missing) })
      assert.equal(gone.statusCode, 404, `missing company: ${route.method} ${route.url}`)
    }
    assert.deepEqual(await members(acme, id), [])
    assert.equal(
      (await t.json<any[]>(200, { url: `${api(acme.id)}/teams`, token: acme.token })).filter((x) => x.id === id).length,
      1,
    )
  })

  it('needs a token (401) with read:team to read and write:team to write (403)', async () => {
    const id = await team(t, acme.id, {}, acme.token)
    const k = await contract(t, acme.id)
    const reader = await companyClient(t, acme.id, ['read:team'])
    const readToken = await t.tokenFor(reader.client_id, reader.client_secret)
    const stranger = await companyClient(t, acme.id, ['read:contract'])
    const noTeamToken = await t.tokenFor(stranger.client_id, stranger.client_secret)
    const reads = [`${api(acme.id)}/teams`, `${api(acme.id)}/teams/${id}`, `${api(acme.id)}/teams/${id}/contracts`]
    const writes: Array<{ method: 'POST' | 'PUT'; url: string; body: unknown }> = [
      { method: 'POST', url: `${api(acme.id)}/teams`, body: { name: 'x', code: uniq('x') } },
      { method: 'PUT', url: `${api(acme.id)}/teams/${id}`, body: { name: 'x', code: uniq('x') } },
      { method: 'PUT', url: `${api(acme.id)}/teams/${id}/upgrade_contract`, body: { contract_id: k } },
      { method: 'PUT', url: `${api(acme.id)}/teams/${id}/downgrade_contract`, body: { contract_id: k } },
      { method: 'PUT', url: `${api(acme.id)}/teams/${id}/remove_contract`, body: { contract_id: k } },
      { method: 'PUT', url: `${api(acme.id)}/teams/add_contract`, body: { contract_id: k, team_ids: [id] } },
    ]
    for (const url of reads) {
      assert.equal((await t.call({ url, token: null })).statusCode, 401, url)
      assert.equal((await t.call({ url, token: 'not.a.token' })).statusCode, 401, url)
      assert.equal((await t.call({ url, token: readToken })).statusCode, 200, url)
      const res = await t.call({ url, token: noTeamToken })
      assert.equal(res.statusCode, 403, url)
      assert.equal(res.json().code, 'insufficient_scope')
      assert.match(String(res.headers['www-authenticate']), /scope="read:team"/)
    }
    for (const w of writes) {
      assert.equal((await t.call({ ...w, token: null })).statusCode, 401, w.url)
      const res = await t.call({ ...w, token: readToken })
      assert.equal(res.statusCode, 403, w.url)
      assert.match(String(res.headers['www-authenticate']), /scope="write:team"/)
    }
    assert.deepEqual(await members(acme, id), [])
  })
})
