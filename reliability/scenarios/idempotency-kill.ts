import { randomUUID } from 'node:crypto'
import { checks, fmt, median, type Scenario } from '../lib/context.ts'
import { client, type Response } from '../lib/http.ts'
import { platformToken, teamBody, tenant, uniq, type Tenant } from '../lib/fixtures.ts'
import { sleep, startServer, type Server } from '../lib/server.ts'

/** Retries a key while it answers 409 "still running", for 60 s at most (the rule's bound). */
const SETTLE_WITHIN_MS = 60_000
const WORKERS = 12

interface Keyed {
  key: string
  kind: 'team' | 'contract' | 'communication'
  url: string
  body: unknown
  marker: string
  before?: Response
}

/**
 * 14. kill -9 with keyed requests in flight, then a restart and a retry of every key: each runs or
 * replays, none stays 409 past SETTLE_WITHIN_MS, none runs twice, and an answered key replays.
 */
export const idempotencyKill: Scenario = {
  id: 14,
  title: 'Instance killed between an idempotency claim and its answer',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const store = ctx.store()
    const rounds = ctx.scaled(5, 2)
    const perKind = ctx.scaled(100, 40)
    let server: Server | undefined = await startServer(store)
    const outcome = { sent: 0, answeredBefore: 0, unanswered: 0, replayed: 0, ran: 0, replayedUnanswered: 0 }
    const statuses = new Map<number, number>()
    let stillRunning = 0
    const settleMs: number[] = []
    try {
      const admin = client(server.base, await platformToken(server.base))
      const t = await tenant(server.base, admin, 1)
      for (let round = 1; round <= rounds; round++) {
        // Keyed requests until the kill: some answered, some committed with the answer lost, some not committed.
        const planned = requests(t, perKind)
        const keyed: Keyed[] = []
        const base = server.base
        let killed = false
        const workers = Array.from({ length: WORKERS }, async () => {
          while (!killed && planned.length > 0) {
            const k = planned.shift()!
            keyed.push(k)
            await client(base, t.token)
              .call({ method: 'POST', url: k.url, body: k.body, headers: { 'idempotency-key': k.key } })
              .then(
                (res) => {
                  k.before = res
                },
                () => undefined,
              )
          }
        })
        await sleep(300 + Math.random() * 1200)
        killed = true
        server.kill('SIGKILL')
        await server.exited
        await Promise.all(workers)
        outcome.sent += keyed.length
        server = undefined
        server = await startServer(store)
        const api = client(server.base, t.token)

        for (const k of keyed) {
          if (k.before) {
            outcome.answeredBefore++
            statuses.set(k.before.status, (statuses.get(k.before.status) ?? 0) + 1)
          } else outcome.unanswered++
        }
        const retried = await Promise.all(
          keyed.map(async (k) => {
            const started = Date.now()
            for (;;) {
              const res = await api.call({
                method: 'POST',
                url: k.url,
                body: k.body,
                headers: { 'idempotency-key': k.key },
              })
              if (res.status === 409 && /still running/.test(res.text) && Date.now() - started < SETTLE_WITHIN_MS) {
                stillRunning++
                await sleep(500)
                continue
              }
              settleMs.push(Date.now() - started)
              return res
            }
          }),
        )
        keyed.forEach((k, i) => {
          const res = retried[i]!
          const replayed = res.headers['idempotent-replayed'] === 'true'
          if (replayed) outcome.replayed++
          else if (res.status === 202) outcome.ran++
          if (replayed && !k.before) outcome.replayedUnanswered++
          c.check(res.status === 202, `round ${round}: ${k.kind} key retried: ${res.status} ${res.text.slice(0, 200)}`)
          if (k.before?.status === 202) {
            c.check(
              replayed && res.headers.location === k.before.headers.location,
              `round ${round}: a ${k.kind} answered before the kill did not replay its answer`,
            )
          }
        })
        // One row per key, whatever happened to its first request.
        const teams = (await api.expect(200, { url: `/api/v1/companies/${t.id}/teams` })).json() as Array<{
          code: string
        }>
        const contracts = (await api.expect(200, { url: `/api/v1/companies/${t.id}/contracts` })).json() as Array<{
          last_name: string
        }>
        const comms = (await api.expect(200, { url: `/api/v1/companies/${t.id}/communications` })).json() as Array<{
          subject: string
        }>
        for (const k of keyed) {
          const rows =
            k.kind === 'team'
              ? teams.filter((x) => x.code === k.marker).length
              : k.kind === 'contract'
                ? contracts.filter((x) => x.last_name === k.marker).length
                : comms.filter((x) => x.subject === k.marker).length
          c.check(rows === 1, `round ${round}: ${rows} ${k.kind}s stored for one key`)
        }
      }
      return {
        pass: c.pass,
        figures: {
          rounds,
          'keyed requests sent (teams, contracts, communications)': outcome.sent,
          'answered before the kill': `${outcome.answeredBefore} (${fmt(statuses)})`,
          'no answer before the kill': outcome.unanswered,
          'retries that replayed / ran': `${outcome.replayed} / ${outcome.ran}`,
          'replayed though unanswered (committed, answer lost with the process)': outcome.replayedUnanswered,
          '409 "still running" on a retry': stillRunning,
          'retry settled after': settleMs.length
            ? `median ${median(settleMs)} ms, max ${Math.max(...settleMs)} ms`
            : 'n/a',
        },
        notes: c.notes,
      }
    } finally {
      await server?.stop()
    }
  },
}

function requests(t: Tenant, perKind: number): Keyed[] {
  const out: Keyed[] = []
  const companies = `/api/v1/companies/${t.id}`
  const message = `<p>${'x'.repeat(45_000)}</p>`
  for (let i = 0; i < perKind; i++) {
    const code = uniq('KT')
    out.push({ key: randomUUID(), kind: 'team', url: `${companies}/teams`, body: teamBody(code), marker: code })
    const lastName = uniq('Kill')
    out.push({
      key: randomUUID(),
      kind: 'contract',
      url: `${companies}/contracts`,
      body: { first_name: 'Ada', last_name: lastName, email: 'ada@example.com', subsidiary_id: t.subsidiary },
      marker: lastName,
    })
    const subject = uniq('KC')
    out.push({
      key: randomUUID(),
      kind: 'communication',
      url: `${companies}/communications`,
      body: { subject, message, send_at: '2099-01-01T09:00:00Z', destination_team_ids: [t.team] },
      marker: subject,
    })
  }
  return out
}
