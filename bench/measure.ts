import http from 'node:http'
import type { LoadResult, LoadSpec } from './load.ts'
import { cpuMs, machineCpuMs, postgresCpuMs, runLoad, type Running } from './processes.ts'

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
export const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP ?? 2)
export const ROUNDS = 3

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

export interface HttpFigure {
  name: string
  connections: number
  ceiling: { rps: number; p99: number; rounds: number[] }
  /**
   * cpuPerRequestMs: the server's own CPU per request (steadier than req/s on a shared machine);
   * postgresCpuPerRequestMs: all PostgreSQL processes' (0 on PGlite); machineBusy: both cores' share.
   */
  server: {
    rps: number
    p50: number
    p99: number
    rounds: number[]
    non2xx: number
    errors: number
    cpuPerRequestMs: number
    postgresCpuPerRequestMs: number
    machineBusy: number
  }
  ratio: number
}

export interface Workload {
  name: string
  method: 'GET' | 'POST'
  path: string
  headers: Record<string, string>
  body?: string
  uniqueCode?: string
  connections: number
}

async function sample(server: Running, w: Workload) {
  const body = w.uniqueCode ? JSON.stringify({ ...JSON.parse(w.body!), code: `${w.uniqueCode}sample` }) : w.body
  const res = await fetch(`${server.url}${w.path}`, {
    method: w.method,
    headers: w.headers,
    ...(body !== undefined ? { body } : {}),
  })
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${w.name}: ${res.status} ${text}`)
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? 'application/json; charset=utf-8',
    body: text,
  }
}

/** Rounds of ceiling and server alternated, so the machine's drift touches both alike; medians. */
export async function measureHttp(
  server: Running,
  baseline: Running,
  w: Workload,
  log: (s: string) => void,
): Promise<HttpFigure> {
  const answer = await sample(server, w)
  await fetch(`${baseline.url}/__answer`, { method: 'PUT', body: JSON.stringify(answer) })
  const spec = (url: string, seconds: number, prefix: string): LoadSpec => ({
    url: `${url}${w.path}`,
    method: w.method,
    headers: w.headers,
    body: w.body,
    ...(w.uniqueCode ? { uniqueCode: `${w.uniqueCode}${prefix}` } : {}),
    connections: w.connections,
    seconds,
  })
  return (
    await measureRounds(
      server,
      baseline,
      w.name,
      w.connections,
      (url, seconds, prefix) => runLoad(spec(url, seconds, prefix)),
      log,
    )
  ).figure
}

/** `load(url, seconds, prefix)` runs one round against the server or the ceiling, set up to answer alike. */
export async function measureRounds<R extends LoadResult>(
  server: Running,
  baseline: Running,
  name: string,
  connections: number,
  load: (url: string, seconds: number, prefix: string) => Promise<R>,
  log: (s: string) => void,
  warmupSeconds = WARMUP_SECONDS,
): Promise<{ figure: HttpFigure; rounds: R[] }> {
  await load(server.url, warmupSeconds, 'w')
  await load(baseline.url, 1, 'bw')
  const ceilings: R[] = []
  const servers: R[] = []
  const cpuPerRequest: number[] = []
  const postgresPerRequest: number[] = []
  const machineBusy: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    ceilings.push(await load(baseline.url, SECONDS, `b${round}-`))
    const cpuBefore = cpuMs(server.child.pid!)
    const postgresBefore = postgresCpuMs()
    const machineBefore = machineCpuMs()
    servers.push(await load(server.url, SECONDS, `r${round}-`))
    const served = servers.at(-1)!
    const requests = Math.max(1, served.rps * SECONDS)
    cpuPerRequest.push((cpuMs(server.child.pid!) - cpuBefore) / requests)
    postgresPerRequest.push((postgresCpuMs() - postgresBefore) / requests)
    const machineAfter = machineCpuMs()
    machineBusy.push((machineAfter.busy - machineBefore.busy) / Math.max(1, machineAfter.total - machineBefore.total))
    log(
      `  ${name} round ${round + 1}: ceiling ${ceilings.at(-1)!.rps.toFixed(0)} req/s, server ${served.rps.toFixed(0)} req/s p99 ${served.p99} ms, ${cpuPerRequest.at(-1)!.toFixed(3)} ms CPU/request (PostgreSQL ${postgresPerRequest.at(-1)!.toFixed(3)} ms), machine ${(100 * machineBusy.at(-1)!).toFixed(0)} % busy`,
    )
  }
  const ceiling = median(ceilings.map((r) => r.rps))
  const rps = median(servers.map((r) => r.rps))
  const figure: HttpFigure = {
    name,
    connections,
    ceiling: { rps: ceiling, p99: median(ceilings.map((r) => r.p99)), rounds: ceilings.map((r) => r.rps) },
    server: {
      rps,
      p50: median(servers.map((r) => r.p50)),
      p99: median(servers.map((r) => r.p99)),
      rounds: servers.map((r) => r.rps),
      non2xx: servers.reduce((s, r) => s + r.non2xx, 0),
      errors: servers.reduce((s, r) => s + r.errors, 0),
      cpuPerRequestMs: median(cpuPerRequest),
      postgresCpuPerRequestMs: median(postgresPerRequest),
      machineBusy: median(machineBusy),
    },
    ratio: rps / ceiling,
  }
  return { figure, rounds: servers }
}

export interface LatencyFigure {
  p50: number
  p99: number
  mean: number
  rounds: number[]
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })

function once(url: URL, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = http.request(url, { agent, headers }, (res) => {
      res.resume()
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${url.pathname}: ${res.statusCode}`))
        else resolve(performance.now() - started)
      })
    })
    req.on('error', reject)
    req.end()
  })
}

/** One request at a time (no queueing: what one client sees), timed on the load core; medians of rounds. */
export async function measureLatency(
  urlText: string,
  headers: Record<string, string>,
  count = 300,
  warmup = 100,
): Promise<LatencyFigure> {
  const url = new URL(urlText)
  for (let i = 0; i < warmup; i++) await once(url, headers)
  const p50s: number[] = []
  const p99s: number[] = []
  const means: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const times: number[] = []
    for (let i = 0; i < count; i++) times.push(await once(url, headers))
    times.sort((a, b) => a - b)
    p50s.push(times[Math.floor(times.length * 0.5)]!)
    p99s.push(times[Math.floor(times.length * 0.99)]!)
    means.push(times.reduce((s, t) => s + t, 0) / times.length)
  }
  return { p50: median(p50s), p99: median(p99s), mean: median(means), rounds: p50s }
}

/** Rounds of A and B alternated, so the machine's drift touches both alike. */
export async function measureLatencyPair(
  a: { url: string; headers: Record<string, string> },
  b: { url: string; headers: Record<string, string> },
  count = 1000,
  warmup = 1000,
): Promise<[LatencyFigure, LatencyFigure]> {
  const urlA = new URL(a.url)
  const urlB = new URL(b.url)
  for (let i = 0; i < warmup; i++) {
    await once(urlA, a.headers)
    await once(urlB, b.headers)
  }
  const rounds: [number[][], number[][]] = [[], []]
  for (let round = 0; round < ROUNDS; round++) {
    for (const [side, url, headers] of [
      [0, urlA, a.headers],
      [1, urlB, b.headers],
    ] as const) {
      const times: number[] = []
      for (let i = 0; i < count; i++) times.push(await once(url, headers))
      rounds[side].push(times.sort((x, y) => x - y))
    }
  }
  const figure = (all: number[][]): LatencyFigure => ({
    p50: median(all.map((t) => t[Math.floor(t.length * 0.5)]!)),
    p99: median(all.map((t) => t[Math.floor(t.length * 0.99)]!)),
    mean: median(all.map((t) => t.reduce((sum, x) => sum + x, 0) / t.length)),
    rounds: all.map((t) => t[Math.floor(t.length * 0.5)]!),
  })
  return [figure(rounds[0]), figure(rounds[1])]
}

export const whole = (n: number) => Math.round(n).toLocaleString('en-US')
