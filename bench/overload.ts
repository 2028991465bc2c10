import { runMix } from './mix.ts'
import type { MixCompany, MixResult } from './mix-load.ts'
import type { Running } from './processes.ts'

// The overload workload: the mix at doubling connection counts until throughput stops growing, then
// twice the saturating count: every answer a 2xx or a 503/429 with Retry-After, and a bounded p99.
export interface OverloadFigure {
  saturating: number
  ladder: Array<[number, number]>
  connections: number
  rounds: Array<
    Pick<
      MixResult,
      'rps' | 'p99' | 'acceptedP99' | 'non2xx' | 'errors' | 'refused' | 'refusedWithoutRetryAfter' | 'statusCodes'
    >
  >
}

export async function measureOverload(
  server: Running,
  db: { companies: MixCompany[] },
  log: (s: string) => void,
): Promise<OverloadFigure> {
  const ladder: Array<[number, number]> = []
  for (let connections = 2; connections <= 256; connections *= 2) {
    const r = await runMix(db, server.url, connections, 5, `ladder${connections}-`)
    ladder.push([connections, r.rps])
    log(`  overload ladder: ${connections} connections, ${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms`)
    if (
      ladder.length >= 3 &&
      ladder.at(-1)![1] < 1.1 * ladder.at(-2)![1] &&
      ladder.at(-2)![1] < 1.1 * ladder.at(-3)![1]
    )
      break
  }
  const best = Math.max(...ladder.map(([, rps]) => rps))
  const saturating = ladder.find(([, rps]) => rps >= 0.9 * best)![0]
  const connections = 2 * saturating
  const rounds: OverloadFigure['rounds'] = []
  for (let round = 0; round < 3; round++) {
    const r = await runMix(db, server.url, connections, 10, `overload${round}-`)
    rounds.push({
      rps: r.rps,
      p99: r.p99,
      acceptedP99: r.acceptedP99,
      non2xx: r.non2xx,
      errors: r.errors,
      refused: r.refused,
      refusedWithoutRetryAfter: r.refusedWithoutRetryAfter,
      statusCodes: r.statusCodes,
    })
    log(
      `  overload at ${connections} connections: ${r.rps.toFixed(0)} req/s accepted, p99 of accepted ${r.acceptedP99} ms, refused ${r.refused} (${r.refusedWithoutRetryAfter} without Retry-After), errors ${r.errors}, statuses ${JSON.stringify(r.statusCodes)}`,
    )
  }
  return { saturating, ladder, connections, rounds }
}
