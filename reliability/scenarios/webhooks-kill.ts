import nodeHttp from 'node:http'
import type { AddressInfo } from 'node:net'
import { checks, type Scenario } from '../lib/context.ts'
import { client, http } from '../lib/http.ts'
import { platformToken, tenant, uniq } from '../lib/fixtures.ts'
import { sleep, startServer, type Server } from '../lib/server.ts'

const TIMEOUT_MS = 2_000
/** The lease after which an attempt with no outcome is claimed again: the timeout and a minute (delivery.ts). */
const LEASE_MS = TIMEOUT_MS + 60_000

/**
 * 15. kill -9 with webhook calls in flight and writes unanswered, then a restart on the same data.
 * Every stored contract has exactly one `contract.created` event and the reverse; every event is
 * delivered; calls in flight at the kill come again with the same `webhook-id` after their lease.
 */
export const webhooksKill: Scenario = {
  id: 15,
  title: 'webhooks: kill -9 with deliveries in flight',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const store = ctx.store()
    const env = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) }
    let hanging = true
    const received: Array<{ id: string; body: any }> = []
    const receiver = nodeHttp.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (b: Buffer) => chunks.push(b))
      req.on('end', () => {
        received.push({ id: String(req.headers['webhook-id']), body: JSON.parse(Buffer.concat(chunks).toString()) })
        if (!hanging) res.writeHead(204).end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
    let server: Server | undefined = await startServer(store, env)
    try {
      const admin = client(server.base, await platformToken(server.base))
      // No contract before the endpoint: an event written before it has no delivery.
      const t = await tenant(server.base, admin, 0)
      const endpointId = (
        await t.api.expect(201, {
          method: 'POST',
          url: `/api/v1/companies/${t.id}/webhook_endpoints`,
          body: { url, event_types: ['contract.created'] },
        })
      ).json().id as string
      let writing = true
      const writers = Array.from({ length: 8 }, async () => {
        while (writing) {
          await http(server!.base, {
            method: 'POST',
            url: `/api/v1/companies/${t.id}/contracts`,
            token: t.token,
            body: { first_name: 'Ada', last_name: uniq('L'), email: 'ada@example.com' },
          }).catch(() => undefined)
        }
      })
      const deadline = Date.now() + 30_000
      while (received.length < 5 && Date.now() < deadline) await sleep(50)
      c.check(received.length >= 5, `only ${received.length} deliveries reached the hanging receiver before the kill`)
      const inFlight = new Set(received.map((r) => r.id))
      server.kill('SIGKILL')
      await server.exited
      writing = false
      await Promise.all(writers)
      hanging = false
      server = await startServer(store, env)
      const api = client(
        server.base,
        (
          await http(server.base, {
            method: 'POST',
            url: '/oauth/token',
            body: { grant_type: 'client_credentials', client_id: t.clientId, client_secret: t.secret },
          })
        ).json().access_token,
      )

      const contracts = new Set<string>(
        (await api.expect(200, { url: `/api/v1/companies/${t.id}/contracts` })).json().map((k: { id: string }) => k.id),
      )
      const events = (
        await api.expect(200, { url: `/api/v1/companies/${t.id}/events?type=contract.created&limit=500` })
      ).json() as Array<{ id: string; data: { object: { id: string } } }>
      const evented = events.map((e) => e.data.object.id)
      c.check(evented.length === new Set(evented).size, 'a contract has two contract.created events')
      const withoutEvent = [...contracts].filter((k) => !evented.includes(k))
      const withoutChange = evented.filter((k) => !contracts.has(k))
      c.check(withoutEvent.length === 0, `${withoutEvent.length} stored contracts have no event`)
      c.check(withoutChange.length === 0, `${withoutChange.length} events name a contract that is not stored`)

      const until = Date.now() + LEASE_MS + 30_000
      const delivered = () => new Set(received.slice(inFlight.size).map((r) => r.id))
      while (Date.now() < until && !events.every((e) => delivered().has(e.id))) await sleep(200)
      // An event that timed out twice before the kill waits minutes for its third attempt: not lost.
      const attempts = (
        await api.expect(200, { url: `/api/v1/companies/${t.id}/webhook_endpoints/${endpointId}/deliveries?limit=500` })
      ).json() as Array<{ event_id: string; next_retry_at: string | null }>
      const waiting = (id: string) =>
        attempts.some((a) => a.event_id === id && a.next_retry_at !== null && Date.parse(a.next_retry_at) > Date.now())
      const missing = events.filter((e) => !delivered().has(e.id))
      const lost = missing.filter((e) => !waiting(e.id))
      const rows = (id: string) =>
        store.engine === 'postgres'
          ? ctx.cluster.psql(
              `SELECT row_to_json(x) FROM (SELECT d.status, d.attempts, d.seq, d.next_attempt_at, d.created_at FROM webhook_deliveries d WHERE d.event_id = '${id}') x`,
              store.url.split('/').pop()!,
            )
          : ''
      const story = (id: string) => `${JSON.stringify(attempts.filter((a) => a.event_id === id))} ${rows(id)}`
      c.check(
        lost.length === 0,
        `${lost.length} of ${events.length} events never reached the receiver after the restart, and none waits for a retry: ${lost.map((e) => `${e.id} (received ${received.filter((r) => r.id === e.id).length} times in all; attempts ${story(e.id)})`).join('; ')} at ${new Date().toISOString()}`,
      )
      const again = [...inFlight].filter((id) => delivered().has(id))
      c.check(
        again.length === inFlight.size,
        `${inFlight.size - again.length} of the ${inFlight.size} calls in flight at the kill were not sent again with their webhook-id`,
      )
      return {
        pass: c.pass,
        figures: {
          'contracts stored': contracts.size,
          'contract.created events': events.length,
          'calls in flight at the kill': inFlight.size,
          'sent again with the same webhook-id': again.length,
          'waiting for a later retry': missing.length - lost.length,
        },
        notes: c.notes,
      }
    } finally {
      await server?.stop()
      receiver.closeAllConnections()
      await new Promise((resolve) => receiver.close(resolve))
    }
  },
}
