import { randomUUID } from 'node:crypto'
import { checks, fmt, type Scenario } from '../lib/context.ts'
import { client } from '../lib/http.ts'
import { platformToken, teamBody, tenant, uniq } from '../lib/fixtures.ts'
import { startServer } from '../lib/server.ts'

/** 9. One Idempotency-Key and body sent 20 times at once creates one resource; every answer names it. */
export const idempotency: Scenario = {
  id: 9,
  title: 'Idempotency under concurrency',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const server = await startServer(ctx.store())
    try {
      const admin = client(server.base, await platformToken(server.base))
      const t = await tenant(server.base, admin, 1)
      const rounds = ctx.scaled(5, 2)
      const statuses = new Map<number, number>()
      for (let round = 0; round < rounds; round++) {
        const key = randomUUID()
        const code = uniq('IDEM')
        const subject = uniq('IDEM')
        const [teams, comms] = await Promise.all([
          Promise.all(
            Array.from({ length: 20 }, () =>
              t.api.call({
                method: 'POST',
                url: `/api/v1/companies/${t.id}/teams`,
                body: teamBody(code),
                headers: { 'idempotency-key': key },
              }),
            ),
          ),
          Promise.all(
            Array.from({ length: 20 }, () =>
              t.api.call({
                method: 'POST',
                url: `/api/v1/companies/${t.id}/communications`,
                headers: { 'idempotency-key': `c-${key}` },
                body: { subject, message: 'once', send_at: '2099-01-01T09:00:00Z', destination_team_ids: [t.team] },
              }),
            ),
          ),
        ])
        for (const r of [...teams, ...comms]) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1)
        c.check(
          teams.every((r) => r.status === 202) && comms.every((r) => r.status === 202),
          `round ${round}: not every answer is 202: ${[...teams, ...comms].map((r) => r.status).join(',')}`,
        )
        c.check(
          new Set(teams.map((r) => r.headers.location)).size === 1,
          `round ${round}: team answers name ${new Set(teams.map((r) => r.headers.location)).size} locations`,
        )
        c.check(
          new Set(comms.map((r) => r.headers.location)).size === 1,
          `round ${round}: communication answers name several locations`,
        )
        const listed = (await t.api.expect(200, { url: `/api/v1/companies/${t.id}/teams` })).json() as Array<{
          code: string
        }>
        c.check(
          listed.filter((x) => x.code === code).length === 1,
          `round ${round}: ${listed.filter((x) => x.code === code).length} teams stored`,
        )
        const commsListed = (
          await t.api.expect(200, { url: `/api/v1/companies/${t.id}/communications` })
        ).json() as Array<{ subject: string }>
        c.check(
          commsListed.filter((x) => x.subject === subject).length === 1,
          `round ${round}: ${commsListed.filter((x) => x.subject === subject).length} communications stored`,
        )
      }
      // Same key, another body: 409, and nothing new.
      const key = randomUUID()
      await t.api.expect(202, {
        method: 'POST',
        url: `/api/v1/companies/${t.id}/teams`,
        body: teamBody(uniq('K')),
        headers: { 'idempotency-key': key },
      })
      const other = await t.api.call({
        method: 'POST',
        url: `/api/v1/companies/${t.id}/teams`,
        body: teamBody(uniq('K')),
        headers: { 'idempotency-key': key },
      })
      c.check(other.status === 409, `same key, other body: ${other.status}`)
      return {
        pass: c.pass,
        figures: { 'rounds (20 teams + 20 communications at once)': rounds, statuses: fmt(statuses) },
        notes: c.notes,
      }
    } finally {
      await server.stop()
    }
  },
}
