import { it, afterEach } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { company, contract } from './helpers/factories.ts'
import { companyEndpoints, endpointSteps } from './helpers/webhook-endpoints.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/** Every `error` an attempt may show (docs/webhooks.md). */
const ERROR_CODE = /^(timeout|connection_refused|dns_failure|tls_error|invalid_response|http_[1-5]\d\d)$/

/** Addresses refused whatever WEBHOOK_ALLOW_PRIVATE_TARGETS says: IPv4 inside IPv6, and the ranges that are never a receiver. */
const ALWAYS_REFUSED = [
  'https://[::ffff:7f00:1]/hook', // ::ffff:0:0/96, IPv4-mapped (127.0.0.1)
  'https://[::ffff:127.0.0.1]/hook', // the same, written with the dotted quad
  'https://[::ffff:a00:1]/hook', // 10.0.0.1, mapped
  'https://[::ffff:808:808]/hook', // a public IPv4 address, mapped: still not written plainly
  'https://[::7f00:1]/hook', // ::/96, IPv4-compatible
  'https://[::]/hook', // unspecified
  'https://[::ffff:0:7f00:1]/hook', // ::ffff:0:0:0/96, IPv4-translated
  'https://[64:ff9b::7f00:1]/hook', // 64:ff9b::/96, NAT64
  'https://[64:ff9b:1::a00:1]/hook', // 64:ff9b:1::/48, local NAT64
  'https://[2002:7f00:1::1]/hook', // 2002::/16, 6to4
  'https://[2001::1]/hook', // 2001::/32, Teredo
  'https://[2001:db8::1]/hook', // documentation
  'https://[4000::1]/hook', // outside 2000::/3, IPv6's global unicast
  'https://[fec0::1]/hook', // fec0::/10, site-local
  'https://[fe80::1]/hook', // link-local
  'https://[ff02::1]/hook', // multicast
  'https://169.254.169.254/latest/meta-data', // link-local: a cloud's metadata
  'https://224.0.0.1/hook', // multicast
  'https://0.0.0.0/hook', // unspecified
  'https://100.64.0.1/hook', // carrier-grade NAT
  'https://255.255.255.255/hook', // broadcast
  'https://192.0.2.1/hook', // documentation
]

/** Loopback and private ranges written plainly: refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true. */
const PLAIN_PRIVATE = [
  'https://127.0.0.1/hook',
  'https://127.1.2.3/hook',
  'https://0x7f.1/hook',
  'https://[::1]/hook',
  'https://10.1.2.3/hook',
  'https://172.16.0.1/hook',
  'https://172.31.255.254/hook',
  'https://192.168.1.10/hook',
  'https://[fd00::1]/hook',
  'https://[fc00::1]/hook',
]

const PUBLIC = [
  'https://93.184.215.14/hook',
  'https://[2606:4700:4700::1111]/hook',
  'https://hooks.example.com/hook',
  'https://172.32.0.1/hook',
]

/** A port on 127.0.0.1 with nothing listening (a server opened there, then closed). */
async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A TCP server on 127.0.0.1 that answers every request with bytes that are not HTTP, then closes. */
async function garbageServer() {
  const server = net.createServer((socket) => {
    socket.once('data', () => socket.end('THIS IS NOT HTTP\r\n\r\n'))
    socket.on('error', () => undefined)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(resolve)),
  }
}

onEachEngine(
  (engine) => `webhook targets on ${engine}, private targets refused`,
  { WEBHOOK_TIMEOUT_MS: 5_000 },
  (t) => {
    const { receivers, listen, deliverNow } = endpointSteps(() => t)
    afterEach(async () => {
      for (const r of receivers.splice(0)) await r.close()
    })

    it('refuses at creation and at a url change every address outside public unicast: 400 validation_failed naming url', async () => {
      const c = await company(t)
      const kept = await t.json(201, {
        method: 'POST',
        url: companyEndpoints(c.id),
        token: c.token,
        body: { url: PUBLIC[0] },
      })
      for (const target of [...ALWAYS_REFUSED, ...PLAIN_PRIVATE]) {
        const created = await t.call({
          method: 'POST',
          url: companyEndpoints(c.id),
          token: c.token,
          body: { url: target },
        })
        assert.equal(created.statusCode, 400, `${target}: ${created.body}`)
        assert.equal(created.json().code, 'validation_failed')
        assert.match(created.json().errors, /^body\/url /, target)
        assert.deepEqual(
          created.json().details.map((d: { field: string }) => d.field),
          ['body/url'],
          target,
        )
        const changed = await t.call({
          method: 'PATCH',
          url: `${companyEndpoints(c.id)}/${kept.id}`,
          token: c.token,
          body: { url: target },
        })
        assert.equal(changed.statusCode, 400, `${target}: ${changed.body}`)
        assert.match(changed.json().errors, /^body\/url /, target)
      }
      const after = await t.json(200, { url: `${companyEndpoints(c.id)}/${kept.id}`, token: c.token })
      assert.equal(after.url, PUBLIC[0])
    })

    it('accepts public addresses and names', async () => {
      const c = await company(t)
      for (const target of PUBLIC) {
        const res = await t.call({ method: 'POST', url: companyEndpoints(c.id), token: c.token, body: { url: target } })
        assert.equal(res.statusCode, 201, `${target}: ${res.body}`)
      }
    })

    it('refuses at connection a name that resolves to loopback: refused, connection_refused, nothing sent', async () => {
      const c = await company(t)
      const r = await listen('ok')
      // https, as the flag being off asks: the guard refuses before any TLS handshake.
      const created = await t.json(201, {
        method: 'POST',
        url: companyEndpoints(c.id),
        token: c.token,
        body: { url: `https://localhost:${r.port}/hook` },
      })
      await contract(t, c.id)
      await deliverNow()
      assert.equal(r.received.length, 0)
      const [attempt] = await t.json<any[]>(200, {
        url: `${companyEndpoints(c.id)}/${created.id}/deliveries`,
        token: c.token,
      })
      assert.deepEqual([attempt.status, attempt.status_code, attempt.error], ['refused', null, 'connection_refused'])
      assert.ok(attempt.next_retry_at)
    })

    it('refuses at connection a stored literal target in a refused range (IPv4 inside IPv6)', async () => {
      const c = await company(t)
      const r = await listen('ok')
      // Stored as an earlier rule let it be stored: the sender checks it again at every connection.
      const id = '6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'
      await t.app.database.db
        .insertInto('webhook_endpoints')
        .values({
          id,
          company_id: c.id,
          url: `https://[::ffff:7f00:1]:${r.port}/hook`,
          event_types: [],
          description: null,
          secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
        })
        .execute()
      await contract(t, c.id)
      await deliverNow()
      assert.equal(r.received.length, 0)
      const [attempt] = await t.json<any[]>(200, { url: `${companyEndpoints(c.id)}/${id}/deliveries`, token: c.token })
      assert.deepEqual([attempt.status, attempt.error], ['refused', 'connection_refused'])
    })

    it('a name that does not resolve: error, dns_failure', async () => {
      const c = await company(t)
      const created = await t.json(201, {
        method: 'POST',
        url: companyEndpoints(c.id),
        token: c.token,
        body: { url: 'https://receiver.invalid/hook' },
      })
      await contract(t, c.id)
      await deliverNow()
      const [attempt] = await t.json<any[]>(200, {
        url: `${companyEndpoints(c.id)}/${created.id}/deliveries`,
        token: c.token,
      })
      assert.deepEqual([attempt.status, attempt.status_code, attempt.error], ['error', null, 'dns_failure'])
      assert.ok(attempt.next_retry_at)
    })
  },
)

onEachEngine(
  (engine) => `webhook targets on ${engine}, WEBHOOK_ALLOW_PRIVATE_TARGETS=true`,
  { WEBHOOK_ALLOW_PRIVATE_TARGETS: true, WEBHOOK_TIMEOUT_MS: 2_000 },
  (t) => {
    const { receivers, listen, deliverNow } = endpointSteps(() => t)
    // Short enough that a receiver that never answers ends a test soon, long enough for a loaded machine's other calls.
    afterEach(async () => {
      for (const r of receivers.splice(0)) await r.close()
    })

    it('allows loopback and private ranges written plainly, never the other forms', async () => {
      const c = await company(t)
      for (const target of PLAIN_PRIVATE) {
        const res = await t.call({ method: 'POST', url: companyEndpoints(c.id), token: c.token, body: { url: target } })
        assert.equal(res.statusCode, 201, `${target}: ${res.body}`)
        await t.json(204, { method: 'DELETE', url: `${companyEndpoints(c.id)}/${res.json().id}`, token: c.token })
      }
      for (const target of ALWAYS_REFUSED) {
        const res = await t.call({ method: 'POST', url: companyEndpoints(c.id), token: c.token, body: { url: target } })
        assert.equal(res.statusCode, 400, `${target}: ${res.body}`)
        assert.equal(res.json().code, 'validation_failed')
        assert.match(res.json().errors, /^body\/url /, target)
      }
    })

    it('delivers to a name that resolves to loopback', async () => {
      const c = await company(t)
      const r = await listen('ok')
      const created = await t.json(201, {
        method: 'POST',
        url: companyEndpoints(c.id),
        token: c.token,
        body: { url: `http://localhost:${r.port}/hook` },
      })
      await contract(t, c.id)
      await deliverNow()
      assert.equal(r.received.length, 1)
      const [attempt] = await t.json<any[]>(200, {
        url: `${companyEndpoints(c.id)}/${created.id}/deliveries`,
        token: c.token,
      })
      assert.deepEqual([attempt.status, attempt.status_code, attempt.error], ['succeeded', 200, null])
    })

    it("an attempt's error is a code, never an address, port or host", async () => {
      const c = await company(t)
      const failing = await listen('fail')
      const never = await listen('never')
      const hints = await listen('hints')
      const plain = await listen('ok')
      const garbage = await garbageServer()
      const closed = await closedPort()
      try {
        const cases: [string, string, string, number | null][] = [
          [failing.url, 'failed', 'http_500', 500],
          [never.url, 'timeout', 'timeout', null],
          [hints.url, 'error', 'invalid_response', null],
          [`http://127.0.0.1:${garbage.port}/hook`, 'error', 'invalid_response', null],
          [`http://127.0.0.1:${closed}/hook`, 'error', 'connection_refused', null],
          // TLS spoken to a receiver that speaks plain HTTP: the handshake fails.
          [`https://127.0.0.1:${plain.port}/hook`, 'error', 'tls_error', null],
        ]
        const ids: string[] = []
        for (const [url] of cases)
          ids.push(
            (await t.json(201, { method: 'POST', url: companyEndpoints(c.id), token: c.token, body: { url } })).id,
          )
        await contract(t, c.id)
        await deliverNow()
        for (const [i, [url, status, error, statusCode]] of cases.entries()) {
          const [attempt] = await t.json<any[]>(200, {
            url: `${companyEndpoints(c.id)}/${ids[i]}/deliveries`,
            token: c.token,
          })
          assert.deepEqual([attempt.status, attempt.error, attempt.status_code], [status, error, statusCode], url)
        }
        const stored = await t.app.database.db
          .selectFrom('webhook_attempts')
          .select(['endpoint_id', 'error'])
          .where('endpoint_id', 'in', ids)
          .execute()
        assert.equal(stored.length, cases.length)
        for (const row of stored) {
          assert.match(row.error ?? '', ERROR_CODE)
          for (const detail of [
            '127.0.0.1',
            'localhost',
            String(failing.port),
            String(never.port),
            String(garbage.port),
            String(closed),
            String(plain.port),
          ]) {
            assert.ok(!row.error?.includes(detail), `${row.error} shows ${detail}`)
          }
        }
      } finally {
        await garbage.close()
      }
    })

    it('an attempt stored with a text before the codes is shown as its code', async () => {
      const c = await company(t)
      const r = await listen('fail')
      const created = await t.json(201, {
        method: 'POST',
        url: companyEndpoints(c.id),
        token: c.token,
        body: { url: r.url },
      })
      for (let i = 0; i < 6; i++) await contract(t, c.id)
      await deliverNow()
      const attempts = await t.json<any[]>(200, {
        url: `${companyEndpoints(c.id)}/${created.id}/deliveries`,
        token: c.token,
      })
      assert.equal(attempts.length, 6)
      const legacy: [string, string | null, number | null, string | null][] = [
        ['failed', 'The receiver answered 503', 503, 'http_503'],
        ['timeout', 'No answer within 10000 ms', null, 'timeout'],
        ['error', 'connect ECONNREFUSED 10.0.0.5:5432', null, 'connection_refused'],
        ['error', 'getaddrinfo ENOTFOUND db.internal', null, 'dns_failure'],
        [
          'refused',
          'db.internal resolves to 10.0.0.5, a loopback, private or link-local address',
          null,
          'connection_refused',
        ],
        ['lost', 'No outcome recorded: the delivering instance stopped', null, null],
      ]
      for (const [i, [outcome, error, statusCode]] of legacy.entries()) {
        await t.app.database.db
          .updateTable('webhook_attempts')
          .set({ outcome: outcome as never, error, status_code: statusCode })
          .where('id', '=', Number(attempts[i].id))
          .execute()
      }
      const shown = await t.json<any[]>(200, {
        url: `${companyEndpoints(c.id)}/${created.id}/deliveries`,
        token: c.token,
      })
      const byId = new Map(shown.map((a) => [a.id, a]))
      for (const [i, [outcome, , , code]] of legacy.entries()) {
        const a = byId.get(attempts[i].id)
        assert.deepEqual([a.status, a.error], [outcome, code])
      }
    })
  },
)
