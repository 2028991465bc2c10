import type { Db, Receiver, Writes } from './events.ts'
import { whole } from './measure.ts'
import { CORES, cpuMs, machineCpuMs, postgresCpuMs, runLoad, sleep, startCeiling, type Running } from './processes.ts'

export interface CeilingTerms {
  rate: number
  seconds: number
  drainSeconds: number
}

export interface CeilingFigures {
  /** The ceiling writes nothing. */
  achieved: number
  p99WriteMs: number
  expected: number
  delivered: number
  p99Ms: number
  machineCpuMsPerChange: number
  serverCpuMsPerChange: number
  /** Counted in the machine's figure: PostgreSQL's background work and the idle service's polls. */
  othersCpuMsPerChange: number
  machineBusyDuringWrites: number
}

/**
 * Phase 4: the same writes to the ceiling, answering as the real server. Endpoints are disabled
 * and PostgreSQL checkpointed first; what PostgreSQL and the idle server still spend is reported.
 */
export async function ceilingPhase(
  terms: CeilingTerms,
  server: Running,
  db: Db,
  company: string,
  headers: Record<string, string>,
  receivers: Receiver[],
  writes: Writes,
  log: (s: string) => void,
): Promise<CeilingFigures> {
  const created = await fetch(`${server.url}/api/v1/companies/${company}/teams`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'Event', code: `ec${Date.now()}`, team_leader_ids: [] }),
  })
  const body = await created.text()
  const location = created.headers.get('location')
  if (created.status !== 202 || !location) throw new Error(`creating a team answered ${created.status} ${body}`)
  const answer = { status: created.status, location, body }
  const [event] = await db.query(
    `SELECT type, company_id, data FROM events WHERE company_id = $1 AND type = 'team.created' AND data -> 'object' ->> 'id' = $2`,
    [company, location.split('/').pop()],
  )
  if (!event) throw new Error("the team's event was not found")
  await db.query('CHECKPOINT')
  const ceiling = await startCeiling('bench/events-ceiling.ts', {
    ANSWER: JSON.stringify(answer),
    EVENT_TEMPLATE: JSON.stringify(event),
    RECEIVERS: receivers.map((r) => r.url).join(','),
  })
  const url = `${ceiling.url}/api/v1/companies/${company}/teams`
  try {
    // Before the measured writes, the slow and failing receivers' first calls and retries are over.
    await runLoad({ ...writes('cw', 2, 40), url })
    await sleep(6000)
    for (const r of receivers) r.reset()
    const healthy = receivers.filter((r) => r.kind === 'ok')
    const answered = async () =>
      ((await (await fetch(`${ceiling.url}/__changes`)).json()) as { changes: number }).changes
    const first = await answered()
    const before = {
      machine: machineCpuMs(),
      ceiling: cpuMs(ceiling.child.pid!),
      others: postgresCpuMs() + cpuMs(server.child.pid!),
    }
    const load = await runLoad({ ...writes('cc', terms.seconds, terms.rate), url })
    const atLoadEnd = machineCpuMs()
    const changes = Math.max(1, (await answered()) - first)
    const expected = changes * healthy.length
    const arrived = () => healthy.reduce((n, r) => n + r.arrivals.size, 0)
    const drainUntil = Date.now() + terms.drainSeconds * 1000
    while (Date.now() < drainUntil && arrived() < expected) await sleep(250)
    const after = {
      machine: machineCpuMs(),
      ceiling: cpuMs(ceiling.child.pid!),
      others: postgresCpuMs() + cpuMs(server.child.pid!),
    }
    // An id is `ceiling_<ms>_<n>`: a delivery's latency from its change's answer.
    const latencies = healthy
      .flatMap((r) =>
        [...r.arrivals].flatMap(([id, at]) => {
          const [, ms, n] = id.split('_')
          return Number(n) >= first ? [at - Number(ms)] : []
        }),
      )
      .sort((a, b) => a - b)
    const figures: CeilingFigures = {
      achieved: load.rps,
      p99WriteMs: load.p99,
      expected,
      delivered: latencies.length,
      p99Ms:
        latencies.length < expected
          ? Infinity
          : latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]!,
      machineCpuMsPerChange: (after.machine.busy - before.machine.busy) / changes,
      serverCpuMsPerChange: (after.ceiling - before.ceiling) / changes,
      othersCpuMsPerChange: (after.others - before.others) / changes,
      machineBusyDuringWrites:
        (atLoadEnd.busy - before.machine.busy) / Math.max(1, atLoadEnd.total - before.machine.total),
    }
    log(
      `  events: the ceiling (no database): ${load.rps.toFixed(0)} of ${terms.rate} changes/s answered (p99 ${load.p99} ms); ${figures.delivered} of ${expected} healthy deliveries, ` +
        `p99 ${figures.p99Ms} ms; per change ${figures.serverCpuMsPerChange.toFixed(2)} ms the ceiling's process, ${figures.machineCpuMsPerChange.toFixed(2)} ms the whole machine ` +
        `(${(100 * figures.machineBusyDuringWrites).toFixed(0)} % busy during the writes), of which ${figures.othersCpuMsPerChange.toFixed(2)} ms PostgreSQL's and the idle service's`,
    )
    return figures
  } finally {
    await ceiling.stop()
    for (const r of receivers) r.reset()
  }
}

// The ceiling is one implementation with no database, not a proven minimum: the service's write,
// event, fan-out and outcomes come on top.
export function againstCeiling(service: { machineCpuMsPerChange: number }, c: CeilingFigures): string {
  return (
    `a change cost the whole machine ${service.machineCpuMsPerChange.toFixed(2)} ms with the service and ${c.machineCpuMsPerChange.toFixed(2)} ms with the ceiling ` +
    `(${(service.machineCpuMsPerChange / c.machineCpuMsPerChange).toFixed(2)} ×); at the ceiling's cost ${CORES} cores take at most ${whole((CORES * 1000) / c.machineCpuMsPerChange)} changes/s` +
    (c.delivered < c.expected
      ? ` (${whole(c.expected - c.delivered)} of the ceiling's deliveries still owed at the drain's end: its cost is undercounted, the bound too high)`
      : '')
  )
}
