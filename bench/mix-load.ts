import fs from 'node:fs'
import autocannon from 'autocannon'
import type { LoadResult } from './load.ts'

// The mix's load generator, in its own process on the load core: each request picks a company
// uniformly and a kind by weight. Reads its MixSpec from the JSON file named in argv; prints a MixResult.
export interface MixCompany {
  id: string
  token: string
  client_id: string
  client_secret: string
  teams: string[]
  contracts: string[]
}

export interface MixSpec {
  url: string
  connections: number
  seconds: number
  companies: MixCompany[]
  /** Makes the team codes of this round unique. */
  prefix: string
  /** Only the kinds whose name contains this (profiling one kind at a time). */
  only?: string
}

export interface KindFigure {
  count: number
  p50: number
  p99: number
  statuses: Record<string, number>
}

export interface MixResult extends LoadResult {
  byKind: Record<string, KindFigure>
  /** 503 and 429 answers, and those of them without Retry-After. */
  refused: number
  refusedWithoutRetryAfter: number
  /** 2xx answers only: the latency of what was accepted (the overload row). */
  acceptedP99: number
}

type Built = { method: 'GET' | 'POST' | 'PUT'; path: string; headers: Record<string, string>; body?: string }
type Kind = { name: string; weight: number; build: (c: MixCompany, n: number) => Built }

const json = { 'content-type': 'application/json' }
const bearer = (c: MixCompany) => ({ authorization: `Bearer ${c.token}` })
const pick = <T>(list: T[]) => list[Math.floor(Math.random() * list.length)]!
const base = (c: MixCompany) => `/api/v1/companies/${c.id}`
const day = () =>
  `2027-${String(1 + Math.floor(Math.random() * 12)).padStart(2, '0')}-${String(1 + Math.floor(Math.random() * 28)).padStart(2, '0')}`

/** 70 % reads, 20 % writes, 10 % token issues, each shared equally by its kinds. */
export function mixKinds(prefix: string): Kind[] {
  return [
    { name: 'read company', weight: 14, build: (c) => ({ method: 'GET', path: base(c), headers: bearer(c) }) },
    { name: 'read teams', weight: 14, build: (c) => ({ method: 'GET', path: `${base(c)}/teams`, headers: bearer(c) }) },
    {
      name: 'read contracts page of 50',
      weight: 14,
      build: (c) => ({ method: 'GET', path: `${base(c)}/contracts?limit=50`, headers: bearer(c) }),
    },
    {
      name: 'read holidays',
      weight: 14,
      build: (c) => ({ method: 'GET', path: `${base(c)}/holidays`, headers: bearer(c) }),
    },
    {
      name: 'read all_holidays',
      weight: 14,
      build: (c) => ({ method: 'GET', path: `${base(c)}/all_holidays?year=2027`, headers: bearer(c) }),
    },
    {
      name: 'write team',
      weight: 5,
      build: (c, n) => ({
        method: 'POST',
        path: `${base(c)}/teams`,
        headers: { ...bearer(c), ...json },
        body: JSON.stringify({ name: `Shift ${n}`, code: `${prefix}${n}`, team_leader_ids: [pick(c.contracts)] }),
      }),
    },
    {
      name: 'write contract',
      weight: 5,
      build: (c, n) => ({
        method: 'POST',
        path: `${base(c)}/contracts`,
        headers: { ...bearer(c), ...json },
        body: JSON.stringify({ first_name: 'Mix', last_name: `Hire ${n}`, email: `hire${n}@example.com` }),
      }),
    },
    {
      name: 'write membership',
      weight: 5,
      build: (c) => ({
        method: 'PUT',
        path: `${base(c)}/teams/${pick(c.teams)}/${Math.random() < 0.5 ? 'upgrade' : 'downgrade'}_contract`,
        headers: { ...bearer(c), ...json },
        body: JSON.stringify({ contract_id: pick(c.contracts) }),
      }),
    },
    {
      name: 'write holiday',
      weight: 5,
      build: (c, n) => ({
        method: 'POST',
        path: `${base(c)}/holidays`,
        headers: { ...bearer(c), ...json },
        body: JSON.stringify({ name: `Closure ${n}`, day: day() }),
      }),
    },
    {
      name: 'token issue',
      weight: 10,
      build: (c) => ({
        method: 'POST',
        path: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: c.client_id,
          client_secret: c.client_secret,
        }).toString(),
      }),
    },
  ]
}

/** The ceiling's answer patterns (bench/baseline.ts), one per kind, in the order of mixKinds. */
export const CEILING_PATTERNS: Array<[string, string]> = [
  ['GET', '^/api/v1/companies/[^/]+$'],
  ['GET', '/teams$'],
  ['GET', '/contracts\\?'],
  ['GET', '/holidays$'],
  ['GET', '/all_holidays'],
  ['POST', '/teams$'],
  ['POST', '/contracts$'],
  ['PUT', '_contract$'],
  ['POST', '/holidays$'],
  ['POST', '^/oauth/token'],
]

function percentile(sorted: number[], p: number) {
  return sorted.length === 0
    ? 0
    : Math.round(100 * sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!) / 100
}

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8')) as MixSpec
  const kinds = mixKinds(spec.prefix).filter((k) => !spec.only || k.name.includes(spec.only))
  const total = kinds.reduce((s, k) => s + k.weight, 0)
  const choose = () => {
    let r = Math.random() * total
    for (const k of kinds) {
      r -= k.weight
      if (r < 0) return k
    }
    return kinds.at(-1)!
  }
  let n = 0
  const times = new Map<string, number[]>(kinds.map((k) => [k.name, []]))
  const statuses = new Map<string, Record<string, number>>(kinds.map((k) => [k.name, {}]))
  const accepted: number[] = []
  let refused = 0
  let refusedWithoutRetryAfter = 0

  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        connections: spec.connections,
        duration: spec.seconds,
        requests: [
          {
            setupRequest: (request: Record<string, unknown>, context: Record<string, unknown>) => {
              const kind = choose()
              context.kind = kind.name
              return { ...request, ...kind.build(pick(spec.companies), n++) }
            },
            onResponse: (
              status: number,
              _body: string,
              context: Record<string, unknown>,
              headers: Record<string, string>,
            ) => {
              const of = statuses.get(context.kind as string)!
              of[status] = (of[status] ?? 0) + 1
              if (status === 503 || status === 429) {
                refused++
                if (!headers['retry-after'] && !headers['Retry-After']) refusedWithoutRetryAfter++
              }
            },
          },
        ],
      },
      (err: unknown, res: autocannon.Result) => (err ? reject(err) : resolve(res)),
    )
    // The client's context still holds the kind of the answer being reported (the next request is made after this event).
    instance.on(
      'response',
      (
        client: { requestIterator: { context: Record<string, unknown> } },
        status: number,
        _bytes: number,
        ms: number,
      ) => {
        times.get(client.requestIterator.context.kind as string)?.push(ms)
        if (status >= 200 && status < 300) accepted.push(ms)
      },
    )
  })

  const byKind: Record<string, KindFigure> = {}
  for (const k of kinds) {
    const sorted = times.get(k.name)!.sort((a, b) => a - b)
    byKind[k.name] = {
      count: sorted.length,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      statuses: statuses.get(k.name)!,
    }
  }
  const codes: Record<string, number> = {}
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {}))
    codes[code] = Number((stat as { count: number }).count)
  const ok = (result as unknown as Record<string, number>)['2xx'] ?? 0
  const out: MixResult = {
    rps: ok / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    mean: result.latency.average,
    total: ok,
    non2xx: result.non2xx,
    errors: result.errors,
    statusCodes: codes,
    byKind,
    refused,
    refusedWithoutRetryAfter,
    acceptedP99: percentile(
      accepted.sort((a, b) => a - b),
      0.99,
    ),
  }
  process.stdout.write(`${JSON.stringify(out)}\n`)
}

if (process.argv[1]?.endsWith('mix-load.ts')) await main()
