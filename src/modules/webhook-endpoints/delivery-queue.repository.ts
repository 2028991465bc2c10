import { sql, type Kysely } from 'kysely'
import type { AttemptOutcome, DB } from '../../db/tables.ts'

export interface DeliveryClaim {
  now: Date
  /** Claimed deliveries are due again then, unless an outcome says otherwise. */
  leaseUntil: Date
  bound: number
  /** Calls under way here per endpoint: an endpoint gets `bound` minus these. */
  busy: ReadonlyArray<{ endpointId: string; calls: number }>
  dropBatch: number
}

export interface ClaimedDelivery {
  id: string
  endpoint_id: string
  attempt: number
  seq: number
  attempt_id: string
  url: string
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: Date | null
  event_id: string
  type: string
  event_company_id: string | null
  data: Record<string, unknown>
  created_at: Date
}

/** An attempt's outcome; it decides only if its delivery is still at `seq`. */
export interface RecordedOutcome {
  attemptId: string
  deliveryId: string
  seq: number
  outcome: AttemptOutcome
  statusCode: number | null
  durationMs: number
  error: string | null
  /** null: delivered, or given up (then `disabledReason`). */
  retryAt: Date | null
  disabledReason: string | null
  at: Date
}

/**
 * Claims in one statement up to each endpoint's free slots of due deliveries, so one endpoint's
 * backlog never waits ahead of another's; SKIP LOCKED keeps instances apart. A disabled endpoint's
 * deliveries are given up, except first attempts still owed for events up to when it stopped.
 */
export async function claimDue(db: Kysely<DB>, c: DeliveryClaim): Promise<ClaimedDelivery[]> {
  const ids = c.busy.map((b) => b.endpointId)
  const calls = c.busy.map((b) => b.calls)
  const { rows } = await sql<ClaimedDelivery>`
    WITH RECURSIVE pending_endpoints AS (
      -- A loose index scan: one probe per endpoint with pending deliveries, none per delivery.
      (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY endpoint_id LIMIT 1)
      UNION ALL
      SELECT (SELECT d.endpoint_id FROM webhook_deliveries d WHERE d.status = 'pending'
        AND d.endpoint_id > p.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
      FROM pending_endpoints p WHERE p.endpoint_id IS NOT NULL
    ),
    busy AS (SELECT * FROM unnest(${ids}::uuid[], ${calls}::int[]) AS b(endpoint_id, calls)),
    shares AS (
      SELECT w.id, w.enabled, w.last_event_seq,
        CASE WHEN w.enabled OR w.last_event_seq IS NOT NULL THEN greatest(0, ${c.bound}::int - coalesce(b.calls, 0))
          ELSE ${c.dropBatch}::int END AS share
      FROM pending_endpoints p JOIN webhook_endpoints w ON w.id = p.endpoint_id LEFT JOIN busy b ON b.endpoint_id = w.id
    ),
    picked AS (
      SELECT d.id, d.sent FROM shares s CROSS JOIN LATERAL (
        -- A disabled endpoint stopped with its client or company still gets the first attempt of
        -- an event up to its last (migration 0040); the event is looked up for those alone.
        SELECT d.id, CASE WHEN s.enabled THEN true
          ELSE coalesce(d.attempts = 0 AND (SELECT e.seq FROM events e WHERE e.id = d.event_id) <= s.last_event_seq,
            false) END AS sent
        FROM webhook_deliveries d
        WHERE d.endpoint_id = s.id AND d.status = 'pending' AND d.next_attempt_at <= ${c.now}::timestamptz
        ORDER BY d.next_attempt_at LIMIT s.share
        FOR UPDATE SKIP LOCKED
      ) d
      WHERE s.share > 0
    ),
    dropped AS (
      UPDATE webhook_deliveries d SET status = 'failed', next_attempt_at = NULL
        FROM picked p WHERE d.id = p.id AND NOT p.sent RETURNING d.id, d.attempts
    ),
    claimed AS (
      UPDATE webhook_deliveries d SET attempts = d.attempts + 1, seq = d.seq + 1,
        next_attempt_at = ${c.leaseUntil}::timestamptz
      FROM picked p WHERE d.id = p.id AND p.sent
      RETURNING d.id, d.endpoint_id, d.event_id, d.attempts, d.seq
    ),
    lost AS (
      -- Only a delivery tried before can have an attempt left pending (claimed shows its attempts
      -- counted with the new one, dropped without), one given up as well. By the index, not
      -- joined: a join was planned as a scan of every attempt at each claim (migration 0033).
      UPDATE webhook_attempts a SET outcome = 'lost', error = NULL
      WHERE a.delivery_id = ANY (ARRAY(SELECT id FROM claimed WHERE attempts > 1 UNION ALL SELECT id FROM dropped
        WHERE attempts > 0))
        AND a.outcome = 'pending' RETURNING a.id
    ),
    started AS (
      INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_id, attempt, started_at)
      SELECT id, endpoint_id, event_id, attempts, ${c.now}::timestamptz FROM claimed
      RETURNING id, delivery_id
    )
    SELECT c.id, c.endpoint_id, c.attempts AS attempt, c.seq, s.id::text AS attempt_id, w.url, w.secret,
      w.previous_secret, w.previous_secret_expires_at,
      e.id AS event_id, e.type, e.company_id AS event_company_id, e.data, e.created_at
    FROM claimed c JOIN started s ON s.delivery_id = c.id JOIN webhook_endpoints w ON w.id = c.endpoint_id
      JOIN events e ON e.id = c.event_id
  `.execute(db)
  return rows
}

/**
 * Records a batch of outcomes in one statement (record_webhook_outcomes()). A delivery is settled
 * only by the attempt of its current seq, so a late outcome after a lease ran out decides nothing.
 */
export async function recordOutcomes(db: Kysely<DB>, outcomes: readonly RecordedOutcome[]): Promise<void> {
  if (outcomes.length === 0) return
  const column = <T>(pick: (o: RecordedOutcome) => T) => outcomes.map(pick)
  const iso = (d: Date | null) => (d ? d.toISOString() : null)
  await sql`
    SELECT record_webhook_outcomes(
      ${column((o) => o.attemptId)}::bigint[], ${column((o) => o.deliveryId)}::uuid[], ${column((o) => o.seq)}::int[],
      ${column((o) => o.outcome)}::text[], ${column((o) => o.statusCode)}::int[], ${column((o) => o.durationMs)}::int[],
      ${column((o) => o.error?.slice(0, 1000) ?? null)}::text[], ${column((o) => iso(o.retryAt))}::timestamptz[],
      ${column((o) => o.disabledReason)}::text[], ${column((o) => o.at.toISOString())}::timestamptz[]
    )
  `.execute(db)
}

export interface FanOutClaim extends Omit<DeliveryClaim, 'dropBatch'> {
  batch: number
}

/** Called at once by a fan-out, with no row of its own until the call's outcome. */
export interface DirectTarget {
  id: string
  url: string
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: string | null
}

export interface FannedEvent {
  event_id: string
  type: string
  event_company_id: string | null
  data: Record<string, unknown>
  created_at: Date
  /** undefined: a fault that delivery.ts reports. */
  direct: Array<DirectTarget | undefined>
}

/** A direct call's outcome: a success is an item of a batch row, a failure its delivery and attempt. */
export interface DirectOutcome {
  eventId: string
  endpointId: string
  companyId: string | null
  outcome: AttemptOutcome
  statusCode: number | null
  durationMs: number
  error: string | null
  retryAt: Date | null
  startedAt: Date
  at: Date
}

/**
 * Fans out due events in one statement, SKIP LOCKED: endpoints with a free slot are called at once
 * (the event leased), the others get a pending delivery. When the lease runs out, each unrecorded
 * direct call becomes a pending delivery with a 'lost' first attempt.
 */
export async function fanOutDue(db: Kysely<DB>, c: FanOutClaim): Promise<FannedEvent[]> {
  const ids = c.busy.map((b) => b.endpointId)
  const calls = c.busy.map((b) => b.calls)
  const { rows } = await sql<FannedRow>`
    WITH fan AS (
      SELECT f.event_id, f.direct, f.fanned_at FROM webhook_fanouts f
      WHERE f.lease_until <= ${c.now}::timestamptz ORDER BY f.lease_until, f.event_id LIMIT ${c.batch}::int
      FOR UPDATE SKIP LOCKED
    ),
    busy AS (SELECT * FROM unnest(${ids}::uuid[], ${calls}::int[]) AS b(endpoint_id, calls)),
    expired AS (
      INSERT INTO webhook_deliveries (id, endpoint_id, event_id, company_id, status, attempts, seq, next_attempt_at,
        created_at)
      SELECT gen_random_uuid(), w.id, e.id, e.company_id, CASE WHEN w.enabled THEN 'pending' ELSE 'failed' END, 1, 1,
        CASE WHEN w.enabled THEN ${c.now}::timestamptz END, f.fanned_at
      FROM fan f CROSS JOIN LATERAL unnest(f.direct) AS x(endpoint_id) JOIN webhook_endpoints w ON w.id = x.endpoint_id
        JOIN events e ON e.id = f.event_id
      WHERE f.direct IS NOT NULL
      ON CONFLICT (event_id, endpoint_id) DO NOTHING
      RETURNING id, endpoint_id, event_id, created_at
    ),
    lost AS (
      INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_id, attempt, started_at, outcome, error)
      SELECT id, endpoint_id, event_id, 1, created_at, 'lost', NULL FROM expired
    ),
    pairs AS (
      SELECT e.id AS event_id, e.company_id, w.id AS endpoint_id,
        row_number() OVER (PARTITION BY w.id ORDER BY e.seq) <= greatest(0, ${c.bound}::int - coalesce(b.calls, 0))
          AS direct
      FROM fan f JOIN events e ON e.id = f.event_id
      JOIN webhook_endpoints w ON webhook_endpoint_sent(w, e)
        AND date_trunc('milliseconds', w.created_at) <= e.created_at
      LEFT JOIN busy b ON b.endpoint_id = w.id
      WHERE f.direct IS NULL
    ),
    queued AS (
      INSERT INTO webhook_deliveries (id, endpoint_id, event_id, company_id)
      SELECT gen_random_uuid(), endpoint_id, event_id, company_id FROM pairs WHERE NOT direct
      ON CONFLICT (event_id, endpoint_id) DO NOTHING
    ),
    direct AS (SELECT event_id, array_agg(endpoint_id) AS endpoints FROM pairs WHERE direct GROUP BY event_id),
    leased AS (
      UPDATE webhook_fanouts f SET lease_until = ${c.leaseUntil}::timestamptz, fanned_at = ${c.now}::timestamptz,
        direct = d.endpoints
      FROM direct d WHERE f.event_id = d.event_id
    ),
    done AS (
      DELETE FROM webhook_fanouts f USING fan WHERE f.event_id = fan.event_id AND NOT EXISTS (SELECT 1 FROM direct d
        WHERE d.event_id = fan.event_id)
    )
    SELECT e.id AS event_id, e.type, e.company_id AS event_company_id, e.data, e.created_at,
      -- JSON, not uuid[]: pg's array parser costs more than JSON.parse (teams.repository.ts).
      coalesce((SELECT to_json(d.endpoints) FROM direct d WHERE d.event_id = f.event_id), '[]'::json) AS direct_ids,
      -- Each endpoint called in the pass once, on one row (the subquery runs once): built per
      -- event, the same endpoints' JSON would be built and parsed again for every event.
      CASE WHEN row_number() OVER () = 1 THEN coalesce((
        SELECT json_agg(json_build_object('id', w.id, 'url', w.url, 'secret', w.secret,
          'previous_secret', w.previous_secret,
          'previous_secret_expires_at', w.previous_secret_expires_at))
        FROM webhook_endpoints w WHERE w.id IN (SELECT unnest(d.endpoints) FROM direct d)
      ), '[]') END AS endpoints
    FROM fan f JOIN events e ON e.id = f.event_id
  `.execute(db)
  // Looked for, not rows[0]: without ORDER BY SQL promises no row order.
  const endpoints = new Map((rows.find((row) => row.endpoints !== null)?.endpoints ?? []).map((w) => [w.id, w]))
  return rows.map((row) => ({
    event_id: row.event_id,
    type: row.type,
    event_company_id: row.event_company_id,
    data: row.data,
    created_at: row.created_at,
    // Read from one snapshot, so a miss is a fault of this code, reported for that event alone.
    direct: row.direct_ids.map((id) => endpoints.get(id)),
  }))
}

interface FannedRow extends Omit<FannedEvent, 'direct'> {
  direct_ids: string[]
  endpoints: DirectTarget[] | null
}

/** Records a batch of direct calls' outcomes in one statement. */
export async function recordDirectOutcomes(db: Kysely<DB>, outcomes: readonly DirectOutcome[]): Promise<void> {
  if (outcomes.length === 0) return
  const column = <T>(pick: (o: DirectOutcome) => T) => outcomes.map(pick)
  await sql`
    SELECT record_direct_webhook_outcomes(
      ${column((o) => o.eventId)}::uuid[], ${column((o) => o.endpointId)}::uuid[],
        ${column((o) => o.companyId)}::uuid[],
      ${column((o) => o.outcome)}::text[], ${column((o) => o.statusCode)}::int[], ${column((o) => o.durationMs)}::int[],
      ${column((o) => o.error?.slice(0, 1000) ?? null)}::text[],
        ${column((o) => o.retryAt?.toISOString() ?? null)}::timestamptz[],
      ${column((o) => o.startedAt.toISOString())}::timestamptz[], ${column((o) => o.at.toISOString())}::timestamptz[]
    )
  `.execute(db)
}

/**
 * For the metrics: each endpoint's oldest event not delivered nor given up, from pending deliveries,
 * events not fanned out yet, and direct calls awaiting their outcome.
 */
export async function oldestPending(db: Kysely<DB>) {
  const { rows } = await sql<{ endpoint_id: string; oldest: Date }>`
    WITH unfanned AS (
      SELECT e.company_id, e.type, min(e.created_at) AS oldest, max(e.created_at) AS newest
      FROM webhook_fanouts f JOIN events e ON e.id = f.event_id
      WHERE f.direct IS NULL GROUP BY e.company_id, e.type
    )
    SELECT endpoint_id, min(oldest) AS oldest FROM (
      SELECT endpoint_id, min(created_at) AS oldest FROM webhook_deliveries WHERE status = 'pending'
        GROUP BY endpoint_id
      UNION ALL
      -- An endpoint made amid a group is owed its events from its own making on.
      SELECT w.id, min(greatest(u.oldest, date_trunc('milliseconds', w.created_at))) FROM unfanned u
      JOIN webhook_endpoints w ON webhook_endpoint_wants(w, u.type, u.company_id)
        AND date_trunc('milliseconds', w.created_at) <= u.newest
      GROUP BY w.id
      UNION ALL
      SELECT x.endpoint_id, min(f.fanned_at) FROM webhook_fanouts f CROSS JOIN LATERAL unnest(f.direct)
        AS x(endpoint_id)
      WHERE f.direct IS NOT NULL
      GROUP BY x.endpoint_id
    ) pending GROUP BY endpoint_id`.execute(db)
  return rows
}
