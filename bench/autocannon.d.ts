// autocannon 9 ships no types; the little the load generator uses.
declare module 'autocannon' {
  interface Histogram { average: number; p50: number; p99: number; [k: string]: number }
  interface Result {
    duration: number
    latency: Histogram
    requests: Histogram
    non2xx: number
    errors: number
    statusCodeStats?: Record<string, { count: number }>
  }
  function autocannon(options: Record<string, unknown>): Promise<Result>
  export default autocannon
}
