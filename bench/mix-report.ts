import type { MixFigures, MixRun } from './mix.ts'
import { COLD_SECONDS, COMPANIES, MIX_CONNECTIONS, PAGING_CONTRACTS } from './mix.ts'
import { FANOUT_RECIPIENTS } from './fanout.ts'
import { whole } from './measure.ts'

type Row = (workload: string, target: string, measured: string, ok: boolean | undefined) => void

const f0 = whole
const f2 = (n: number) => n.toFixed(2)
const errorsOf = (m: MixRun) => m.figure.server.non2xx + m.figure.server.errors
/** A fresh server's first seconds of the mix, before the warm-up's end (bench/mix.ts, MIX_WARMUP_SECONDS). */
const coldOf = (m: MixRun) =>
  m.cold
    ? `; a fresh server's first ${COLD_SECONDS} s, for information: ${f0(m.cold.rps)} req/s, p99 ${m.cold.p99} ms, ${m.cold.errors} errors or non-2xx`
    : ''

/** Issue 19's rows of the targets table (bench/mix.ts). */
export function mixRows(mix: MixFigures | undefined, row: Row) {
  const mixName = `mix over ${f0(COMPANIES)} companies chosen uniformly: 70 % reads (company, teams, contracts page of 50, holidays, all_holidays), 20 % writes (team, contract, membership, holiday), 10 % token issues; ${MIX_CONNECTIONS} connections`
  const c = mix?.cached
  row(
    mixName,
    '≥ 0.15 × ceiling, p99 ≤ 30 ms, 0 errors',
    c
      ? `${f2(c.figure.ratio)} × (${f0(c.figure.server.rps)} / ${f0(c.figure.ceiling.rps)} req/s); p99 ${c.figure.server.p99} ms; ${errorsOf(c)} errors or non-2xx${coldOf(c)}`
      : '-',
    c ? c.figure.ratio >= 0.15 && c.figure.server.p99 <= 30 && errorsOf(c) === 0 : undefined,
  )
  const u = mix?.uncached
  row(
    'the same mix with the read cache off',
    '≥ 0.10 × ceiling',
    u
      ? `${f2(u.figure.ratio)} × (${f0(u.figure.server.rps)} / ${f0(u.figure.ceiling.rps)} req/s); p99 ${u.figure.server.p99} ms; ${errorsOf(u)} errors or non-2xx${c ? `; the cache's share: ${f2(c.figure.server.rps / Math.max(1, u.figure.server.rps))} × the requests` : ''}${coldOf(u)}`
      : '-',
    u ? u.figure.ratio >= 0.1 : undefined,
  )
  const p = mix?.paging
  row(
    `contracts list, ${f0(PAGING_CONTRACTS)} contracts in one company, \`limit=100\` pages walked to the end (one request at a time, read cache off)`,
    'each page p99 ≤ 10 ms, flat from first to last page',
    p
      ? `${p.pages} pages × ${p.walks} walks: first page p50 ${f2(p.firstP50)} / p99 ${f2(p.firstP99)} ms, last page p50 ${f2(p.lastP50)} / p99 ${f2(p.lastP99)} ms; worst page p99 ${f2(p.worstP99)} ms (page ${p.worstPage})`
      : '-',
    p ? p.worstP99 <= 10 && p.lastP50 <= 1.2 * p.firstP50 + 0.2 : undefined,
  )
  const s = mix?.soak
  row(
    `memory during the mix (${s ? `${f0(s.seconds)} s${s.seconds < 600 ? ', **shortened from 10 minutes**' : ''}` : '10 minutes'})`,
    'RSS growth ≤ 10 % after the first minute',
    s
      ? `median ${f0(s.rssAt60Mb)} MB over the second minute → ${f0(s.rssEndMb)} MB over the last (sampled every 5 s) (${s.growth >= 0 ? '+' : ''}${f2(100 * s.growth)} %; peak ${f0(s.peakMb)} MB); ${f0(s.rps)} req/s, ${s.non2xx + s.errors} errors or non-2xx`
      : '-',
    s ? s.growth <= 0.1 : undefined,
  )
  const f = mix?.fanout
  row(
    `a communication due to ${f0(FANOUT_RECIPIENTS)} recipients, the mix running at 16 connections meanwhile`,
    'all stored ≤ 5 s after due, API p99 ≤ 50 ms meanwhile',
    f
      ? `${f.dueToStoredMs !== undefined ? `all ${f0(f.recipients)} stored ${f0(f.dueToStoredMs)} ms after due (claimed ${f0(f.dueToClaimMs ?? 0)} ms after)` : `only ${f0(f.stored)} stored 30 s after due`}; the mix meanwhile p99 ${f.mix.p99} ms (${f0(f.mix.rps)} req/s, ${f.mix.non2xx + f.mix.errors} errors or non-2xx)`
      : '-',
    f ? f.dueToStoredMs !== undefined && f.dueToStoredMs <= 5000 && f.mix.p99 <= 50 : undefined,
  )
  const o = mix?.overload
  if (o) {
    const worst = <K extends 'acceptedP99' | 'errors' | 'refused' | 'refusedWithoutRetryAfter'>(k: K) =>
      Math.max(...o.rounds.map((r) => r[k]))
    const otherStatuses = o.rounds
      .flatMap((r) => Object.keys(r.statusCodes))
      .filter((c) => !/^2/.test(c) && c !== '503' && c !== '429')
    row(
      `overload: twice the connections that saturate the server (${o.saturating} saturate: ${o.ladder.map(([c, rps]) => `${c} → ${f0(rps)}/s`).join(', ')}; so ${o.connections}), the mix, 3 rounds of 10 s`,
      'no error but 503/429 with `Retry-After`, p99 of accepted ≤ 100 ms',
      `p99 of accepted ${o.rounds.map((r) => r.acceptedP99).join(' / ')} ms; ${f0(o.rounds.reduce((n, r) => n + r.refused, 0))} refused (${worst('refusedWithoutRetryAfter')} without Retry-After); ${worst('errors')} connection errors${otherStatuses.length ? `; other statuses: ${[...new Set(otherStatuses)].join(', ')}` : ''}`,
      worst('acceptedP99') <= 100 &&
        worst('errors') === 0 &&
        worst('refusedWithoutRetryAfter') === 0 &&
        otherStatuses.length === 0,
    )
  } else
    row(
      'overload: twice the connections that saturate the server',
      'no error but 503/429 with `Retry-After`, p99 of accepted ≤ 100 ms',
      '-',
      undefined,
    )
  const h = mix?.hostile
  row(
    "PGlite under the reliability suite's hostile input (scenario 5)",
    'peak RSS ≤ 400 MB',
    h
      ? `${h.peakMb !== undefined ? `peak ${f0(h.peakMb)} MB` : '-'} (${h.detail}; scenario ${h.passed ? 'passed' : 'failed'})`
      : '-',
    h?.peakMb !== undefined ? h.peakMb <= 400 : undefined,
  )
}

/** The mix's latency by kind of request, cache on and off. */
export function mixDetail(mix: MixFigures | undefined): string {
  if (!mix?.cached && !mix?.uncached) return ''
  const runs = [
    ['read cache on', mix.cached],
    ['read cache off', mix.uncached],
  ] as const
  const lines = [
    '| read cache | kind | requests (3 rounds) | p50 ms | p99 ms | statuses |',
    '|---|---|---|---|---|---|',
  ]
  for (const [label, run] of runs) {
    if (!run) continue
    for (const [kind, k] of Object.entries(run.byKind))
      lines.push(
        `| ${label} | ${kind} | ${f0(k.count)} | ${k.p50} | ${k.p99} | ${Object.entries(k.statuses)
          .map(([code, n]) => `${code}×${n}`)
          .join(' ')} |`,
      )
  }
  return `\n### The mix by kind of request\n\nMedians of the server rounds; each request's latency as autocannon timed it.\n\n${lines.join('\n')}\n`
}
