import net from 'node:net'
import type { Agent, Dispatcher } from 'undici'
import type { AttemptOutcome } from '../../db/tables.ts'
import { signatureHeaders } from './signing.ts'
import { guardedLookup, hostOf, isRefusedAddress, TargetRefused } from './targets.ts'
import { errorCodeOf, httpError, type AttemptError } from './attempt-errors.ts'
import { BoundedMap } from '../../core/bounded-map.ts'

const MAX_RESPONSE_BYTES = 64 * 1024

/** `error` is what the attempt shows; `detail`, what happened in words, is for this service's log only. */
export interface Sent { outcome: AttemptOutcome; statusCode: number | null; error: AttemptError | null; durationMs: number; detail?: string }

/** How long an idle connection to a receiver is kept at most, whatever its Keep-Alive header asks. */
const IDLE_CONNECTION_MAX_MS = 30_000
/** Target URLs kept parsed at most (beyond, the oldest parsed goes). */
const PARSED_TARGETS_KEPT = 1000

type Parsed = { origin: string; path: string } | { refused: string }

function parseTarget(target: string, allowPrivateTargets: boolean): Parsed {
  let url: URL
  try { url = new URL(target) } catch { return { refused: 'The endpoint URL is not a URL' } }
  const host = hostOf(url)
  // Checked at every call too: a stored URL meets the rule in force, whatever was accepted when it was stored.
  if (net.isIP(host) && isRefusedAddress(host, allowPrivateTargets)) return { refused: `${host} is an address webhooks may not reach` }
  return { origin: url.origin, path: url.pathname + url.search }
}

/** What a call that began at `started` (performance.now()) came to. */
function ended(started: number, outcome: AttemptOutcome, statusCode: number | null, error: AttemptError | null, detail?: string): Sent {
  return { outcome, statusCode, error, durationMs: Math.round(performance.now() - started), detail }
}

/**
 * The HTTP side of a delivery: one POST with the Standard Webhooks headers, after the claim has
 * committed and outside every transaction, so a slow receiver holds only its own socket.
 *
 * On undici's dispatcher, not node:http: a delivery is a few dozen microseconds of this process's
 * CPU where http.request with a keep-alive Agent took 2.7 times as much (84 against 31 µs per
 * call to a loopback receiver, bench/findings.md, "Issue 15"), and ten deliveries per change
 * made that the biggest cost of a write. The dispatcher's callbacks are used directly: no
 * undici promise, stream or AbortSignal per call (an AbortSignal alone was 9 µs). undici is loaded
 * at the first delivery: an instance that never delivers never loads it.
 */
export function createWebhookSender(options: { timeoutMs: number; allowPrivateTargets: boolean }) {
  let agent: Agent | undefined
  let loading: Promise<Agent> | undefined

  /**
   * Connections are kept open between deliveries to the same receiver (a new TCP and TLS
   * connection per delivery was an eighth of the delivering instance's CPU), idle ones for the
   * receiver's Keep-Alive hint (4 s without one), at most IDLE_CONNECTION_MAX_MS. No bound on
   * calls per origin: the delivery loop bounds them per endpoint. A connection is made through
   * the guarded lookup, so a kept one reaches only an address that passed the guard. A failed
   * load (undici missing, no file descriptor left) is tried again at the next call.
   */
  function dispatcher(): Agent | Promise<Agent> {
    if (agent) return agent
    loading ??= import('undici').then(({ Agent }) => {
      agent = new Agent({
        connect: { lookup: guardedLookup(options.allowPrivateTargets), timeout: options.timeoutMs },
        keepAliveMaxTimeout: IDLE_CONNECTION_MAX_MS,
        // The call's own timer (below) bounds the whole call; undici's would only race it.
        headersTimeout: 0, bodyTimeout: 0,
      })
      return agent
    }).finally(() => { loading = undefined })
    return loading
  }

  /**
   * What each target URL comes to, parsed once: the dispatcher's origin and path, or why it is
   * refused (the address check here needs no lookup; a name's addresses are checked as it connects).
   * URLs change rarely; beyond PARSED_TARGETS_KEPT, the one parsed first goes.
   */
  const parsedTargets = new BoundedMap<string, Parsed>(PARSED_TARGETS_KEPT)
  function parsedTarget(target: string): Parsed {
    let parsed = parsedTargets.get(target)
    if (parsed === undefined) {
      parsed = parseTarget(target, options.allowPrivateTargets)
      parsedTargets.set(target, parsed)
    }
    return parsed
  }

  /**
   * Every failure of the call is an outcome; only a fault of this code rejects. Not an async
   * function: a delivery is a few dozen microseconds, and each promise and turn of the microtask
   * queue saved is a share of it.
   */
  function send(target: string, secrets: string[], eventId: string, body: string): Promise<Sent> {
    const started = performance.now()
    try {
      const parsed = parsedTarget(target)
      if ('refused' in parsed) return Promise.resolve(ended(started, 'refused', null, 'connection_refused', parsed.refused))
      const headers = {
        'content-type': 'application/json', 'user-agent': 'company-admin-api-webhooks/1',
        ...signatureHeaders(secrets, eventId, body, Math.floor(Date.now() / 1000)),
      }
      const client = dispatcher()
      if (client instanceof Promise) {
        return client.then((loaded) => call(loaded, parsed, headers, body, started),
          (err: unknown) => ended(started, 'error', null, 'connection_refused', `The HTTP client could not be loaded: ${(err as Error).message}`))
      }
      return call(client, parsed, headers, body, started)
    } catch (err) {
      // As an async function would: the caller's promise chain gives the endpoint's slot back.
      return Promise.reject(err)
    }
  }

  function call(client: Agent, target: { origin: string; path: string }, headers: Record<string, string>, body: string, started: number): Promise<Sent> {
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
      // One limit for the whole call, from connecting to the body's end. A call still waiting for
      // its connection when it runs out is aborted as soon as it starts.
      const timer = setTimeout(() => {
        // Settled first: the abort calls onResponseError at once.
        finish(ended(started, 'timeout', null, 'timeout'))
        controller?.abort(new Error('timeout'))
      }, options.timeoutMs)
      client.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body }, {
        onRequestStart(c) {
          controller = c
          // Timed out while waiting for its connection.
          if (settled) c.abort(new Error('timeout'))
        },
        // An informational answer (103 Early Hints) is not the answer: the final one follows.
        onResponseStart(_c, statusCode) { if (statusCode >= 200) status = statusCode },
        onResponseData(c, chunk) {
          // The body is not needed: read a little, then stop paying for it.
          received += chunk.length
          if (received > MAX_RESPONSE_BYTES) c.abort(new Error('response too large'))
        },
        onResponseEnd: answered,
        onResponseError(_c, err) {
          // An answer whose body was cut off (too large, or the connection dropped): its status decides.
          if (status > 0) return answered()
          finish(err instanceof TargetRefused
            ? ended(started, 'refused', null, 'connection_refused', err.message)
            : ended(started, 'error', null, errorCodeOf(err), err.message))
        },
      })
      function answered() {
        finish(status >= 200 && status < 300 ? ended(started, 'succeeded', status, null) : ended(started, 'failed', status, httpError(status)))
      }
    })
  }

  return {
    send,
    /** Closes the kept-open connections (at shutdown, once the calls are over); a later call opens new ones. */
    async close() {
      const closing = agent
      agent = undefined
      await closing?.destroy()
    },
  }
}
