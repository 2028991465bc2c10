import { after, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { addToTeams, company, contract, team, type CompanyFixture } from './helpers/factories.ts'
import { createComm, getComm } from './communications.fixtures.ts'
import { endpointSteps } from './helpers/webhook-endpoints.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * An event's object shows the fields its GET reads from other tables (a contract's teams, a
 * team's leaders, a company's subscription, a member's contract, an occurrence's communication)
 * as they were at the change, in the log and in webhook bodies; events stored without them
 * are still presented, and one whose related row is gone answers with what it stored.
 */

const companyUrl = (id: string) => `/api/v1/companies/${id}`

const SETTINGS = { TEST_CLOCK_ENABLED: true, WEBHOOK_ALLOW_PRIVATE_TARGETS: true }
const SUB = '/api/v1/subscription'

onEachEngine('events show related fields as they were at the change', SETTINGS, (t) => {
  const { receivers, listen, endpoint, deliverNow } = endpointSteps(() => t)
  after(async () => {
    await Promise.all(receivers.map((r) => r.close()))
  })

  /** The company's events of `type`, oldest first. */
  async function eventsOf(c: { id: string }, type: string): Promise<any[]> {
    return (await t.json<any[]>(200, { url: `${companyUrl(c.id)}/events`, query: { type, limit: '100' } })).reverse()
  }

  const put = async (c: CompanyFixture, url: string, body: unknown) => {
    const res = await t.call({ method: 'PUT', url: `${companyUrl(c.id)}${url}`, token: c.token, body })
    assert.ok(res.statusCode >= 200 && res.statusCode < 300, `PUT ${url}: ${res.statusCode} ${res.body}`)
  }

  const raw = (query: ReturnType<typeof sql>) => query.execute(t.app.database.db)

  it('a contract event keeps the teams of its moment, in the log and in a webhook body', async () => {
    const c = await company(t)
    const r = await listen('ok')
    await endpoint(c.id, { url: r.url, event_types: ['contract.*'] }, c.token)
    const k = await contract(t, c.id)
    const [a, b] = [await team(t, c.id), await team(t, c.id)]
    await addToTeams(t, c.id, k, [a])
    await put(c, `/contracts/${k}`, { first_name: 'Giulia', last_name: 'Verdi' })
    await put(c, `/teams/${a}/remove_contract`, { contract_id: k })
    await addToTeams(t, c.id, k, [b])
    assert.deepEqual((await t.json(200, { url: `${companyUrl(c.id)}/contracts/${k}`, token: c.token })).team_ids, [b])

    const [created, updated] = await eventsOf(c, 'contract.*')
    assert.deepEqual([created.type, created.data.object.team_ids], ['contract.created', []])
    const { team_ids: teamIds, first_name: firstName } = updated.data.object
    assert.deepEqual([updated.type, teamIds, firstName], ['contract.updated', [a], 'Giulia'])
    await deliverNow()
    const sent = r.received.map((got) => JSON.parse(got.body)).find((e) => e.type === 'contract.updated')
    assert.ok(sent, 'contract.updated delivered')
    assert.deepEqual(sent.data.object.team_ids, [a])
    assert.deepEqual(sent, updated)
  })

  it('a team event keeps the leaders of its moment', async () => {
    const c = await company(t)
    const [k1, k2] = [await contract(t, c.id), await contract(t, c.id)]
    const x = await team(t, c.id, { team_leader_ids: [k1] })
    await put(c, `/teams/${x}`, { name: 'Night shift', code: 'NIGHT', team_leader_ids: [k2] })
    await put(c, `/teams/${x}/upgrade_contract`, { contract_id: k1 })
    const [created] = await eventsOf(c, 'team.created')
    const [updated] = await eventsOf(c, 'team.updated')
    assert.deepEqual(created.data.object.team_leader_ids, [k1])
    // The leaders the PUT left, though they were written after the team's row.
    assert.deepEqual(updated.data.object.team_leader_ids, [k2])
    assert.equal(updated.data.object.name, 'Night shift')
  })

  it('a company event keeps the subscription fields of its moment', async () => {
    const c = await company(t)
    const before = await t.json(200, { url: companyUrl(c.id) })
    assert.equal(before.subscription_status, 'in_trial')
    const patched = await t.call({ method: 'PATCH', url: companyUrl(c.id), body: { name: 'Renamed S.p.A.' } })
    assert.equal(patched.statusCode, 202, patched.body)
    const cancelled = await t.call({ method: 'PUT', url: `${SUB}/${c.id}/cancel?end_of_term=false`, token: c.token })
    assert.equal(cancelled.statusCode, 200, cancelled.body)
    assert.equal((await t.json(200, { url: companyUrl(c.id) })).subscription_status, 'cancelled')
    const [created] = await eventsOf(c, 'company.created')
    const [updated] = await eventsOf(c, 'company.updated')
    assert.deepEqual(created.data.object, before)
    assert.deepEqual(updated.data.object, { ...before, name: 'Renamed S.p.A.' })
  })

  it("a member event keeps its contract's fields as they were; its team_ids are read when presented", async () => {
    const c = await company(t)
    const k = await contract(t, c.id, { first_name: 'Anna' })
    const x = await team(t, c.id)
    await addToTeams(t, c.id, k, [x])
    const member = (await t.json<any[]>(200, { url: `${companyUrl(c.id)}/teams/${x}/contracts`, token: c.token }))[0]
    await put(c, `/contracts/${k}`, { first_name: 'Giulia', last_name: 'Verdi', active: false })
    const y = await team(t, c.id)
    await addToTeams(t, c.id, k, [y])
    const [added] = await eventsOf(c, 'team.member_added')
    assert.deepEqual(added.data.object, { ...member, team_ids: [x, y].sort() })
    assert.equal(added.data.object.first_name, 'Anna')
  })

  it('a subscription event keeps the updated_at of its change', async () => {
    const c = await company(t)
    const details = async () => (await t.json(200, { url: `${SUB}/${c.id}/details`, token: c.token })).subscription
    const first = await details()
    t.clock.set(new Date(t.clock.now().getTime() + 3_600_000))
    const cancelled = await t.call({ method: 'PUT', url: `${SUB}/${c.id}/cancel?end_of_term=true`, token: c.token })
    assert.equal(cancelled.statusCode, 200, cancelled.body)
    assert.notEqual((await details()).updated_at, first.updated_at)
    const [created] = await eventsOf(c, 'subscription.created')
    assert.equal(created.data.object.updated_at, first.updated_at)
    assert.deepEqual(created.data.object, first)
  })

  it('an occurrence event keeps its communication as the delivery left it', async () => {
    const c = await company(t)
    const k = await contract(t, c.id)
    const x = await team(t, c.id, { team_leader_ids: [k] })
    const sendAt = new Date(t.clock.now().getTime() - 1000).toISOString()
    const daily = { recurrent: 'daily', recurrent_until: '2099-12-31' }
    const comm = await createComm(t, c, { send_at: sendAt, destination_team_ids: [x], ...daily })
    await t.app.services.scheduler.runDue()
    const afterFirst = await getComm(t, c, comm)
    t.clock.set(new Date(Date.parse(sendAt) + 86_400_000 + 1000))
    await t.app.services.scheduler.runDue()
    assert.notDeepEqual(await getComm(t, c, comm), afterFirst)
    const [first, second] = await eventsOf(c, 'communication.occurrence_delivered')
    assert.ok(second, 'two occurrences delivered')
    assert.deepEqual(first.data.object, afterFirst)
  })

  it('an event stored without the related fields reads them now', async () => {
    const c = await company(t)
    const k = await contract(t, c.id)
    const x = await team(t, c.id, { team_leader_ids: [k] })
    const related = ['team_ids', 'team_leader_ids', 'subscription', 'contract']
    await raw(sql`UPDATE events SET data = jsonb_set(data, '{object}', (data -> 'object') - ${related}::text[])
      WHERE company_id = ${c.id}`)
    await put(c, `/contracts/${k}`, { first_name: 'Giulia', last_name: 'Verdi' })
    const y = await team(t, c.id)
    await addToTeams(t, c.id, k, [y])
    const [created] = await eventsOf(c, 'contract.created')
    assert.deepEqual(created.data.object.team_ids, [x, y].sort())
    const [teamCreated] = await eventsOf(c, 'team.created')
    assert.deepEqual(teamCreated.data.object.team_leader_ids, [k])
    const [added] = await eventsOf(c, 'team.member_added')
    assert.equal(added.data.object.first_name, 'Giulia')
    const [companyCreated] = await eventsOf(c, 'company.created')
    assert.deepEqual(companyCreated.data.object, await t.json(200, { url: companyUrl(c.id) }))
  })

  it('an event whose related row is gone answers 200 with what it stored', async () => {
    const c = await company(t)
    const k = await contract(t, c.id)
    const x = await team(t, c.id, { team_leader_ids: [k] })
    const sendAt = new Date(t.clock.now().getTime() - 1000).toISOString()
    await createComm(t, c, { send_at: sendAt, destination_team_ids: [x] })
    await t.app.services.scheduler.runDue()
    // Old-format events naming a contract and a communication that no row holds.
    const [ghostContract, ghostComm] = [randomUUID(), randomUUID()]
    await raw(sql`UPDATE events SET data = jsonb_set(data, '{object}',
        (data -> 'object') - 'contract' || jsonb_build_object('contract_id', ${ghostContract}::text))
      WHERE company_id = ${c.id} AND type = 'team.member_added'`)
    await raw(sql`UPDATE events SET data = jsonb_set(data, '{object}',
        (data -> 'object') - 'communication' || jsonb_build_object('communication_id', ${ghostComm}::text))
      WHERE company_id = ${c.id} AND type = 'communication.occurrence_delivered'`)
    const page = await t.json<any[]>(200, { url: `${companyUrl(c.id)}/events`, query: { limit: '100' } })
    const added = page.find((e) => e.type === 'team.member_added')
    assert.deepEqual(added.data.object, { id: ghostContract, team_ids: [x], is_leader: true })
    const occurrence = page.find((e) => e.type === 'communication.occurrence_delivered')
    assert.deepEqual(occurrence.data.object, { id: ghostComm, company_id: c.id, send_at: sendAt })
    await t.json(200, { url: `/api/v1/events/${added.id}` })
    await t.json(200, { url: `/api/v1/events`, query: { company_id: c.id } })
  })
})
