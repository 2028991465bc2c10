import { createRequire } from 'node:module'
import type ChargebeeSdk from 'chargebee'

let sdk: typeof ChargebeeSdk | undefined

/**
 * Chargebee's SDK, loaded only where Chargebee is configured: it is a large part of the bundle.
 * require from node_modules (left out of the bundle) keeps creating a client synchronous.
 */
export function chargebeeSdk(): typeof ChargebeeSdk {
  return (sdk ??= createRequire(import.meta.url)('chargebee') as typeof ChargebeeSdk)
}

/** The SDK's own timeout error: a ChargebeeError of type `timeout` (chargebee/cjs/net/ClientInterface.js). */
function timeoutError(ms: number) {
  return Object.assign(new Error(`io_error: no answer from Chargebee within ${ms} ms`), {
    type: 'timeout',
    api_error_code: 'request aborted due to timeout.',
    error_code: 'request aborted due to timeout.',
    http_status_code: 504,
    http_code: 504,
  })
}

// The SDK's HTTP client with a timeout that holds. The SDK's own hands fetch a `new Request(request, {signal})`
// whose signal undici follows only weakly: once that copy is collected the abort is lost (nodejs/undici#4068)
// and a silent Chargebee holds the call until undici's headers timeout. Here the copy is held until fetch
// settles, and the call ends at the timeout even if the abort cannot reach the socket.
export const timedFetchClient = {
  async makeApiRequest(request: Request, timeout: number): Promise<Response> {
    const abort = new AbortController()
    const held = new Request(request, { signal: abort.signal })
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = timeoutError(timeout)
        abort.abort(err)
        reject(err)
      }, timeout)
    })
    try {
      return await Promise.race([fetch(held), timedOut])
    } finally {
      clearTimeout(timer)
      // Reachable until here: the abort above still reaches the request's socket.
      void held.signal
    }
  },
}
