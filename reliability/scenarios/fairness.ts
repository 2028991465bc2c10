import { checks, type Result, type Scenario } from '../lib/context.ts'
import { client, locationId, type Client } from '../lib/http.ts'
import { platformToken, tenant, uniq } from '../lib/fixtures.ts'
import { sleep, startServer } from '../lib/server.ts'

/** Above this, one company's backlog held another company's due job back too long (the rule: one second). */
const MAX_WAIT_MS = 1000

/**
 * 13. Scheduler fairness: company A makes a backlog of deliveries all due at one instant; meanwhile
 * B schedules one due at once. Measured: how long B's delivery waited after it was due, and how
 * many of A's came after it (B did not queue behind the backlog).
 */
export const schedulerFairness: Scenario = {
  id: 13,
  title: "Scheduler fairness under one company's backlog",
  engines: ['postgres', 'pglite'],
  async run(ctx): Promise<Result> {
    const c = checks()
    const communications = ctx.scaled(300, 30)
    const recipients = ctx.scaled(150, 15)
    const server = await startServer(ctx.store())
    try {
      const admin = client(server.base, await platformToken(server.base))
      const a = await tenant(server.base, admin, recipients)
      const b = await tenant(server.base, admin, 1)
      const post = (api: Client, companyId: string, body: Record<string, unknown>) =>
        api.expect(202, {
          method: 'POST',
          url: `/api/v1/companies/${companyId}/communications`,
          body: { subject: uniq('backlog'), message: 'Fairness', ...body },
        })

      // How fast A writes, so all its communications fall due just after the last is written (drafts warm up).
      for (let i = 0; i < 5; i++) await post(a.api, a.id, { status: 'draft', send_at: '2099-01-01T00:00:00Z' })
      const started = Date.now()
      for (let i = 0; i < 20; i++) await post(a.api, a.id, { status: 'draft', send_at: '2099-01-01T00:00:00Z' })
      const perWriteMs = (Date.now() - started) / 20
      const dueA = new Date(Date.now() + perWriteMs * communications * 1.2 + 2000)
      for (let i = 0; i < communications; i++)
        await post(a.api, a.id, { send_at: dueA.toISOString(), destination_subsidiary_ids: [a.subsidiary] })
      const written = Date.now()
      // B's job falls due half a second into A's backlog.
      await sleep(Math.max(0, dueA.getTime() - Date.now()) + 500)
      const dueB = new Date()
      const idB = locationId(
        await post(b.api, b.id, { send_at: dueB.toISOString(), destination_subsidiary_ids: [b.subsidiary] }),
      )
      const answeredB = Date.now() - dueB.getTime()
      let deliveredB: Date | undefined
      const deadline = Date.now() + 120_000
      while (!deliveredB && Date.now() < deadline) {
        const page = (
          await b.api.expect(200, {
            url: `/api/v1/companies/${b.id}/communications/messages/by_communication/${idB}?send_at=${encodeURIComponent(dueB.toISOString())}`,
          })
        ).json()
        if (page.messages.length > 0) deliveredB = new Date(page.messages[0].delivered_at)
        else await sleep(25)
      }
      if (!c.check(deliveredB !== undefined, "B's communication was not delivered within 120 s"))
        return { pass: false, figures: {}, notes: c.notes }
      const waitedMs = deliveredB!.getTime() - dueB.getTime()

      let listed: Array<{ status: string; change_log: Array<{ action: string; at: string }> }> = []
      while (Date.now() < deadline) {
        listed = (await a.api.expect(200, { url: `/api/v1/companies/${a.id}/communications` })).json()
        if (!listed.some((x) => x.status === 'scheduled')) break
        await sleep(250)
      }
      const deliveredA = listed
        .flatMap((x) => x.change_log.filter((e) => e.action === 'delivered').map((e) => new Date(e.at).getTime()))
        .sort((x, y) => x - y)
      c.check(
        deliveredA.length === communications,
        `${deliveredA.length} of A's ${communications} scheduled communications delivered`,
      )
      const afterB = deliveredA.filter((at) => at > deliveredB!.getTime()).length
      // Vacuous unless B's job fell due while A's backlog was still being worked through.
      const afterDueB = deliveredA.filter((at) => at > dueB.getTime()).length
      c.check(
        afterDueB > 0,
        "A's backlog was over before B's job fell due: the measurement proves nothing (raise the counts)",
      )
      c.check(
        waitedMs <= MAX_WAIT_MS,
        `B's delivery waited ${waitedMs} ms after it was due (at most ${MAX_WAIT_MS} ms)`,
      )
      const span = deliveredA.length > 0 ? deliveredA[deliveredA.length - 1]! - deliveredA[0]! : 0
      return {
        pass: c.pass,
        figures: {
          'A: communications due at once': communications,
          'recipients each': recipients,
          'A: messages': communications * recipients,
          'A: backlog worked off in': `${(span / 1000).toFixed(1)} s`,
          'A: written before due by': `${((dueA.getTime() - written) / 1000).toFixed(1)} s`,
          'B: delivery waited': `${waitedMs} ms`,
          'B: its POST answered in': `${answeredB} ms`,
          'A: deliveries still to come when B was due': `${afterDueB}/${communications}`,
          "A: deliveries after B's": `${afterB}/${communications}`,
        },
        notes: c.notes,
      }
    } finally {
      await server.stop()
    }
  },
}
