import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ROOT } from './processes.ts'
import type { EngineFigures } from './run.ts'
import { eventTargetRows } from './events.ts'
import { COLD_SECONDS, MIX_WARMUP_SECONDS, type MixFigures } from './mix.ts'
import { mixDetail, mixRows } from './mix-report.ts'
import { whole } from './measure.ts'

export interface RunFigures {
  started: Date
  finished: Date
  cores: number
  serverCore: number
  loadCore: number
  baselineCores: string
  busy: string[]
  /** 1-minute load average at the start and at the end of the run. */
  load: [number, number]
  seconds: number
  warmup: number
  engines: EngineFigures[]
  /** Issue 19's workloads (bench/mix.ts). */
  mix?: MixFigures
  partial: boolean
}

const FILE = path.join(ROOT, 'bench', 'README.md')
/** The generated part of bench/README.md lies between these two lines; the rest is written by hand. */
const START = '<!-- latest-run:start (written by npm run bench) -->'
const END = '<!-- latest-run:end -->'

const f0 = whole
const f2 = (n: number) => n.toFixed(2)
const verdict = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'met' : '**missed**')

/** Writes one run's figures into bench/README.md, between its markers, leaving the hand-written text as it is. */
export function writeResults(run: RunFigures): string {
  const pg = run.engines.find((e) => e.engine === 'postgres')
  const lite = run.engines.find((e) => e.engine === 'pglite')
  const http = (e: EngineFigures | undefined, name: string) => e?.http.find((h) => h.name === name)
  const rows: string[] = []
  const row = (workload: string, target: string, measured: string, ok: boolean | undefined) =>
    rows.push(`| ${workload} | ${target} | ${measured} | ${verdict(ok)} |`)

  const teams = http(pg, 'GET teams')
  row(
    'GET .../teams (20 teams x 2 leaders, 1,000 companies), 32 connections',
    '≥ 0.25 × ceiling; p99 ≤ 20 ms',
    teams
      ? `${f2(teams.ratio)} × (${f0(teams.server.rps)} / ${f0(teams.ceiling.rps)} req/s); p99 ${teams.server.p99} ms`
      : '-',
    teams && teams.ratio >= 0.25 && teams.server.p99 <= 20,
  )
  const company = http(pg, 'GET company')
  row(
    'GET /api/v1/companies/{id}, 32 connections',
    '≥ 0.30 × ceiling',
    company
      ? `${f2(company.ratio)} × (${f0(company.server.rps)} / ${f0(company.ceiling.rps)} req/s); p99 ${company.server.p99} ms`
      : '-',
    company && company.ratio >= 0.3,
  )
  const post = http(pg, 'POST teams')
  row(
    'POST .../teams (202, durable commit), 32 connections',
    '≥ 0.08 × ceiling; p99 ≤ 50 ms',
    post
      ? `${f2(post.ratio)} × (${f0(post.server.rps)} / ${f0(post.ceiling.rps)} req/s); p99 ${post.server.p99} ms`
      : '-',
    post && post.ratio >= 0.08 && post.server.p99 <= 50,
  )
  const tok = http(pg, 'POST /oauth/token')
  row(
    'POST /oauth/token (company client), 32 connections',
    '≥ 0.10 × ceiling',
    tok ? `${f2(tok.ratio)} × (${f0(tok.server.rps)} / ${f0(tok.ceiling.rps)} req/s); p99 ${tok.server.p99} ms` : '-',
    tok && tok.ratio >= 0.1,
  )
  for (const name of ['GET teams', 'GET company']) {
    const a = http(lite, name)
    const b = http(pg, name)
    row(
      `${name} on PGlite, 32 connections`,
      '≥ 0.30 × the PostgreSQL figure',
      a && b
        ? `${f2(a.server.rps / b.server.rps)} × (${f0(a.server.rps)} / ${f0(b.server.rps)} req/s); ${f2(a.ratio)} × its ceiling; p99 ${a.server.p99} ms`
        : '-',
      a && b ? a.server.rps >= 0.3 * b.server.rps : undefined,
    )
  }
  const comms = pg?.communications
  if (comms && 'fanOut' in comms) {
    row(
      'a communication due to 10,000 recipients',
      'all stored ≤ 1 s after due',
      `${f0(comms.fanOut.dueToStoredMs)} ms (scheduler claim ${f0(comms.fanOut.dueToClaimMs)} ms + insert and commit ${f0(comms.fanOut.claimToStoredMs)} ms)`,
      comms.fanOut.dueToStoredMs <= 1000,
    )
    row(
      `communications report over ${f0(comms.report.messages)} messages`,
      'p50 ≤ 20 ms',
      `p50 ${f2(comms.report.p50)} ms, p99 ${f2(comms.report.p99)} ms`,
      comms.report.p50 <= 20,
    )
  } else {
    const why = comms && 'skipped' in comms ? `not measured yet: ${comms.skipped}` : 'not measured yet'
    row('a communication due to 10,000 recipients', 'all stored ≤ 1 s after due', why, undefined)
    row('communications report over 100,000 messages', 'p50 ≤ 20 ms', why, undefined)
  }
  row(
    'all_holidays for a year',
    'p50 ≤ 5 ms',
    pg?.holidays ? `p50 ${f2(pg.holidays.p50)} ms, p99 ${f2(pg.holidays.p99)} ms` : '-',
    pg?.holidays && pg.holidays.p50 <= 5,
  )
  const g = pg?.growth
  row(
    'growth: teams read (read cache off), 100 vs 100,000 companies',
    'latency within 20 %',
    g
      ? `p50 ${f2(g.at100.p50)} → ${f2(g.at100k.p50)} ms (${g.at100k.p50 >= g.at100.p50 ? '+' : ''}${f2(100 * (g.at100k.p50 / g.at100.p50 - 1))} %); mean ${f2(g.at100.mean)} → ${f2(g.at100k.mean)} ms`
      : '-',
    g ? g.at100k.p50 <= 1.2 * g.at100.p50 : undefined,
  )
  const an = pg?.analytics
  row(
    'analytics: 365-point daily MRR series (10,000 companies, 20,000 changes in a year) vs companies?limit=100',
    '≤ 25 × its p50',
    an ? `p50 ${f2(an.series.p50)} ms vs ${f2(an.companies.p50)} ms (${f2(an.series.p50 / an.companies.p50)} ×)` : '-',
    an ? an.series.p50 <= 25 * an.companies.p50 : undefined,
  )
  row(
    'analytics: the series over 10,000 companies of which 1,000 change vs 1,000 all changing (2,000 changes each)',
    '< 2 ×',
    an ? `p50 ${f2(an.sparse.p50)} vs ${f2(an.dense.p50)} ms (${f2(an.sparse.p50 / an.dense.p50)} ×)` : '-',
    an ? an.sparse.p50 < 2 * an.dense.p50 : undefined,
  )
  rows.push(...eventTargetRows(pg?.events, verdict))
  for (const e of run.engines) {
    // The issue's targets are PostgreSQL's unless it says otherwise; PGlite's start is shown for information.
    if (e.engine === 'postgres')
      row(
        'start to /ready on an existing database; idle RSS',
        '≤ 2 s; RSS ≤ 150 MB',
        `${f0(e.startMs)} ms; ${f0(e.idleRssMb)} MB`,
        e.startMs <= 2000 && e.idleRssMb <= 150,
      )
    else
      row(
        'PGlite: start to /ready on an existing database; idle RSS (PostgreSQL itself runs in the process, with its WebAssembly heap)',
        '≤ 1 s; ≤ 200 MB',
        `${f0(e.startMs)} ms; ${f0(e.idleRssMb)} MB`,
        e.startMs <= 1000 && e.idleRssMb <= 200,
      )
  }

  mixRows(run.mix, row)

  const detail: string[] = []
  const mixHttp = [run.mix?.cached, run.mix?.uncached].flatMap((m) => (m ? [m.figure] : []))
  for (const e of [...run.engines, { engine: 'postgres' as const, http: mixHttp }]) {
    for (const h of e.http) {
      detail.push(
        `| ${e.engine} | ${h.name} | ${h.connections} | ${h.ceiling.rounds.map(f0).join(' / ')} | ${h.server.rounds.map(f0).join(' / ')} | ${h.server.p50} | ${h.server.p99} | ${h.server.cpuPerRequestMs.toFixed(3)} | ${e.engine === 'postgres' ? h.server.postgresCpuPerRequestMs.toFixed(3) : '-'} | ${(100 * h.server.machineBusy).toFixed(0)} % | ${h.server.non2xx} | ${f2(h.ratio)} |`,
      )
    }
  }

  const engineLine = run.engines
    .map(
      (e) =>
        `${e.engine === 'postgres' ? `PostgreSQL ${e.version} (local server, 127.0.0.1:5432, not pinned: it runs where the kernel puts it)` : e.version} — server process on CPU(s) ${e.serverCores}`,
    )
    .join('; ')
  const latest = `- Date: ${run.started.toISOString()} (run took ${Math.round((run.finished.getTime() - run.started.getTime()) / 1000)} s)
- Machine: ${run.cores} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Linux ${os.release()}, Node ${process.version}
- Pinning (taskset): server and ceiling on core ${run.serverCore} (ceiling process: CPU(s) ${run.baselineCores}); load generator (autocannon 9) and this harness on core ${run.loadCore}
- Engines: ${engineLine}
- Rounds: ${run.seconds} s each after a ${run.warmup} s warm-up (the mix's: ${MIX_WARMUP_SECONDS} s, its first ${COLD_SECONDS} s reported apart); 3 rounds, ceiling and server alternated; every figure is the median of its rounds
- Machine state: load average ${run.load[0].toFixed(1)} at the start, ${run.load[1].toFixed(1)} at the end (${run.cores} cores${Math.max(...run.load) > 1.5 ? ': **other work was running on the machine, so the figures are noisier than they should be**' : ''}); ${run.busy.length === 0 ? 'no other test process was seen at the start or the end' : `**other test processes were running during this run (${run.busy.length} seen), so the figures are noisier than they should be**`}${run.partial ? '\n- **Partial run** (BENCH_ONLY was set): some workloads were left out.' : ''}

### Targets

| workload | target | measured | verdict |
|---|---|---|---|
${rows.join('\n')}

### Rounds

| engine | workload | connections | ceiling req/s (rounds) | server req/s (rounds) | p50 ms | p99 ms | server CPU ms/request | PostgreSQL CPU ms/request | machine busy | non-2xx | ratio |
|---|---|---|---|---|---|---|---|---|---|---|---|
${detail.join('\n')}
${mixDetail(run.mix)}
`
  const current = fs.existsSync(FILE) ? fs.readFileSync(FILE, 'utf8') : '# Benchmark\n'
  const from = current.indexOf(START)
  const to = current.indexOf(END)
  const block = `${START}\n${latest}${END}`
  const text =
    from >= 0 && to > from
      ? current.slice(0, from) + block + current.slice(to + END.length)
      : `${current.trimEnd()}\n\n## Latest run\n\n${block}\n`
  fs.writeFileSync(FILE, text)
  return FILE
}
