import net from 'node:net'
import type { Agent, Dispatcher } from 'undici'
import type { AttemptOutcome } from '../../db/tables.ts'
import { signatureHeaders } from './signing.ts'
import { guardedLookup, hostOf, isRefusedAddress, TargetRefused } from './targets.ts'
import { errorCodeOf, httpError, type AttemptError } from './attempt-errors.ts'
import { BoundedMap } from '../../core/bounded-map.ts'

const MAX_RESPONSE_BYTES = 64 * 1024

/** `detail` is for this service's log only; the attempt shows `error`. */
export interface Sent {
  outcome: AttemptOutcome
  statusCode: number | null
  error: AttemptError | null
  durationMs: number
  detail?: string
}

const IDLE_CONNECTION_MAX_MS = 30_000
const PARSED_TARGETS_KEPT = 1000

type Parsed = { origin: string; path: string } | { refused: string }

function parseTarget(target: string, allowPrivateTargets: boolean): Parsed {
  let url: URL
  try {
    url = new URL(target)
  } catch {
    return { refused: 'The endpoint URL is not a URL' }
  }
  const host = hostOf(url)
  // Checked at every call too: a stored URL meets the rule in force now.
  if (net.isIP(host) && isRefusedAddress(host, allowPrivateTargets))
    return { refused: `${host} is an address webhooks may not reach` }
  return { origin: url.origin, path: url.pathname + url.search }
}

function ended(
  started: number,
  outcome: AttemptOutcome,
  statusCode: number | null,
  error: AttemptError | null,
  detail?: string,
): Sent {
  return { outcome, statusCode, error, durationMs: Math.round(performance.now() - started), detail }
}

/**
 * One POST with the Standard Webhooks headers, outside every transaction. On undici's dispatcher
 * with its callbacks used directly (no promise, stream or AbortSignal per call): a delivery is
 * hot, about ten per change. undici loads at the first delivery.
 */
export function createWebhookSender(options: { timeoutMs: number; allowPrivateTargets: boolean }) {
  let agent: Agent | undefined
  let loading: Promise<Agent> | undefined

  /**
   * Connections are kept between deliveries to a receiver, idle ones for its Keep-Alive hint at most
   * IDLE_CONNECTION_MAX_MS. Connections go through the guarded lookup, so a kept one reaches only an
   * address that passed the guard. A failed load is tried again at the next call.
   */
  function dispatcher(): Agent | Promise<Agent> {
    if (agent) return agent
    loading ??= import('undici')
      .then(({ Agent }) => {
        agent = new Agent({
          connect: { lookup: guardedLookup(options.allowPrivateTargets), timeout: options.timeoutMs },
          keepAliveMaxTimeout: IDLE_CONNECTION_MAX_MS,
          // The call's own timer bounds the whole call.
          headersTimeout: 0,
          bodyTimeout: 0,
        })
        return agent
      })
      .finally(() => {
        loading = undefined
      })
    return loading
  }

  // Each target URL parsed once: its origin and path, or why it is refused.
  const parsedTargets = new BoundedMap<string, Parsed>(PARSED_TARGETS_KEPT)
  function parsedTarget(target: string): Parsed {
    let parsed = parsedTargets.get(target)
    if (parsed === undefined) {
      parsed = parseTarget(target, options.allowPrivateTargets)
      parsedTargets.set(target, parsed)
    }
    return parsed
  }

  // Every failure is an outcome; only a fault of this code rejects. Not async: each promise saved counts here.
  function send(target: string, secrets: string[], eventId: string, body: string): Promise<Sent> {
    const started = performance.now()
    try {
      const parsed = parsedTarget(target)
      if ('refused' in parsed)
        return Promise.resolve(ended(started, 'refused', null, 'connection_refused', parsed.refused))
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'company-admin-api-webhooks/1',
        ...signatureHeaders(secrets, eventId, body, Math.floor(Date.now() / 1000)),
      }
      const client = dispatcher()
      if (client instanceof Promise) {
        return client.then(
          (loaded) => call(loaded, parsed, headers, body, started),
          (err: unknown) =>
            ended(
              started,
              'error',
              null,
              'connection_refused',
              `The HTTP client could not be loaded: ${(err as Error).message}`,
            ),
        )
      }
      return call(client, parsed, headers, body, started)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  function call(
    client: Agent,
    target: { origin: string; path: string },
    headers: Record<string, string>,
    body: string,
    started: number,
  ): Promise<Sent> {
    return new Promise<Sent>((resolve) => {
      let settled = false
      let controller: Dispatcher.DispatchController | undefined
      let status = 0
      let received = 0
      const finish = (sent: Sent) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(sent)
      }
      // One limit for the whole call, connecting included.
      const timer = setTimeout(() => {
        finish(ended(started, 'timeout', null, 'timeout'))
        controller?.abort(new Error('timeout'))
      }, options.timeoutMs)
      client.dispatch(
        { origin: target.origin, path: target.path, method: 'POST', headers, body },
        {
          onRequestStart(c) {
            controller = c
            if (settled) c.abort(new Error('timeout'))
          },
          // An informational answer (103 Early Hints) is not the answer.
          onResponseStart(_c, statusCode) {
            if (statusCode >= 200) status = statusCode
          },
          onResponseData(c, chunk) {
            // The body is not needed: read a little, then stop.
            received += chunk.length
            if (received > MAX_RESPONSE_BYTES) c.abort(new Error('response too large'))
          },
          onResponseEnd: answered,
          onResponseError(_c, err) {
            // An answer whose body was cut off: its status decides.
            if (status > 0) return answered()
            finish(
              err instanceof TargetRefused
                ? ended(started, 'refused', null, 'connection_refused', err.message)
                : ended(started, 'error', null, errorCodeOf(err), err.message),
            )
          },
        },
      )
      function answered() {
        finish(
          status >= 200 && status < 300
            ? ended(started, 'succeeded', status, null)
            : ended(started, 'failed', status, httpError(status)),
        )
      }
    })
  }

  return {
    send,
    async close() {
      const closing = agent
      agent = undefined
      await closing?.destroy()
    },
  }
}
