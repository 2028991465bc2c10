import { checks, type Scenario } from '../lib/context.ts'
import { client, locationId } from '../lib/http.ts'
import { platformToken, tenant, uniq } from '../lib/fixtures.ts'
import { sleep, startServer, type Server } from '../lib/server.ts'

/**
 * 10. Two instances delivering on one PostgreSQL; one is killed (-9) in the middle of the
 * deliveries: every recipient gets each occurrence exactly once (SQL and the report of 29).
 */
export const schedulerFaults: Scenario = {
  id: 10,
  title: 'Scheduler: two instances, one killed mid-delivery',
  engines: ['postgres'],
  async run(ctx) {
    const c = checks()
    const store = ctx.store()
    if (store.engine !== 'postgres') throw new Error('PostgreSQL only')
    const dbName = store.url.split('/').pop()!
    const sql = (q: string) => ctx.cluster.psql(q, dbName)
    const env = { SCHEDULER_POLL_MS: '50' }
    const rounds = ctx.scaled(3, 1)
    const recipients = ctx.scaled(40, 10)
    const perRound = ctx.scaled(30, 5)
    const killedAt: number[] = []
    const a = await startServer(store, env)
    let b: Server | undefined
    try {
      b = await startServer(store, env)
      const admin = client(a.base, await platformToken(a.base))
      const t = await tenant(a.base, admin, recipients)
      const created: string[] = []
      for (let round = 1; round <= rounds; round++) {
        if (!b) b = await startServer(store, env)
        const due = new Date(Date.now() + 4000).toISOString()
        const ids: string[] = []
        // Created through both instances, due at the same moment.
        for (let i = 0; i < perRound; i++) {
          const res = await (i % 2 ? client(b.base, t.token) : t.api).expect(202, {
            method: 'POST',
            url: `/api/v1/companies/${t.id}/communications`,
            body: {
              subject: uniq('due'),
              message: 'Deliver me once',
              send_at: due,
              destination_subsidiary_ids: [t.subsidiary],
            },
          })
          ids.push(locationId(res))
        }
        created.push(...ids)
        const list = ids.map((id) => `'${id}'`).join(',')
        const count = () =>
          Number(sql(`SELECT count(*) FROM communication_messages WHERE communication_id IN (${list})`))
        // Kill B as soon as the deliveries have started.
        const deadline = Date.now() + 30_000
        let seen = 0
        while (Date.now() < deadline && (seen = count()) === 0) await sleep(20)
        b.kill('SIGKILL')
        await b.exited
        killedAt.push(seen)
        b = undefined
        const expected = ids.length * recipients
        const until = Date.now() + 60_000
        while (Date.now() < until && count() < expected) await sleep(200)
        const got = count()
        c.check(got === expected, `round ${round}: ${got} messages delivered, expected ${expected}`)
        const dupes = sql(
          `SELECT count(*) FROM (SELECT 1 FROM communication_messages WHERE communication_id IN (${list}) GROUP BY communication_id, send_at, contract_id HAVING count(*) > 1) d`,
        )
        c.check(dupes === '0', `round ${round}: ${dupes} recipients got an occurrence more than once`)
      }
      // The API's own account of it: one report line per communication, every recipient delivered.
      let reported = 0
      for (const id of created) {
        const report = (
          await t.api.expect(200, { url: `/api/v1/companies/${t.id}/communications/${id}/report` })
        ).json() as Array<{ recipients: number; delivered: number }>
        if (report.length === 1 && report[0]!.recipients === recipients && report[0]!.delivered === recipients)
          reported++
      }
      c.check(
        reported === created.length,
        `${created.length - reported} reports do not show every recipient delivered once`,
      )
      const failedJobs = sql(`SELECT count(*) FROM jobs WHERE last_error IS NOT NULL`)
      return {
        pass: c.pass,
        figures: {
          rounds: rounds,
          communications: created.length,
          'recipients each': recipients,
          'messages when B was killed': killedAt.join(', '),
          'reports complete': `${reported}/${created.length}`,
          'jobs with an error': failedJobs,
        },
        notes: c.notes,
      }
    } finally {
      await b?.stop()
      await a.stop()
    }
  },
}
