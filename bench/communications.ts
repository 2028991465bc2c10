import { measureLatency, type LatencyFigure } from './measure.ts'
import { sleep, type Running } from './processes.ts'
import type { Seeded } from './seed.ts'

export interface CommunicationFigures {
  fanOut: { recipients: number; dueToStoredMs: number; dueToClaimMs: number; claimToStoredMs: number }
  report: LatencyFigure & { messages: number; occurrences: number }
}

interface Db {
  exec: (t: string) => Promise<unknown>
  count: (t: string) => Promise<number>
  query: (t: string) => Promise<Record<string, unknown>[]>
}

const RECIPIENTS = 10_000
const OCCURRENCES = 10

// The communications workloads on PostgreSQL: a communication to a team of 10,000 contracts, due
// seconds later, the harness polling the message count; then a report over 100,000 delivered messages.
export async function measureCommunications(
  server: Running,
  seeded: Seeded,
  db: Db,
  log: (s: string) => void,
): Promise<CommunicationFigures | { skipped: string }> {
  const tables = await db.count(
    `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name IN ('communications', 'communication_messages', 'communication_occurrences')`,
  )
  if (tables < 3) return { skipped: 'the communications tables are not in the migrations yet' }
  const company = seeded.writer.id
  const team = '00000000-0000-4000-8000-00000000cafe'
  await db.exec(`
    WITH t AS (
      INSERT INTO teams (company_id, id, name, code) VALUES ('${company}', '${team}', 'Everyone', 'everyone') RETURNING company_id, id
    ), k AS (
      INSERT INTO contracts (company_id, id, first_name, last_name)
      SELECT '${company}', gen_random_uuid(), 'Recipient', 'R' || lpad(g::text, 5, '0') FROM generate_series(1, ${RECIPIENTS}) g
      RETURNING company_id, id
    )
    INSERT INTO team_members (company_id, team_id, contract_id) SELECT k.company_id, t.id, k.id FROM k, t`)
  await db.exec('ANALYZE contracts; ANALYZE team_members')

  const due = new Date(Date.now() + 3000)
  due.setMilliseconds(0)
  const res = await fetch(`${server.url}/api/v1/companies/${company}/communications`, {
    method: 'POST',
    headers: { authorization: `Bearer ${seeded.writer.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      subject: 'All hands',
      message: 'Friday 17:00, canteen.',
      status: 'scheduled',
      send_at: due.toISOString(),
      destination_team_ids: [team],
    }),
  })
  if (res.status !== 202) return { skipped: `creating a communication answered ${res.status} ${await res.text()}` }
  const location = res.headers.get('location') ?? ''
  const id = location.slice(location.lastIndexOf('/') + 1)
  let stored = 0
  let storedAt = 0
  const deadline = due.getTime() + 30_000
  while (Date.now() < deadline) {
    stored = await db.count(
      `SELECT count(*)::int AS n FROM communication_messages WHERE company_id = '${company}' AND communication_id = '${id}'`,
    )
    if (stored >= RECIPIENTS) {
      storedAt = Date.now()
      break
    }
    await sleep(5)
  }
  if (!storedAt)
    return { skipped: `only ${stored} of ${RECIPIENTS} messages were stored 30 s after the communication was due` }
  const claimed = (
    await db.query(
      `SELECT min(delivered_at) AS at FROM communication_messages WHERE company_id = '${company}' AND communication_id = '${id}'`,
    )
  )[0]!.at as Date
  const fanOut = {
    recipients: stored,
    dueToStoredMs: storedAt - due.getTime(),
    dueToClaimMs: claimed.getTime() - due.getTime(),
    claimToStoredMs: storedAt - claimed.getTime(),
  }
  log(
    `  communication to ${stored} recipients: stored ${fanOut.dueToStoredMs} ms after due (scheduler claim ${fanOut.dueToClaimMs} ms, insert+commit ${fanOut.claimToStoredMs} ms)`,
  )

  // 100,000 messages: 10 daily occurrences delivered to the 10,000 recipients, 60 % opened, half of those acknowledged.
  const reported = '00000000-0000-4000-8000-0000000f00d0'
  await db.exec(`
    INSERT INTO communications (company_id, id, subject, message, status, sender_id, send_at, recurrent, recurrent_until, action_required, destination_team_ids)
    VALUES ('${company}', '${reported}', 'Daily briefing', 'Read me', 'submitted', 'bench', '2026-01-01T08:00:00Z', 'daily', '2026-01-10', 'acknowledge', ARRAY['${team}']::uuid[]);
    INSERT INTO communication_occurrences (company_id, communication_id, send_at, delivered_at)
    SELECT '${company}', '${reported}', d, d FROM generate_series('2026-01-01T08:00:00Z'::timestamptz, '2026-01-10T08:00:00Z', '1 day') d;
    INSERT INTO communication_messages (company_id, id, communication_id, contract_id, send_at, delivered_at, opened_at, action_done_at)
    SELECT '${company}', gen_random_uuid(), '${reported}', m.contract_id, o.send_at, o.send_at,
           CASE WHEN r.opened THEN o.send_at + interval '1 hour' END,
           CASE WHEN r.opened AND r.acknowledged THEN o.send_at + interval '2 hours' END
    FROM communication_occurrences o, team_members m,
         -- correlated (the WHERE), so the dice are thrown again for each message
         LATERAL (SELECT random() < 0.6 AS opened, random() < 0.5 AS acknowledged WHERE m.contract_id = m.contract_id) r
    WHERE o.company_id = '${company}' AND o.communication_id = '${reported}' AND m.company_id = '${company}' AND m.team_id = '${team}';
    -- The occurrences' counters (migration 0007), as delivery, opening and acknowledging keep them.
    UPDATE communication_occurrences o
    SET recipients = c.recipients, opened = c.opened, actions_done = c.actions_done
    FROM (SELECT send_at, count(*) AS recipients, count(opened_at) AS opened, count(action_done_at) AS actions_done
          FROM communication_messages WHERE company_id = '${company}' AND communication_id = '${reported}' GROUP BY send_at) c
    WHERE o.company_id = '${company}' AND o.communication_id = '${reported}' AND o.send_at = c.send_at;
    ANALYZE communication_messages; ANALYZE communication_occurrences`)
  const messages = await db.count(
    `SELECT count(*)::int AS n FROM communication_messages WHERE company_id = '${company}' AND communication_id = '${reported}'`,
  )
  const report = await measureLatency(
    `${server.url}/api/v1/companies/${company}/communications/${reported}/report`,
    { authorization: `Bearer ${seeded.writer.token}` },
    100,
  )
  log(`  report over ${messages} messages: p50 ${report.p50.toFixed(2)} ms`)
  return { fanOut, report: { ...report, messages, occurrences: OCCURRENCES } }
}
