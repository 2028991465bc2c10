import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import type { AttemptOutcome } from '../../db/tables.ts'
import { signatureHeaders } from './signing.ts'
import { guardedLookup, hostOf, isPrivateAddress, TargetRefused } from './targets.ts'

const MAX_RESPONSE_BYTES = 64 * 1024

export interface Sent { outcome: AttemptOutcome; statusCode: number | null; error: string | null; durationMs: number }

/**
 * The HTTP side of a delivery: one POST with the Standard Webhooks headers, after the claim has
 * committed and outside every transaction, so a slow receiver holds only its own socket.
 */
export function createWebhookSender(options: { timeoutMs: number; allowPrivateTargets: boolean; maxSocketsPerHost: number }) {
  const lookup = guardedLookup(options.allowPrivateTargets)
  // Connections kept open between deliveries to the same receiver: a new TCP (and TLS) connection
  // per delivery was an eighth of the delivering instance's CPU (bench/findings.md, events). The
  // bound per endpoint is the delivery loop's, not the agent's; a socket is connected through
  // the guarded lookup, so a reused one reaches only an address that passed the guard.
  const agentOptions = { keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: options.maxSocketsPerHost, scheduling: 'lifo' as const }
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) }

  /** Never throws: every failure is an outcome. */
  function send(target: string, secrets: string[], eventId: string, body: string): Promise<Sent> {
    const started = performance.now()
    const done = (outcome: AttemptOutcome, statusCode: number | null, error: string | null): Sent =>
      ({ outcome, statusCode, error, durationMs: Math.round(performance.now() - started) })
    return new Promise<Sent>((resolve) => {
      let url: URL
      try { url = new URL(target) } catch { return resolve(done('refused', null, 'The endpoint URL is not a URL')) }
      const host = hostOf(url)
      if (!options.allowPrivateTargets && net.isIP(host) && isPrivateAddress(host)) {
        return resolve(done('refused', null, `${host} is a loopback, private or link-local address`))
      }
      const headers = {
        'content-type': 'application/json', 'user-agent': 'company-admin-api-webhooks/1', 'content-length': String(Buffer.byteLength(body)),
        ...signatureHeaders(secrets, eventId, body, Math.floor(Date.now() / 1000)),
      }
      const secure = url.protocol === 'https:'
      const request = (secure ? https : http).request(url, { method: 'POST', headers, lookup, agent: secure ? agents.https : agents.http }, (response) => {
        let received = 0
        response.on('data', (chunk: Buffer) => {
          // The body is not needed: read a little, then stop paying for it.
          received += chunk.length
          if (received > MAX_RESPONSE_BYTES) response.destroy()
        })
        const finish = () => {
          clearTimeout(timer)
          const status = response.statusCode ?? 0
          resolve(status >= 200 && status < 300 ? done('succeeded', status, null) : done('failed', status, `The receiver answered ${status}`))
        }
        response.on('end', finish)
        response.on('close', finish)
        response.on('error', finish)
      })
      const timer = setTimeout(() => {
        request.destroy()
        resolve(done('timeout', null, `No answer within ${options.timeoutMs} ms`))
      }, options.timeoutMs)
      request.on('error', (err) => {
        clearTimeout(timer)
        resolve(err instanceof TargetRefused ? done('refused', null, err.message) : done('error', null, err.message))
      })
      request.end(body)
    })
  }

  return {
    send,
    /** Closes the kept-open connections (at shutdown, once the calls are over). */
    close() {
      agents.http.destroy()
      agents.https.destroy()
    },
  }
}
