import assert from 'node:assert/strict'
import { sql, type Kysely } from 'kysely'
import type { TestApp } from './helpers/app.ts'
import { locationId } from './helpers/app.ts'
import { addToTeams, company, contract, subsidiary, team, type CompanyFixture } from './helpers/factories.ts'

/** Shared steps of the communications tests (test/communications*.test.ts). */

export const FAR_FUTURE = '2099-01-01T09:00:00.000Z'

export const commsUrl = (companyId: string, rest = '') => `/api/v1/companies/${companyId}/communications${rest}`

export function commBody(fields: Record<string, unknown> = {}) {
  return { subject: 'Fire drill', message: 'Meet in the courtyard.', send_at: FAR_FUTURE, ...fields }
}

/** Creates a communication through endpoint 21 and returns its id (from Location). */
export async function createComm(t: TestApp, c: CompanyFixture, fields: Record<string, unknown> = {}): Promise<string> {
  const res = await t.call({ method: 'POST', url: commsUrl(c.id), token: c.token, body: commBody(fields) })
  assert.equal(res.statusCode, 202, res.body)
  assert.equal(res.headers.location, commsUrl(c.id, `/${locationId(res)}`))
  return locationId(res)
}

export const getComm = (t: TestApp, c: CompanyFixture, id: string) =>
  t.json(200, { url: commsUrl(c.id, `/${id}`), token: c.token })

export async function putComm(t: TestApp, c: CompanyFixture, id: string, body: Record<string, unknown>) {
  return t.call({ method: 'PUT', url: commsUrl(c.id, `/${id}`), token: c.token, body })
}

export const report = (t: TestApp, c: CompanyFixture, id: string) =>
  t.json(200, { url: commsUrl(c.id, `/${id}/report`), token: c.token })

/** Moves the injected clock to `when`, runs every due job, and puts the clock back (tokens stay valid). */
export async function runAt(t: TestApp, when: string | Date, app = t.app): Promise<number> {
  const back = t.clock.now()
  t.clock.set(when)
  try {
    return await app.services.scheduler.runDue()
  } finally {
    t.clock.set(back)
  }
}

/**
 * A company with two subsidiaries and two teams: contracts a1, a2 in subsidiary A; b1 in B;
 * n1 in no subsidiary; team X = {a1, b1, n1}, team Y = {a1, n1}; `off` is inactive, in A and X.
 */
export async function organisation(t: TestApp) {
  const c = await company(t)
  const subA = await subsidiary(t, c.id)
  const subB = await subsidiary(t, c.id)
  const [a1, a2, b1, n1, off] = [
    await contract(t, c.id, { subsidiary_id: subA }),
    await contract(t, c.id, { subsidiary_id: subA }),
    await contract(t, c.id, { subsidiary_id: subB }),
    await contract(t, c.id),
    await contract(t, c.id, { subsidiary_id: subA, active: false }),
  ]
  const teamX = await team(t, c.id)
  const teamY = await team(t, c.id)
  await addToTeams(t, c.id, a1, [teamX, teamY])
  await addToTeams(t, c.id, b1, [teamX])
  await addToTeams(t, c.id, n1, [teamX, teamY])
  await addToTeams(t, c.id, off, [teamX])
  return { c, subA, subB, teamX, teamY, contracts: { a1, a2, b1, n1, off } }
}

/** Every message of one occurrence (all pages), through endpoint 32. */
export async function messagesOf(
  t: TestApp,
  c: CompanyFixture,
  id: string,
  sendAt: string,
  query: Record<string, string> = {},
) {
  const all: any[] = []
  for (let page = 1; ; page++) {
    const body = await t.json(200, {
      url: commsUrl(c.id, `/messages/by_communication/${id}`),
      token: c.token,
      query: { send_at: sendAt, page: String(page), page_size: '100', ...query },
    })
    all.push(...body.messages)
    if (body.messages.length < 100) return all
  }
}

/**
 * The occurrences whose report counters (0007_occurrence_counters.sql) differ from their messages
 * counted one by one, as the report used to count them: none is expected, ever.
 */
export async function counterDrift(db: Kysely<any>) {
  const { rows } = await sql`
    SELECT o.company_id, o.communication_id, o.send_at, o.recipients, o.opened, o.actions_done,
           count(m.id)::int AS counted_recipients, count(m.opened_at)::int AS counted_opened, count(m.action_done_at)::int AS counted_actions_done
    FROM communication_occurrences o
    LEFT JOIN communication_messages m ON m.company_id = o.company_id AND m.communication_id = o.communication_id AND m.send_at = o.send_at
    GROUP BY o.company_id, o.communication_id, o.send_at
    HAVING o.recipients <> count(m.id) OR o.opened <> count(m.opened_at) OR o.actions_done <> count(m.action_done_at)`.execute(
    db,
  )
  return rows
}
