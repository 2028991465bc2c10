import { checks, fmt, type Scenario } from '../lib/context.ts'
import { client } from '../lib/http.ts'
import { platformToken, tenant } from '../lib/fixtures.ts'
import { startLoad, verifyStored } from '../lib/load.ts'
import { sleep, startServer } from '../lib/server.ts'

/** 1. 50 connections × 10 s creating teams and communications, and 20 concurrent leader changes on one (team, contract). */
export const concurrentWriters: Scenario = {
  id: 1,
  title: 'Concurrent writers',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const figures: Record<string, string | number> = {}
    const server = await startServer(ctx.store())
    try {
      const admin = client(server.base, await platformToken(server.base))
      const t = await tenant(server.base, admin, 2)
      const load = startLoad(server.base, t, { connections: 50 })
      const seconds = ctx.scaled(10, 2)
      // Meanwhile, rounds of 20 concurrent upgrade/downgrade calls on one (team, contract).
      const leaderStatuses = new Map<number, number>()
      const contract = t.contracts[1]!
      const until = Date.now() + seconds * 1000
      let rounds = 0
      let slowest = 0
      while (Date.now() < until) {
        rounds++
        const sent = Date.now()
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            t.api
              .call({
                method: 'PUT',
                url: `/api/v1/companies/${t.id}/teams/${t.team}/${i % 2 === 0 ? 'upgrade' : 'downgrade'}_contract`,
                body: { contract_id: contract },
                timeoutMs: 90_000,
              })
              .then(
                (r) => r.status,
                () => 0,
              ),
          ),
        )
        slowest = Math.max(slowest, Date.now() - sent)
        for (const s of answers) leaderStatuses.set(s, (leaderStatuses.get(s) ?? 0) + 1)
        await sleep(200)
      }
      await load.stop()
      const stored = await verifyStored(server.base, t, load)
      const team = stored.teams.find((x) => x.id === t.team)!
      const members = (
        await t.api.expect(200, { url: `/api/v1/companies/${t.id}/teams/${t.team}/contracts` })
      ).json() as Array<{ id: string; is_leader: boolean }>
      const fiveXX =
        [...load.statuses].filter(([s]) => s >= 500).reduce((n, [, k]) => n + k, 0) +
        [...leaderStatuses].filter(([s]) => s >= 500 || s === 0).reduce((n, [, k]) => n + k, 0)
      Object.assign(figures, {
        requests: load.requests,
        'acknowledged teams': load.teams.size,
        'acknowledged communications': load.communications.size,
        'write statuses': fmt(load.statuses),
        'leader rounds (×20)': rounds,
        'leader statuses': fmt(leaderStatuses),
        'slowest leader round': `${slowest} ms`,
        missing: stored.missing.length,
        duplicated: stored.duplicated.length,
        '5xx': fiveXX,
      })
      c.check(stored.missing.length === 0, `acknowledged writes missing: ${stored.missing.slice(0, 5).join(', ')}`)
      c.check(stored.duplicated.length === 0, `writes stored twice: ${stored.duplicated.slice(0, 5).join(', ')}`)
      c.check(fiveXX === 0, `5xx or unanswered: writes ${fmt(load.statuses)}, leaders ${fmt(leaderStatuses)}`)
      c.check(load.violations.length === 0, `error answers out of contract: ${load.violations.slice(0, 3).join(' / ')}`)
      c.check(
        new Set(team.team_leader_ids).size === team.team_leader_ids.length,
        `duplicate leaders: ${team.team_leader_ids}`,
      )
      c.check(new Set(members.map((m) => m.id)).size === members.length, 'a contract is a member twice')
      c.check(load.teams.size + load.communications.size > 0, 'no write was acknowledged at all')
      return { pass: c.pass, figures, notes: c.notes }
    } finally {
      await server.stop()
    }
  },
}
