import type { Db, Receiver, Writes } from './events.ts'
import { whole } from './measure.ts'
import { CORES, cpuMs, machineCpuMs, postgresCpuMs, runLoad, sleep, startCeiling, type Running } from './processes.ts'

/** The phase's terms: the events workload's rate, seconds of writes and seconds left for the deliveries after. */
export interface CeilingTerms { rate: number; seconds: number; drainSeconds: number }

/** The events ceiling's run (bench/events.ts, phase 4). */
export interface CeilingFigures {
  /** Changes answered per second (the ceiling writes nothing), and their p99. */
  achieved: number
  p99WriteMs: number
  /** Healthy deliveries owed (every change the ceiling answered, times the healthy receivers), and those that arrived. */
  expected: number
  delivered: number
  p99Ms: number
  /** The whole machine's busy CPU over the writes and the drain, per change; the ceiling process's own. */
  machineCpuMsPerChange: number
  serverCpuMsPerChange: number
  /** Counted in the machine's, though not the ceiling's: PostgreSQL's background work and the idle service's (its polls). */
  othersCpuMsPerChange: number
  machineBusyDuringWrites: number
}

/**
 * Phase 4: the same writes to the ceiling (bench/events-ceiling.ts), with the real server's answer
 * to a team's creation (202, its Location) and its event's body. The endpoints are disabled
 * meanwhile (the real server idles but for its polls), and PostgreSQL's deferred writes of the
 * phases before are flushed first (CHECKPOINT). What PostgreSQL and the idle server still spend
 * is reported beside the machine's figure, which counts it.
 */
export async function ceilingPhase(terms: CeilingTerms, server: Running, db: Db, company: string, headers: Record<string, string>, receivers: Receiver[],
  writes: Writes, log: (s: string) => void): Promise<CeilingFigures> {
  const created = await fetch(`${server.url}/api/v1/companies/${company}/teams`, { method: 'POST', headers, body: JSON.stringify({ name: 'Event', code: `ec${Date.now()}`, team_leader_ids: [] }) })
  const body = await created.text()
  const location = created.headers.get('location')
  if (created.status !== 202 || !location) throw new Error(`creating a team answered ${created.status} ${body}`)
  const answer = { status: created.status, location, body }
  const [event] = await db.query(`SELECT type, company_id, data FROM events WHERE company_id = $1 AND type = 'team.created' AND data -> 'object' ->> 'id' = $2`,
    [company, location.split('/').pop()])
  if (!event) throw new Error('the team\'s event was not found')
  await db.query('CHECKPOINT')
  const ceiling = await startCeiling('bench/events-ceiling.ts', {
    ANSWER: JSON.stringify(answer), EVENT_TEMPLATE: JSON.stringify(event), RECEIVERS: receivers.map((r) => r.url).join(','),
  })
  const url = `${ceiling.url}/api/v1/companies/${company}/teams`
  try {
    // 80 changes: the slow receiver's calls all start at once (fewer than its 256 slots) and end
    // 5 s later, as the failing one's retries do, all before the measured writes.
    await runLoad({ ...writes('cw', 2, 40), url })
    await sleep(6000)
    receivers.forEach((r) => r.reset())
    const healthy = receivers.filter((r) => r.kind === 'ok')
    const answered = async () => ((await (await fetch(`${ceiling.url}/__changes`)).json()) as { changes: number }).changes
    const first = await answered()
    const before = { machine: machineCpuMs(), ceiling: cpuMs(ceiling.child.pid!), others: postgresCpuMs() + cpuMs(server.child.pid!) }
    const load = await runLoad({ ...writes('cc', terms.seconds, terms.rate), url })
    const atLoadEnd = machineCpuMs()
    // Every change the ceiling answered (some after the load generator's count ended) owes its deliveries.
    const changes = Math.max(1, (await answered()) - first)
    const expected = changes * healthy.length
    const arrived = () => healthy.reduce((n, r) => n + r.arrivals.size, 0)
    const drainUntil = Date.now() + terms.drainSeconds * 1000
    while (Date.now() < drainUntil && arrived() < expected) await sleep(250)
    const after = { machine: machineCpuMs(), ceiling: cpuMs(ceiling.child.pid!), others: postgresCpuMs() + cpuMs(server.child.pid!) }
    // An id is `ceiling_<ms>_<n>`: the delivery's latency from its change's answer, for the phase's changes (n from `first` on).
    const latencies = healthy.flatMap((r) => [...r.arrivals].flatMap(([id, at]) => {
      const [, ms, n] = id.split('_')
      return Number(n) >= first ? [at - Number(ms)] : []
    })).sort((a, b) => a - b)
    const figures: CeilingFigures = {
      achieved: load.rps, p99WriteMs: load.p99, expected, delivered: latencies.length,
      p99Ms: latencies.length < expected ? Infinity : latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]!,
      machineCpuMsPerChange: (after.machine.busy - before.machine.busy) / changes,
      serverCpuMsPerChange: (after.ceiling - before.ceiling) / changes,
      othersCpuMsPerChange: (after.others - before.others) / changes,
      machineBusyDuringWrites: (atLoadEnd.busy - before.machine.busy) / Math.max(1, atLoadEnd.total - before.machine.total),
    }
    log(`  events: the ceiling (no database): ${load.rps.toFixed(0)} of ${terms.rate} changes/s answered (p99 ${load.p99} ms); ${figures.delivered} of ${expected} healthy deliveries, `
      + `p99 ${figures.p99Ms} ms; per change ${figures.serverCpuMsPerChange.toFixed(2)} ms the ceiling's process, ${figures.machineCpuMsPerChange.toFixed(2)} ms the whole machine `
      + `(${(100 * figures.machineBusyDuringWrites).toFixed(0)} % busy during the writes), of which ${figures.othersCpuMsPerChange.toFixed(2)} ms PostgreSQL's and the idle service's`)
    return figures
  } finally {
    await ceiling.stop()
    receivers.forEach((r) => r.reset())
  }
}

/**
 * The service against the ceiling: what a change cost the whole machine in each, and the rate
 * the machine's cores allow at the ceiling's cost. The ceiling is one implementation with no
 * database, not a proven minimum: the service's write, event, fan-out and outcomes come on top of
 * what it does.
 */
export function againstCeiling(service: { machineCpuMsPerChange: number }, c: CeilingFigures): string {
  return `a change cost the whole machine ${service.machineCpuMsPerChange.toFixed(2)} ms with the service and ${c.machineCpuMsPerChange.toFixed(2)} ms with the ceiling `
    + `(${(service.machineCpuMsPerChange / c.machineCpuMsPerChange).toFixed(2)} ×); at the ceiling's cost ${CORES} cores take at most ${whole((CORES * 1000) / c.machineCpuMsPerChange)} changes/s`
    + (c.delivered < c.expected ? ` (${whole(c.expected - c.delivered)} of the ceiling's deliveries still owed at the drain's end: its cost is undercounted, the bound too high)` : '')
}
