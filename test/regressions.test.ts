import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import Fastify from 'fastify'
import { sql } from 'kysely'
import { installDraining, installErrorHandler } from '../src/http/error-handler.ts'
import { openTestDatabase } from './helpers/databases.ts'
import { requires } from './helpers/requires.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Defects found by the reliability suite (reliability/, docs/reliability.md), each pinned by a
 * regular test here so that it stays fixed without running the suite.
 */

/** Sends raw bytes on a new connection; resolves with everything the server wrote before closing. */
function raw(port: number, write: (socket: net.Socket) => void): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const socket = net.connect(port, '127.0.0.1', () => write(socket))
    let text = ''
    socket.on('data', (d) => {
      text += d.toString()
    })
    socket.on('close', () => resolve({ text, ms: Date.now() - started }))
    socket.on('error', reject)
  })
}

function bodyOf(text: string) {
  return JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))
}

onEachEngine(
  'regressions found by the reliability suite',
  { HEADERS_TIMEOUT_MS: 1000, REQUEST_TIMEOUT_MS: 1000 },
  (t) => {
    let port: number
    before(async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' })
      port = (t.app.server.address() as net.AddressInfo).port
    })

    it("headers over the limit get 431 with {errors, code}, not Fastify's own body", async () => {
      // A megabyte, most of it still unread when the answer goes: closing at once reset the
      // connection and the client lost the 431 (every time on Node 24), so the server drains it.
      const { text } = await raw(port, (s) =>
        s.end(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(1_000_000)}\r\n\r\n`),
      )
      assert.match(text, /^HTTP\/1.1 431 /)
      assert.deepEqual(Object.keys(bodyOf(text)).sort(), ['code', 'errors'])
    })

    it('malformed HTTP gets 400 with {errors, code}', async () => {
      const { text } = await raw(port, (s) => s.end('GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'))
      assert.match(text, /^HTTP\/1.1 400 /)
      assert.equal(bodyOf(text).code, 'validation_failed')
    })

    it('a client sending one header byte at a time is closed by the headers timeout, with 408', async () => {
      // The 408 itself shows the headers timeout ended it: the client never stops sending.
      const { text } = await raw(port, (s) => {
        s.write('GET /health HTTP/1.1\r\nHost: x\r\n')
        const timer = setInterval(() => {
          if (!s.destroyed) s.write('X')
        }, 300)
        s.on('close', () => clearInterval(timer))
      })
      assert.match(text, /^HTTP\/1.1 408 /)
      assert.equal(bodyOf(text).code, 'validation_failed')
    })
  },
)

describe('draining (SIGTERM)', () => {
  it('a request arriving while the server drains gets 503 {errors, code} with Retry-After', async () => {
    // The app's own wiring (app.ts): Fastify's drain answer off, the service's on. Draining starts
    // in a preClose hook; the reliability suite (scenario 4) sends requests through a real SIGTERM.
    const app = Fastify({ return503OnClosing: false })
    installErrorHandler(app)
    const drain = installDraining(app)
    app.get('/work', async () => ({ ok: true }))
    assert.equal((await app.inject({ url: '/work' })).statusCode, 200)
    drain.start()
    const during = await app.inject({ url: '/work' })
    await app.close()
    assert.equal(during.statusCode, 503)
    assert.equal(during.headers['retry-after'], '1')
    assert.deepEqual(Object.keys(during.json()).sort(), ['code', 'errors'])
  })
})

describe('LISTEN after the PostgreSQL connection is lost', () => {
  it(
    'listens again and says "forget everything", then hears notifications as before',
    requires('postgres'),
    async () => {
      const database = await openTestDatabase('postgres')
      try {
        const heard: string[] = []
        await database.listen('reliability_check', (payload) => heard.push(payload))
        const backend = async () =>
          (
            await sql<{
              pid: number
            }>`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`.execute(
              database.db,
            )
          ).rows
        const [first] = await backend()
        assert.ok(first, 'a LISTEN connection')
        // What a PostgreSQL restart does to it (only this test database's own connection).
        await sql`SELECT pg_terminate_backend(${first.pid})`.execute(database.db)
        const deadline = Date.now() + 5_000
        while (!heard.includes('') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
        assert.deepEqual(heard, [''], 'told to forget everything once back')
        const [second] = await backend()
        assert.ok(second && second.pid !== first.pid, 'a new LISTEN connection')
        await sql`SELECT pg_notify('reliability_check', 'client-1')`.execute(database.db)
        const until = Date.now() + 2_000
        while (heard.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
        assert.deepEqual(heard, ['', 'client-1'])
      } finally {
        await database.close()
        await database.drop()
      }
    },
  )
})
