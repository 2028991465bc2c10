// autocannon 9 ships no types; the little the load generators use.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'
  namespace autocannon {
    interface Histogram {
      average: number
      p50: number
      p99: number
      [k: string]: number
    }
    interface Result {
      duration: number
      latency: Histogram
      requests: Histogram
      non2xx: number
      errors: number
      statusCodeStats?: Record<string, { count: number }>
    }
  }
  function autocannon(options: Record<string, unknown>): Promise<autocannon.Result>
  /** With a callback: the running instance, which emits 'response' (client, status, bytes, ms) per answer. */
  function autocannon(
    options: Record<string, unknown>,
    done: (err: unknown, result: autocannon.Result) => void,
  ): EventEmitter
  export default autocannon
}
