import autocannon from 'autocannon'

/**
 * The load generator, run in its own process pinned to its own core (see processes.ts).
 * Reads one LoadSpec as JSON from argv and prints one LoadResult as JSON on stdout.
 */
export interface LoadSpec {
  url: string
  method: 'GET' | 'POST'
  headers: Record<string, string>
  body?: string
  /** A POST body made per request: `{"code": "<prefix><n>"}` merged into `body`, so every team code is new. */
  uniqueCode?: string
  connections: number
  seconds: number
  /** Requests per second across all connections (autocannon's overallRate); left out: as fast as the server answers. */
  rate?: number
}

export interface LoadResult {
  /** Successful (2xx) answers per second. */
  rps: number
  p50: number
  p99: number
  mean: number
  total: number
  non2xx: number
  errors: number
  statusCodes: Record<string, number>
}

const spec = JSON.parse(process.argv[2]!) as LoadSpec
let n = 0
const base = spec.uniqueCode && spec.body !== undefined ? (JSON.parse(spec.body) as Record<string, unknown>) : undefined

const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.seconds,
  headers: spec.headers,
  ...(spec.rate ? { overallRate: spec.rate } : {}),
  requests: [
    {
      method: spec.method,
      ...(spec.body !== undefined && !spec.uniqueCode ? { body: spec.body } : {}),
      ...(spec.uniqueCode
        ? {
            setupRequest: (request: Record<string, unknown>) => ({
              ...request,
              body: JSON.stringify({ ...base, code: `${spec.uniqueCode}${n++}` }),
            }),
          }
        : {}),
    },
  ],
})

const statusCodes: Record<string, number> = {}
for (const [code, stat] of Object.entries(result.statusCodeStats ?? {}))
  statusCodes[code] = Number((stat as { count: number }).count)
const ok = (result as unknown as Record<string, number>)['2xx'] ?? 0
const out: LoadResult = {
  rps: ok / result.duration,
  p50: result.latency.p50,
  p99: result.latency.p99,
  mean: result.latency.average,
  total: ok,
  non2xx: result.non2xx,
  errors: result.errors,
  statusCodes,
}
process.stdout.write(`${JSON.stringify(out)}\n`)
