import { checks, fmt, type Scenario } from '../lib/context.ts'
import { client } from '../lib/http.ts'
import { platformToken, tenant, tokenFor } from '../lib/fixtures.ts'
import { judgeError, startLoad, verifyStored } from '../lib/load.ts'
import { sleep, startServer } from '../lib/server.ts'

/**
 * 3. The private PostgreSQL stopped with `-m immediate` under load, then started: 503 with
 * Retry-After while it is down (never 500), recovery without a restart within 10 s, nothing
 * acknowledged lost.
 */
export const postgresDown: Scenario = {
  id: 3,
  title: 'PostgreSQL stopped under load',
  engines: ['postgres'],
  async run(ctx) {
    const c = checks()
    const store = ctx.store()
    const server = await startServer(store)
    let down = false
    let downAt = Infinity
    let upAt = 0
    let recoveredAt = 0
    const whileDown = new Map<number, number>()
    try {
      const admin = client(server.base, await platformToken(server.base))
      const t = await tenant(server.base, admin, 2)
      const load = startLoad(server.base, t, {
        connections: 20,
        onAnswer(status, sentAt) {
          // Only requests sent while it was down: one sent before may have committed in time.
          if (down && sentAt > downAt) whileDown.set(status, (whileDown.get(status) ?? 0) + 1)
          if (upAt && !recoveredAt && status >= 200 && status < 300) recoveredAt = Date.now()
        },
      })
      await sleep(ctx.scaled(3000, 1000))
      ctx.cluster.crash()
      down = true
      downAt = Date.now()
      await sleep(500)
      // Reads, the readiness probe and the token endpoint, while the database is away.
      const probes = await Promise.all([
        t.api.call({ url: `/api/v1/companies/${t.id}/teams` }),
        t.api.call({ url: '/ready' }),
        t.api.call({
          method: 'POST',
          url: '/oauth/token',
          body: { grant_type: 'client_credentials', client_id: t.clientId, client_secret: t.secret },
        }),
      ])
      for (const p of probes) {
        whileDown.set(p.status, (whileDown.get(p.status) ?? 0) + 1)
        const problem = judgeError(p.status, p.headers['retry-after'], p.text)
        c.check(!problem, `a probe while down: ${problem}`)
      }
      await sleep(ctx.scaled(5000, 2000))
      down = false
      ctx.cluster.start()
      upAt = Date.now()
      while (!recoveredAt && Date.now() - upAt < 30_000) await sleep(50)
      await sleep(1000)
      await load.stop()
      const stored = await verifyStored(server.base, t, load)
      // After the outage, a revocation made on another instance still reaches this one at once
      // (its LISTEN connection was dropped with the server and must have been reopened).
      const other = await startServer(store)
      let revokedAfter = Infinity
      try {
        const made = (
          await admin.expect(201, {
            method: 'POST',
            url: `/api/v1/companies/${t.id}/clients`,
            body: { name: 'to revoke', scopes: ['read:team'] },
          })
        ).json()
        const token = await tokenFor(server.base, made.client_id, made.client_secret)
        await client(server.base, token).expect(200, { url: `/api/v1/companies/${t.id}/teams` })
        await client(other.base, admin.token!).expect(204, {
          method: 'DELETE',
          url: `/api/v1/companies/${t.id}/clients/${made.client_id}`,
        })
        const revokedAt = Date.now()
        while (Date.now() - revokedAt < 10_000) {
          if ((await client(server.base, token).call({ url: `/api/v1/companies/${t.id}/teams` })).status === 401) {
            revokedAfter = Date.now() - revokedAt
            break
          }
          await sleep(50)
        }
      } finally {
        await other.stop()
      }
      c.check(
        revokedAfter < 2000,
        `a revocation on another instance reached this one after ${revokedAfter} ms (its notification channel was not restored)`,
      )
      const recovery = recoveredAt ? recoveredAt - upAt : Infinity
      c.check(
        [...whileDown.keys()].every((s) => s === 503),
        `answers while down other than 503: ${fmt(whileDown)}`,
      )
      c.check(load.violations.length === 0, `error answers out of contract: ${load.violations.slice(0, 3).join(' / ')}`)
      c.check(
        probes[0]!.status === 503 && probes[0]!.headers['retry-after'] !== undefined,
        `a read while down: ${probes[0]!.status} ${probes[0]!.text.slice(0, 200)}`,
      )
      c.check(probes[1]!.status === 503, `/ready while down: ${probes[1]!.status}`)
      c.check(
        probes[2]!.status === 503,
        `the token endpoint while down: ${probes[2]!.status} ${probes[2]!.text.slice(0, 200)}`,
      )
      c.check(recovery <= 10_000, `recovered ${recovery} ms after PostgreSQL was back (at most 10 s)`)
      c.check(stored.missing.length === 0, `acknowledged writes missing: ${stored.missing.slice(0, 5).join(', ')}`)
      c.check(stored.duplicated.length === 0, `duplicated: ${stored.duplicated.slice(0, 5).join(', ')}`)
      c.check(server.child.exitCode === null, 'the service exited')
      return {
        pass: c.pass,
        figures: {
          'answers while down': fmt(whileDown),
          'first 2xx after PostgreSQL started': `${recovery} ms`,
          'acknowledged writes': load.teams.size + load.communications.size,
          missing: stored.missing.length,
          'revocation seen by this instance after the outage': `${revokedAfter} ms`,
          'all statuses': fmt(load.statuses),
        },
        notes: c.notes,
      }
    } finally {
      down = false
      try {
        ctx.cluster.start()
      } catch {
        /* already up */
      }
      await server.stop()
    }
  },
}
