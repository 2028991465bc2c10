import { checks, fmt, type Scenario } from '../lib/context.ts'
import { client, locationId, type Request, type Response } from '../lib/http.ts'
import { communicationBody, platformToken, teamBody, tenant, uniq } from '../lib/fixtures.ts'
import { judgeError } from '../lib/load.ts'
import { startServer } from '../lib/server.ts'

/**
 * 1b. Races on one resource: the same write 20 times at once, for the writes where two callers
 * collide (a unique code, membership, a subscription's cancellation, one communication, clients).
 * No 5xx, every refusal `{errors, code}`, and the stored state is one consistent answer.
 */
export const races: Scenario = {
  id: 1,
  title: 'Races on one resource (20 at once)',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const server = await startServer(ctx.store())
    const statuses = new Map<number, number>()
    try {
      const admin = client(server.base, await platformToken(server.base))
      const t = await tenant(server.base, admin, 3)
      const company = (await admin.expect(200, { url: `/api/v1/companies/${t.id}` })).json()
      const comm = locationId(
        await t.api.expect(202, {
          method: 'POST',
          url: `/api/v1/companies/${t.id}/communications`,
          body: communicationBody('race', t.team),
        }),
      )
      const burst = async (what: string, make: (i: number) => Request): Promise<Response[]> => {
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) => t.api.call({ ...make(i), timeoutMs: 90_000 })),
        )
        for (const r of answers) {
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1)
          if (r.status >= 400) {
            const p = judgeError(r.status, r.headers['retry-after'], r.text)
            c.check(!p, `${what}: ${p}`)
          }
        }
        c.check(
          answers.every((r) => r.status < 500),
          `${what}: ${answers.map((r) => r.status).join(',')}`,
        )
        return answers
      }
      const code = uniq('SAME')
      const same = await burst('one team code 20 times', () => ({
        method: 'POST',
        url: `/api/v1/companies/${t.id}/teams`,
        body: teamBody(code),
      }))
      c.check(
        same.filter((r) => r.status === 202).length === 1 && same.filter((r) => r.status === 409).length === 19,
        `one code: ${same.map((r) => r.status).join(',')}`,
      )
      await burst('one team updated 20 times', (i) => ({
        method: 'PUT',
        url: `/api/v1/companies/${t.id}/teams/${t.team}`,
        body: { name: `Renamed ${i}`, code: `RACE-${t.team.slice(0, 8)}`, team_leader_ids: [t.contracts[i % 3]!] },
      }))
      const team = (await t.api.expect(200, { url: `/api/v1/companies/${t.id}/teams/${t.team}` })).json()
      c.check(
        team.team_leader_ids.length === 1,
        `after 20 concurrent replacements the team has ${team.team_leader_ids.length} leaders`,
      )
      await burst('one contract added to the same teams 20 times', () => ({
        method: 'PUT',
        url: `/api/v1/companies/${t.id}/teams/add_contract`,
        body: { contract_id: t.contracts[2], team_ids: [t.team] },
      }))
      const members = (
        await t.api.expect(200, { url: `/api/v1/companies/${t.id}/teams/${t.team}/contracts` })
      ).json() as Array<{ id: string }>
      c.check(members.filter((m) => m.id === t.contracts[2]).length === 1, 'a contract is a member more than once')
      await burst('one communication updated 20 times', (i) => ({
        method: 'PUT',
        url: `/api/v1/companies/${t.id}/communications/${comm}`,
        body: { subject: `race ${i}` },
      }))
      await burst('cancel and undo, 20 at once', (i) =>
        i % 2
          ? {
              method: 'PUT',
              url: `/api/v1/subscription/${t.id}/cancel`,
              body: { cancellation_reason: 'other', cancellation_message: 'race' },
            }
          : {
              method: 'PUT',
              url: `/api/v1/subscription/${t.id}/remove_scheduled_cancellation/${company.subscription_id}`,
            },
      )
      await burst('20 clients at once', (i) => ({
        method: 'POST',
        url: `/api/v1/companies/${t.id}/clients`,
        body: { name: `c${i}`, scopes: ['read:team'] },
      }))
      await burst('20 subsidiaries at once', (i) => ({
        method: 'POST',
        url: `/api/v1/companies/${t.id}/subsidiaries`,
        body: { name: `Branch ${i}`, city: 'Roma', country: 'IT' },
      }))
      return { pass: c.pass, figures: { bursts: 7, statuses: fmt(statuses) }, notes: c.notes.slice(0, 12) }
    } finally {
      await server.stop()
    }
  },
}
