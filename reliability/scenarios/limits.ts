import net from 'node:net'
import { checks, type Scenario } from '../lib/context.ts'
import { client, http, locationId } from '../lib/http.ts'
import { communicationBody, platformToken, tenant } from '../lib/fixtures.ts'
import { startServer } from '../lib/server.ts'
import { judgeError } from '../lib/load.ts'

/** 8. page_size over the maximum, bodies over the limit, the rate limit, a slow-header client. */
export const limits: Scenario = {
  id: 8,
  title: 'Limits',
  engines: ['postgres', 'pglite'],
  async run(ctx) {
    const c = checks()
    const figures: Record<string, string | number> = {}
    const server = await startServer(ctx.store(), {
      RATE_LIMIT_MAX: '50',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      HEADERS_TIMEOUT_MS: '3000',
      REQUEST_TIMEOUT_MS: '5000',
    })
    try {
      const admin = client(server.base, await platformToken(server.base))
      const t = await tenant(server.base, admin, 1)
      const comm = locationId(
        await t.api.expect(202, {
          method: 'POST',
          url: `/api/v1/companies/${t.id}/communications`,
          body: communicationBody('s', t.team),
        }),
      )
      for (const size of ['101', '1000000', '-1', '0', '1e3', '99999999999999999999']) {
        const res = await t.api.call({
          url: `/api/v1/companies/${t.id}/communications/messages/by_communication/${comm}?send_at=2099-01-01T09:00:00Z&page_size=${size}`,
        })
        c.check(
          res.status === 400 && !judgeError(res.status, undefined, res.text),
          `page_size=${size}: ${res.status} ${res.text.slice(0, 200)}`,
        )
      }
      const big = { name: 'x'.repeat(1024 * 1024 + 10), code: 'big' }
      const tooBig = await t.api.call({ method: 'POST', url: `/api/v1/companies/${t.id}/teams`, body: big })
      figures['body of 1 MiB + 10'] = tooBig.status
      c.check(
        tooBig.status === 413 && !judgeError(tooBig.status, undefined, tooBig.text),
        `a body over the limit: ${tooBig.status} ${tooBig.text.slice(0, 200)}`,
      )
      const chunked = await chunkedBody(server.port, `/api/v1/companies/${t.id}/teams`, t.token, 2 * 1024 * 1024)
      figures['chunked body of 2 MiB'] = chunked.split(' ')[1] ?? chunked
      c.check(/^HTTP\/1.1 413/.test(chunked), `a chunked body over the limit: ${chunked.slice(0, 100)}`)

      // The rate limit: 50 a minute for this client (the budget spent so far counts too).
      let limited: Awaited<ReturnType<typeof http>> | undefined
      let n = 0
      for (; n < 120 && !limited; n++) {
        const res = await t.api.call({ url: `/api/v1/companies/${t.id}/teams` })
        if (res.status === 429) limited = res
      }
      figures['429 after'] = `${n} requests`
      c.check(limited !== undefined, 'no 429 within 120 requests at a limit of 50')
      c.check(
        limited?.headers['retry-after'] !== undefined &&
          !judgeError(429, limited?.headers['retry-after'], limited?.text ?? ''),
        `429 without Retry-After or body: ${limited?.text}`,
      )
      const health = await http(server.base, { url: '/health' })
      c.check(health.status === 200, `/health is not rate limited: ${health.status}`)

      // A slow client: one header byte every 2 s never completes its headers.
      const slow = await slowHeaders(server.port, 2000, 30_000)
      figures['slow-header client closed after'] = `${slow.ms} ms (${slow.text.split('\r\n')[0] || 'no answer'})`
      c.check(slow.ms <= 3000 + 2000 + 1500, `the slow client was held ${slow.ms} ms (headers timeout 3 s)`)
      c.check(
        /^HTTP\/1.1 408 /.test(slow.text),
        `the slow client was not answered 408: ${JSON.stringify(slow.text.slice(0, 80))}`,
      )
      return { pass: c.pass, figures, notes: c.notes }
    } finally {
      await server.stop()
    }
  },
}

function slowHeaders(port: number, everyMs: number, giveUpMs: number): Promise<{ ms: number; text: string }> {
  return new Promise((resolve) => {
    const started = Date.now()
    let text = ''
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: '))
    const timer = setInterval(() => {
      if (!socket.destroyed) socket.write('a')
    }, everyMs)
    const giveUp = setTimeout(() => socket.destroy(), giveUpMs)
    socket.on('data', (d) => {
      text += d
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      clearInterval(timer)
      clearTimeout(giveUp)
      resolve({ ms: Date.now() - started, text })
    })
  })
}

function chunkedBody(port: number, path: string, token: string, bytes: number): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
      )
      const chunk = 'a'.repeat(64 * 1024)
      for (let sent = 0; sent < bytes && !socket.destroyed; sent += chunk.length)
        socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)
      if (!socket.destroyed) socket.write('0\r\n\r\n')
    })
    socket.on('data', (d) => {
      text += d
      socket.end()
    })
    socket.on('error', () => {})
    socket.on('close', () => resolve(text))
    setTimeout(() => socket.destroy(), 15_000)
  })
}
