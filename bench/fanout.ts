import type pg from 'pg'
import { MIX_WARMUP_SECONDS, runMix } from './mix.ts'
import type { MixCompany, MixResult } from './mix-load.ts'
import { sleep, type Running } from './processes.ts'

// The fan-out workload: a communication to 100,000 recipients due seconds later while the mix runs;
// the harness polls the message count. The API's p99 is the mix's over the whole run, on a server
// warmed up as the mix's rounds are.
export const FANOUT_RECIPIENTS = 100_000
const MIX_CONNECTIONS = 16

export interface FanoutFigure {
  recipients: number
  stored: number
  dueToStoredMs?: number
  dueToClaimMs?: number
  mix: Pick<MixResult, 'rps' | 'p50' | 'p99' | 'non2xx' | 'errors'>
}

export async function measureFanout(
  server: Running,
  db: { pool: pg.Pool; companies: MixCompany[] },
  log: (s: string) => void,
): Promise<FanoutFigure> {
  const company = db.companies.at(-1)!
  const team = '00000000-0000-4000-8000-0000000fa400'
  await db.pool.query(
    `
    WITH t AS (
      INSERT INTO teams (company_id, id, name, code) VALUES ($1, $2, 'Everyone', 'everyone-100k') RETURNING company_id, id
    ), k AS (
      INSERT INTO contracts (company_id, id, first_name, last_name)
      SELECT $1, gen_random_uuid(), 'Recipient', 'R' || lpad(g::text, 6, '0') FROM generate_series(1, ${FANOUT_RECIPIENTS}) g
      RETURNING company_id, id
    )
    INSERT INTO team_members (company_id, team_id, contract_id) SELECT k.company_id, t.id, k.id FROM k, t`,
    [company.id, team],
  )
  await db.pool.query('ANALYZE contracts; ANALYZE team_members')
  await runMix(db, server.url, MIX_CONNECTIONS, MIX_WARMUP_SECONDS, 'fanout-warm')

  const due = new Date(Date.now() + 4000)
  due.setMilliseconds(0)
  // The mix from before the communication is due until well after it is stored.
  const mix = runMix(db, server.url, MIX_CONNECTIONS, 15, 'fanout')
  await sleep(500)
  const res = await fetch(`${server.url}/api/v1/companies/${company.id}/communications`, {
    method: 'POST',
    headers: { authorization: `Bearer ${company.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      subject: 'All hands',
      message: 'Friday 17:00, canteen.',
      status: 'scheduled',
      send_at: due.toISOString(),
      destination_team_ids: [team],
    }),
  })
  if (res.status !== 202) throw new Error(`creating the communication answered ${res.status} ${await res.text()}`)
  const location = res.headers.get('location') ?? ''
  const id = location.slice(location.lastIndexOf('/') + 1)
  let stored = 0
  let storedAt = 0
  const count = async () =>
    Number(
      (
        await db.pool.query(
          'SELECT count(*)::int AS n FROM communication_messages WHERE company_id = $1 AND communication_id = $2',
          [company.id, id],
        )
      ).rows[0].n,
    )
  while (Date.now() < due.getTime() + 30_000) {
    stored = await count()
    if (stored >= FANOUT_RECIPIENTS) {
      storedAt = Date.now()
      break
    }
    await sleep(20)
  }
  const result = await mix
  const figure: FanoutFigure = {
    recipients: FANOUT_RECIPIENTS,
    stored,
    mix: { rps: result.rps, p50: result.p50, p99: result.p99, non2xx: result.non2xx, errors: result.errors },
  }
  if (storedAt) {
    const claimed = (
      await db.pool.query(
        'SELECT min(delivered_at) AS at FROM communication_messages WHERE company_id = $1 AND communication_id = $2',
        [company.id, id],
      )
    ).rows[0].at as Date
    figure.dueToStoredMs = storedAt - due.getTime()
    figure.dueToClaimMs = claimed.getTime() - due.getTime()
  }
  log(
    `  communication to ${FANOUT_RECIPIENTS} recipients: ${stored} stored${storedAt ? `, ${figure.dueToStoredMs} ms after due (claimed ${figure.dueToClaimMs} ms after)` : ' within 30 s of due'}; the mix meanwhile ${result.rps.toFixed(0)} req/s, p99 ${result.p99} ms, non-2xx ${result.non2xx}`,
  )
  return figure
}
