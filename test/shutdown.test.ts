import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { ready, removeBuild, startServer } from './helpers/server-process.ts'

/**
 * SIGTERM behind a balancer, on the built server in a process of its own (src/http/shutdown.ts):
 * /ready turns 503 at once while requests are still served (SHUTDOWN_DELAY_MS), then the
 * listener closes, a request in flight completes, and the last log line says the process stopped.
 * Every step waits for the log line that announces it, never for a time.
 */
const ADMIN = { client_id: 'shutdown-admin', client_secret: 'shutdown-admin-secret-0123456789' }

after(removeBuild)

describe('SIGTERM', () => {
  it('turns /ready to 503 at once, lets a slow request in flight complete, and logs that the process stopped', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cai-shutdown-'))
    const server = await startServer({
      // The request below stays open across the steps: a loaded machine must not time it out.
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      SHUTDOWN_DELAY_MS: '1500',
      REQUEST_TIMEOUT_MS: '600000',
      ADMIN_CLIENT_ID: ADMIN.client_id,
      ADMIN_CLIENT_SECRET: ADMIN.client_secret,
    })
    try {
      await ready(server)
      // A token request whose body arrives slowly: half now, the rest once the service closed its listener.
      const body = JSON.stringify({ grant_type: 'client_credentials', ...ADMIN })
      const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1')
      let answer = ''
      socket.on('data', (d: Buffer) => {
        answer += d.toString()
      })
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
      socket.on('error', () => {})
      socket.write(
        `POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
      )
      await server.waitFor(
        /"msg":"incoming request"[^\n]*"url":"\/oauth\/token"|"url":"\/oauth\/token"[^\n]*"msg":"incoming request"/,
      )

      server.child.kill('SIGTERM')
      await server.waitFor(/"msg":"shutting down: \/ready answers 503"/)
      const readiness = await fetch(`${server.url}/ready`)
      assert.equal(readiness.status, 503)
      // Still served meanwhile: the balancer has not noticed yet.
      assert.equal((await fetch(`${server.url}/health`)).status, 200)

      await server.waitFor(/"msg":"no longer accepting connections/)
      // write, not end: a client's half-close while the server is closing makes Node drop the connection.
      socket.write(body.slice(10))
      await closed
      assert.match(
        answer,
        /^HTTP\/1\.1 200 /,
        `answer: ${JSON.stringify(answer)}; server's stdout: ${server.stdout().slice(-3000)}; stderr: ${server.stderr()}`,
      )
      assert.match(answer, /"access_token":"/)
      // Closed by the server after the answer, not left kept alive to hold the shutdown up.
      assert.match(answer, /\r\nconnection: close\r\n/i)

      assert.equal(await server.exited(30_000), 0, server.stderr())
      const last = JSON.parse(server.stdout().trim().split('\n').at(-1)!)
      assert.equal(last.msg, 'stopped')
      assert.equal(last.signal, 'SIGTERM')
    } finally {
      await server.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
