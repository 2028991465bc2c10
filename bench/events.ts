import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { LoadResult, LoadSpec } from './load.ts'
import { median, ROUNDS, SECONDS, whole } from './measure.ts'
import { againstCeiling, ceilingPhase, type CeilingFigures } from './events-ceiling-phase.ts'
import {
  CORES,
  coreCpuMs,
  cpuMs,
  LOAD_CORE,
  machineCpuMs,
  postgresCpuMs,
  runLoad,
  SERVER_CORE,
  sleep,
  startServer,
  type Running,
} from './processes.ts'
import { ADMIN, token, type Seeded } from './seed.ts'

// The events workload on PostgreSQL (its target: bench/README.md): fixed-rate team creations, each
// one event and ten deliveries to local receivers (one failing, one slow). Phases: 1. writes, then a
// drain until the healthy receivers got every event; 2. the same without endpoints; 3. unthrottled
// throughput with and without; 4. the ceiling (bench/events-ceiling.ts), the same deliveries without a database.
export interface EventFigures {
  receivers: number
  healthy: number
  rate: number
  seconds: number
  sustained: { offered: number; achieved: number; p99WriteMs: number; non2xx: number }
  sustainedWithout: {
    achieved: number
    p99WriteMs: number
    non2xx: number
    serverCpuMsPerChange: number
    postgresCpuMsPerChange: number
    machineCpuMsPerChange: number
    machineBusy: number
  }
  delivery: {
    events: number
    expected: number
    delivered: number
    missing: number
    withinTwoSeconds: number
    p50Ms: number
    p99Ms: number
    maxMs: number
    perSecondDuringLoad: number
    perSecondOverall: number
    /** From the end of the writes to the last healthy arrival (or the drain's end). */
    drainMs: number
    serverCpuMsPerDelivery: number
    serverCpuMsPerChange: number
    postgresCpuMsPerChange: number
    /** The whole machine's busy CPU per change over the writes and the drain. */
    machineCpuMsPerChange: number
    /** 1: every core busy. */
    machineBusyDuringWrites: number
    serverCoreBusyDuringWrites: number
    loadCoreBusyDuringWrites: number
    failingReceiverCalls: number
    slowReceiverCalls: number
    /** Deliveries that went through the queue: a failed first call, or no free slot at the fan-out. */
    queuedHealthy: number
    queuedFailing: number
    queuedSlow: number
  }
  throughput: { without: number[]; with: number[]; ratio: number; p99Without: number; p99With: number }
  ceiling: CeilingFigures
}

export interface Db {
  query: (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>
}

const RATE = Number(process.env.BENCH_EVENTS_RATE ?? 1000)
const PHASE_SECONDS = Number(process.env.BENCH_EVENTS_SECONDS ?? 10)
const DRAIN_SECONDS = Number(process.env.BENCH_EVENTS_DRAIN ?? 60)
const HEALTHY = 8

type Kind = 'ok' | 'fail' | 'slow'
export type Receiver = Awaited<ReturnType<typeof receiver>>
export type Writes = (prefix: string, seconds: number, rate?: number) => LoadSpec

export async function receiver(kind: Kind) {
  const arrivals = new Map<string, number>()
  let calls = 0
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const at = Date.now()
      calls++
      const id = req.headers['webhook-id']
      if (typeof id === 'string' && !arrivals.has(id)) arrivals.set(id, at)
      if (kind === 'ok') return res.writeHead(200).end()
      if (kind === 'fail') return res.writeHead(500).end('boom')
      setTimeout(() => {
        if (!res.destroyed) res.writeHead(200).end()
      }, 5000).unref()
    })
  })
  server.keepAliveTimeout = 72_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    kind,
    arrivals,
    calls: () => calls,
    endpointId: '',
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    reset() {
      arrivals.clear()
      calls = 0
    },
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(resolve))
    },
  }
}

export async function measureEvents(
  env: Record<string, string>,
  seeded: Seeded,
  db: Db,
  log: (s: string) => void,
  nodeArgs: string[] = [],
): Promise<EventFigures> {
  const kinds: Kind[] = [...Array<Kind>(HEALTHY).fill('ok'), 'fail', 'slow']
  const receivers = await Promise.all(kinds.map(receiver))
  const server = await startServer({ ...env, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }, nodeArgs)
  try {
    const company = seeded.writer.id
    const headers = { authorization: `Bearer ${seeded.writer.token}`, 'content-type': 'application/json' }
    // Endpoints need write:company, which the company's bench client lacks: the platform's token.
    const admin = {
      authorization: `Bearer ${await token(server.url, ADMIN.client_id, ADMIN.client_secret)}`,
      'content-type': 'application/json',
    }
    for (const r of receivers) {
      const res = await fetch(`${server.url}/api/v1/companies/${company}/webhook_endpoints`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ url: r.url, event_types: ['team.created'], description: `bench ${r.kind}` }),
      })
      if (res.status !== 201) throw new Error(`creating an endpoint answered ${res.status} ${await res.text()}`)
      r.endpointId = ((await res.json()) as { id: string }).id
    }
    const writes = (prefix: string, seconds: number, rate?: number): LoadSpec => ({
      url: `${server.url}/api/v1/companies/${company}/teams`,
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Event', code: 'x', team_leader_ids: [] }),
      uniqueCode: `${prefix}${Date.now()}-`,
      connections: 32,
      seconds,
      ...(rate ? { rate } : {}),
    })
    await runLoad(writes('ew', 2, 200))
    await clearBacklog(db, company, true)
    await sleep(6000)
    for (const r of receivers) r.reset()

    const delivery = await deliveryPhase(server, db, company, receivers, writes, log)
    await clearBacklog(db, company, false)
    await sleep(2000)
    const before = { server: cpuMs(server.child.pid!), postgres: postgresCpuMs(), machine: machineCpuMs() }
    const plain = await runLoad(writes('en', PHASE_SECONDS, RATE))
    const machine = machineCpuMs()
    const changes = Math.max(
      1,
      Object.entries(plain.statusCodes).reduce((n, [code, count]) => n + (code.startsWith('2') ? count : 0), 0),
    )
    const sustainedWithout = {
      achieved: plain.rps,
      p99WriteMs: plain.p99,
      non2xx: plain.non2xx,
      serverCpuMsPerChange: (cpuMs(server.child.pid!) - before.server) / changes,
      postgresCpuMsPerChange: (postgresCpuMs() - before.postgres) / changes,
      machineCpuMsPerChange: (machine.busy - before.machine.busy) / changes,
      machineBusy: (machine.busy - before.machine.busy) / Math.max(1, machine.total - before.machine.total),
    }
    log(
      `  events: the same run without endpoints: ${plain.rps.toFixed(0)} of ${RATE} changes/s (write p99 ${plain.p99} ms, ${plain.non2xx} non-2xx); ` +
        `per change ${sustainedWithout.serverCpuMsPerChange.toFixed(2)} ms server, ${sustainedWithout.postgresCpuMsPerChange.toFixed(2)} ms PostgreSQL, ` +
        `${sustainedWithout.machineCpuMsPerChange.toFixed(2)} ms the whole machine (${(100 * sustainedWithout.machineBusy).toFixed(0)} % busy)`,
    )
    log(`  events: ${budget({ ...delivery, sustainedWithout })}`)
    const throughput = await throughputPhase(db, company, writes, log)
    const ceiling = await ceilingPhase(
      { rate: RATE, seconds: PHASE_SECONDS, drainSeconds: DRAIN_SECONDS },
      server,
      db,
      company,
      headers,
      receivers,
      writes,
      log,
    )
    const figures = {
      receivers: receivers.length,
      healthy: HEALTHY,
      rate: RATE,
      seconds: PHASE_SECONDS,
      ...delivery,
      sustainedWithout,
      throughput,
      ceiling,
    }
    log(`  events: ${againstCeiling(figures.delivery, ceiling)}`)
    return figures
  } finally {
    await server.stop()
    await Promise.all(receivers.map((r) => r.close()))
  }
}

async function clearBacklog(db: Db, company: string, enabled: boolean) {
  await db.query('UPDATE webhook_endpoints SET enabled = $2 WHERE company_id = $1', [company, enabled])
  await db.query('DELETE FROM webhook_fanouts f USING events e WHERE e.id = f.event_id AND e.company_id = $1', [
    company,
  ])
  // Thousands of rows in no set order, while outcome batches update some: a deadlock victim is run again.
  for (let attempt = 1; ; attempt++) {
    try {
      await db.query(`UPDATE webhook_deliveries SET status = 'failed' WHERE status = 'pending' AND company_id = $1`, [
        company,
      ])
      return
    } catch (err) {
      if ((err as { code?: string }).code !== '40P01' || attempt === 5) throw err
    }
  }
}

async function deliveryPhase(
  server: Running,
  db: Db,
  company: string,
  receivers: Awaited<ReturnType<typeof receiver>>[],
  writes: Writes,
  log: (s: string) => void,
) {
  const healthy = receivers.filter((r) => r.kind === 'ok')
  const startedAt = new Date()
  const cpuBefore = cpuMs(server.child.pid!)
  const pgCpuBefore = postgresCpuMs()
  const machineBefore = machineCpuMs()
  const coresBefore = [coreCpuMs(SERVER_CORE), coreCpuMs(LOAD_CORE)] as const
  const load = await runLoad(writes('ed', PHASE_SECONDS, RATE))
  const loadEnd = Date.now()
  const machineAtLoadEnd = machineCpuMs()
  const coresAtLoadEnd = [coreCpuMs(SERVER_CORE), coreCpuMs(LOAD_CORE)] as const
  const coreBusy = (i: 0 | 1) =>
    (coresAtLoadEnd[i].busy - coresBefore[i].busy) / Math.max(1, coresAtLoadEnd[i].total - coresBefore[i].total)
  const duringLoad = healthy.reduce((n, r) => n + r.arrivals.size, 0)
  const events = (
    await db.query(
      `SELECT id, created_at FROM events WHERE company_id = $1 AND type = 'team.created' AND created_at >= $2`,
      [company, startedAt],
    )
  ).map((row) => ({ id: String(row.id), at: new Date(row.created_at as Date).getTime() }))
  const expected = events.length * healthy.length
  const arrived = () => healthy.reduce((n, r) => n + events.filter((e) => r.arrivals.has(e.id)).length, 0)
  const drainUntil = loadEnd + DRAIN_SECONDS * 1000
  while (Date.now() < drainUntil && arrived() < expected) await sleep(250)
  const queuedRows = await db.query(
    'SELECT endpoint_id, count(*)::int AS n FROM webhook_deliveries WHERE company_id = $1 AND created_at >= $2 GROUP BY endpoint_id',
    [company, startedAt],
  )
  const queued = (kind: Kind) =>
    queuedRows
      .filter((row) => receivers.some((r) => r.kind === kind && r.endpointId === row.endpoint_id))
      .reduce((n, row) => n + Number(row.n), 0)
  const cpu = cpuMs(server.child.pid!) - cpuBefore
  const pgCpu = postgresCpuMs() - pgCpuBefore
  const machineCpu = machineCpuMs().busy - machineBefore.busy
  const latencies: number[] = []
  let last = loadEnd
  for (const r of healthy) {
    for (const e of events) {
      const at = r.arrivals.get(e.id)
      if (at === undefined) continue
      latencies.push(at - e.at)
      last = Math.max(last, at)
    }
  }
  latencies.sort((a, b) => a - b)
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? NaN
  const delivered = latencies.length
  const figures = {
    sustained: { offered: RATE, achieved: load.rps, p99WriteMs: load.p99, non2xx: load.non2xx },
    delivery: {
      events: events.length,
      expected,
      delivered,
      missing: expected - delivered,
      withinTwoSeconds: latencies.filter((ms) => ms <= 2000).length,
      p50Ms: pct(0.5),
      p99Ms: expected > delivered ? Infinity : pct(0.99),
      maxMs: latencies.at(-1) ?? NaN,
      perSecondDuringLoad: duringLoad / PHASE_SECONDS,
      perSecondOverall: delivered / Math.max(0.001, (last - startedAt.getTime()) / 1000),
      drainMs: last - loadEnd,
      serverCpuMsPerDelivery: cpu / Math.max(1, delivered),
      serverCpuMsPerChange: cpu / Math.max(1, events.length),
      postgresCpuMsPerChange: pgCpu / Math.max(1, events.length),
      machineCpuMsPerChange: machineCpu / Math.max(1, events.length),
      machineBusyDuringWrites:
        (machineAtLoadEnd.busy - machineBefore.busy) / Math.max(1, machineAtLoadEnd.total - machineBefore.total),
      serverCoreBusyDuringWrites: coreBusy(0),
      loadCoreBusyDuringWrites: coreBusy(1),
      failingReceiverCalls: receivers.find((r) => r.kind === 'fail')!.calls(),
      slowReceiverCalls: receivers.find((r) => r.kind === 'slow')!.calls(),
      queuedHealthy: queued('ok'),
      queuedFailing: queued('fail'),
      queuedSlow: queued('slow'),
    },
  }
  const d = figures.delivery
  log(
    `  events: ${load.rps.toFixed(0)} of ${RATE} changes/s for ${PHASE_SECONDS} s (write p99 ${load.p99} ms); ${d.delivered} of ${d.expected} healthy deliveries, ` +
      `${d.withinTwoSeconds} within 2 s; latency p50 ${d.p50Ms} ms p99 ${d.p99Ms} ms max ${d.maxMs} ms; ${d.perSecondDuringLoad.toFixed(0)}/s during the writes, ` +
      `${d.perSecondOverall.toFixed(0)}/s overall; ${d.serverCpuMsPerDelivery.toFixed(3)} ms server CPU per delivery; per change ${d.serverCpuMsPerChange.toFixed(2)} ms server ` +
      `and ${d.postgresCpuMsPerChange.toFixed(2)} ms PostgreSQL CPU, ${d.machineCpuMsPerChange.toFixed(2)} ms the whole machine (${(100 * d.machineBusyDuringWrites).toFixed(0)} % busy during the writes); 500 receiver ${d.failingReceiverCalls} calls, slow ${d.slowReceiverCalls}; ` +
      `queued (a delivery row): ${d.queuedHealthy} to the healthy receivers, ${d.queuedFailing} to the 500 one, ${d.queuedSlow} to the slow one`,
  )
  return figures
}

async function throughputPhase(db: Db, company: string, writes: Writes, log: (s: string) => void) {
  const without: LoadResult[] = []
  const withEndpoints: LoadResult[] = []
  for (let round = 0; round < ROUNDS; round++) {
    await clearBacklog(db, company, false)
    without.push(await runLoad(writes(`eb${round}-`, SECONDS)))
    await clearBacklog(db, company, true)
    withEndpoints.push(await runLoad(writes(`ee${round}-`, SECONDS)))
    log(
      `  events round ${round + 1}: POST teams ${without.at(-1)!.rps.toFixed(0)} req/s without endpoints, ${withEndpoints.at(-1)!.rps.toFixed(0)} req/s with 10`,
    )
  }
  await clearBacklog(db, company, false)
  const a = median(without.map((r) => r.rps))
  const b = median(withEndpoints.map((r) => r.rps))
  return {
    without: without.map((r) => r.rps),
    with: withEndpoints.map((r) => r.rps),
    ratio: b / a,
    p99Without: median(without.map((r) => r.p99)),
    p99With: median(withEndpoints.map((r) => r.p99)),
  }
}

/**
 * The most changes a second this machine could take with the endpoints, from what a change cost
 * its cores and the server's core. Meaningful only for a machine busy all through the writes; a
 * run with deliveries still owed at the drain's end under-counts its cost.
 */
function bounds(e: Pick<EventFigures, 'delivery'>) {
  return {
    machine: (CORES * 1000) / e.delivery.machineCpuMsPerChange,
    serverCore: 1000 / e.delivery.serverCpuMsPerChange,
  }
}

function coreShares(d: EventFigures['delivery']): string {
  if (LOAD_CORE === SERVER_CORE) return ''
  return (
    ` (core ${SERVER_CORE}, the server's, ${(100 * d.serverCoreBusyDuringWrites).toFixed(0)} %; core ${LOAD_CORE}, the load generator's, receivers' and harness's, ` +
    `${(100 * d.loadCoreBusyDuringWrites).toFixed(0)} %; PostgreSQL runs on either)`
  )
}

function budget(e: Pick<EventFigures, 'delivery' | 'sustainedWithout'>): string {
  const d = e.delivery
  const w = e.sustainedWithout
  const b = bounds(e)
  return (
    `a change cost the whole machine ${d.machineCpuMsPerChange.toFixed(2)} ms of CPU with the endpoints and ${w.machineCpuMsPerChange.toFixed(2)} ms without ` +
    `(the server ${d.serverCpuMsPerChange.toFixed(2)} vs ${w.serverCpuMsPerChange.toFixed(2)}, PostgreSQL ${d.postgresCpuMsPerChange.toFixed(2)} vs ${w.postgresCpuMsPerChange.toFixed(2)}); ` +
    `the machine was ${(100 * d.machineBusyDuringWrites).toFixed(0)} % busy during the writes with the endpoints${coreShares(d)}, ${(100 * w.machineBusy).toFixed(0)} % without; ` +
    `at these costs ${CORES} cores take at most ${whole(b.machine)} changes/s with the endpoints, and the server's one core ${whole(b.serverCore)}` +
    (d.missing > 0
      ? ` (${whole(d.missing)} deliveries still owed at the drain's end: the cost is undercounted, the bound too high)`
      : '')
  )
}

/** The rows of bench/README.md's targets table: `| workload | target | measured | verdict |`. */
export function eventTargetRows(e: EventFigures | undefined, verdict: (ok: boolean | undefined) => string): string[] {
  if (!e)
    return [
      '| events: 1,000 changes/s to 10 receivers (one 500, one after 5 s) | every event at the 8 healthy ones within 2 s at p99 | - | not measured |',
      '| events: the writes of that run against the same run without endpoints | within 15 % | - | not measured |',
      '| events: POST teams saturated (32 connections) with 10 endpoints vs none | none | - | not measured |',
      '| events: the ceiling (a raw node:http server, no database) at the same rate, to the same receivers | none: one implementation with no database, on this machine | - | not measured |',
    ]
  const d = e.delivery
  const t = e.throughput
  const w = e.sustainedWithout
  const c = e.ceiling
  const p99 = Number.isFinite(d.p99Ms)
    ? `${whole(d.p99Ms)} ms`
    : `not reached (${whole(d.missing)} missing ${DRAIN_SECONDS} s after the writes)`
  return [
    `| events: ${whole(e.rate)} changes/s for ${e.seconds} s to ${e.receivers} receivers (one 500, one after 5 s) | every event at the ${e.healthy} healthy ones within 2 s at p99 | ` +
      `${whole(e.sustained.achieved)} changes/s written (p99 ${e.sustained.p99WriteMs} ms); ${whole(d.delivered)} of ${whole(d.expected)} delivered, ${whole(d.withinTwoSeconds)} within 2 s; ` +
      `p50 ${whole(d.p50Ms)} ms, p99 ${p99}; ${whole(d.perSecondDuringLoad)} deliveries/s during the writes; ${d.serverCpuMsPerDelivery.toFixed(2)} ms server CPU per delivery; ` +
      `per change ${d.serverCpuMsPerChange.toFixed(2)} ms of the server's CPU and ${d.postgresCpuMsPerChange.toFixed(2)} ms of PostgreSQL's | ` +
      `${verdict(e.sustained.achieved >= 0.95 * e.rate && d.missing === 0 && d.p99Ms <= 2000)} |`,
    `| events: the writes of that run against the same run without endpoints | within 15 % | ${(e.sustained.achieved / w.achieved).toFixed(2)} × (${whole(e.sustained.achieved)} vs ${whole(w.achieved)} changes/s; write p99 ${e.sustained.p99WriteMs} vs ${w.p99WriteMs} ms; non-2xx ${e.sustained.non2xx} vs ${w.non2xx}); ${budget(e)} | ${verdict(e.sustained.achieved >= 0.85 * w.achieved)} |`,
    `| events: POST teams saturated (32 connections) with 10 endpoints vs none, rounds alternated | none: the deliveries' cost on the server's one core | ${t.ratio.toFixed(2)} × (${t.with.map(whole).join(' / ')} vs ${t.without.map(whole).join(' / ')} req/s); p99 ${t.p99With} vs ${t.p99Without} ms | for information |`,
    `| events: the ceiling (a raw node:http server, no database) at the same rate, to the same receivers | none: one implementation with no database, on this machine | ` +
      `${whole(c.achieved)} changes/s answered (p99 ${c.p99WriteMs} ms); ${whole(c.delivered)} of ${whole(c.expected)} healthy deliveries, p99 ${Number.isFinite(c.p99Ms) ? `${whole(c.p99Ms)} ms` : 'not reached'}; ` +
      `per change ${c.serverCpuMsPerChange.toFixed(2)} ms of the ceiling's CPU, ${c.othersCpuMsPerChange.toFixed(2)} ms of PostgreSQL's and the idle service's; ${againstCeiling(d, c)} | for information |`,
  ]
}
