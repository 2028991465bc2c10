import { sql, type Kysely } from 'kysely'
import type { AttemptOutcome, DB } from '../../db/tables.ts'

/** What a pass of the delivery loop asks for (delivery.ts). */
export interface DeliveryClaim {
  /** Due is next_attempt_at <= now; the attempts start at now. */
  now: Date
  /** The end of the claimed attempts' lease: their deliveries are due again then, unless an outcome says otherwise. */
  leaseUntil: Date
  /** Calls one process keeps open to one endpoint at most. */
  bound: number
  /** This process's calls under way, per endpoint: an endpoint gets `bound` minus these. */
  busy: ReadonlyArray<{ endpointId: string; calls: number }>
  /** Deliveries of a disabled endpoint given up per endpoint and pass. */
  dropBatch: number
}

/** An attempt a claim started: what its call needs. */
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

/** An attempt's outcome and what it decides, if its delivery is still at `seq`. */
export interface RecordedOutcome {
  attemptId: string
  deliveryId: string
  seq: number
  outcome: AttemptOutcome
  statusCode: number | null
  durationMs: number
  error: string | null
  /** When the delivery is tried again; null: delivered, or given up (then `disabledReason`). */
  retryAt: Date | null
  /** Set on the last attempt's failure: the endpoint is disabled with this reason. */
  disabledReason: string | null
  at: Date
}

/**
 * Claims, in one statement (so one short transaction), up to its free slots of due deliveries of
 * every endpoint with pending deliveries: each endpoint gets its share in every pass, so one
 * endpoint's backlog never waits ahead of another's deliveries, and an endpoint at its bound
 * costs one index probe. FOR UPDATE SKIP LOCKED keeps instances' claims apart. Each claimed
 * delivery has its attempt counted, its seq bumped and its lease set; an attempt of it still
 * 'pending' was lost with its instance; the new attempts are inserted. A disabled endpoint's
 * deliveries are given up (what was pending when it was disabled is not sent), but for the first
 * attempts of events up to the last one an endpoint stopped with its client or company is owed.
 */
export async function claimDue(db: Kysely<DB>, c: DeliveryClaim): Promise<ClaimedDelivery[]> {
  const ids = c.busy.map((b) => b.endpointId)
  const calls = c.busy.map((b) => b.calls)
  const { rows } = await sql<ClaimedDelivery>`
    WITH RECURSIVE pending_endpoints AS (
      -- A loose index scan: one probe per endpoint with pending deliveries, none per delivery.
      (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY endpoint_id LIMIT 1)
      UNION ALL
      SELECT (SELECT d.endpoint_id FROM webhook_deliveries d WHERE d.status = 'pending' AND d.endpoint_id > p.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
      FROM pending_endpoints p WHERE p.endpoint_id IS NOT NULL
    ),
    busy AS (SELECT * FROM unnest(${ids}::uuid[], ${calls}::int[]) AS b(endpoint_id, calls)),
    shares AS (
      SELECT w.id, w.enabled, w.last_event_seq,
        CASE WHEN w.enabled OR w.last_event_seq IS NOT NULL THEN greatest(0, ${c.bound}::int - coalesce(b.calls, 0)) ELSE ${c.dropBatch}::int END AS share
      FROM pending_endpoints p JOIN webhook_endpoints w ON w.id = p.endpoint_id LEFT JOIN busy b ON b.endpoint_id = w.id
    ),
    picked AS (
      SELECT d.id, d.sent FROM shares s CROSS JOIN LATERAL (
        -- A disabled endpoint stopped with its client or company still gets the first attempt of
        -- an event up to its last (migration 0040); the event is looked up for those alone.
        SELECT d.id, CASE WHEN s.enabled THEN true
          ELSE coalesce(d.attempts = 0 AND (SELECT e.seq FROM events e WHERE e.id = d.event_id) <= s.last_event_seq, false) END AS sent
        FROM webhook_deliveries d
        WHERE d.endpoint_id = s.id AND d.status = 'pending' AND d.next_attempt_at <= ${c.now}::timestamptz
        ORDER BY d.next_attempt_at LIMIT s.share
        FOR UPDATE SKIP LOCKED
      ) d
      WHERE s.share > 0
    ),
    dropped AS (
      UPDATE webhook_deliveries d SET status = 'failed', next_attempt_at = NULL FROM picked p WHERE d.id = p.id AND NOT p.sent RETURNING d.id, d.attempts
    ),
    claimed AS (
      UPDATE webhook_deliveries d SET attempts = d.attempts + 1, seq = d.seq + 1, next_attempt_at = ${c.leaseUntil}::timestamptz
      FROM picked p WHERE d.id = p.id AND p.sent
      RETURNING d.id, d.endpoint_id, d.event_id, d.attempts, d.seq
    ),
    lost AS (
      -- Only a delivery tried before can have an attempt left pending (claimed shows its attempts
      -- counted with the new one, dropped without), one given up as well. By the index, not
      -- joined: a join was planned as a scan of every attempt at each claim (migration 0033).
      UPDATE webhook_attempts a SET outcome = 'lost', error = NULL
      WHERE a.delivery_id = ANY (ARRAY(SELECT id FROM claimed WHERE attempts > 1 UNION ALL SELECT id FROM dropped WHERE attempts > 0))
        AND a.outcome = 'pending' RETURNING a.id
    ),
    started AS (
      INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_id, attempt, started_at)
      SELECT id, endpoint_id, event_id, attempts, ${c.now}::timestamptz FROM claimed
      RETURNING id, delivery_id
    )
    SELECT c.id, c.endpoint_id, c.attempts AS attempt, c.seq, s.id::text AS attempt_id, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at,
      e.id AS event_id, e.type, e.company_id AS event_company_id, e.data, e.created_at
    FROM claimed c JOIN started s ON s.delivery_id = c.id JOIN webhook_endpoints w ON w.id = c.endpoint_id JOIN events e ON e.id = c.event_id
  `.execute(db)
  return rows
}

/**
 * Records a batch of outcomes in one statement: record_webhook_outcomes() (migration 0033) updates
 * each delivery and attempt by its primary key. Every attempt gets its outcome (a late one too: it
 * replaces 'lost'); a delivery is settled only by the attempt of its current seq, so an outcome
 * that arrives after its lease ran out and another attempt started decides nothing.
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

/** What a pass's fan-out asks for (delivery.ts): the claim's own terms, with the slots its calls took counted in `busy`. */
export interface FanOutClaim extends Omit<DeliveryClaim, 'dropBatch'> {
  /** Events fanned out per pass at most. */
  batch: number
}

/** An endpoint an event is sent to at once by a fan-out, with no row of its own until the call's outcome. */
export interface DirectTarget {
  id: string
  url: string
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: string | null
}

/** An event a fan-out claimed: the endpoints it is sent to at once (none when every one was queued, or when its lease had run out). */
export interface FannedEvent {
  event_id: string
  type: string
  event_company_id: string | null
  data: Record<string, unknown>
  created_at: Date
  /** undefined: an endpoint whose row the fan-out did not return with it (a fault; delivery.ts reports it). */
  direct: Array<DirectTarget | undefined>
}

/** A direct call's outcome (attempt 1, at seq 1): a success is an item of a batch row, a failure its delivery and attempt (migration 0036). */
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
 * Fans out, in one statement, the due events of webhook_fanouts (migration 0034), SKIP LOCKED as
 * the claim. For an event fanned out for the first time: every endpoint that wants it (enabled,
 * or stopped with its client or company after it: migration 0040) and existed when it was
 * written, with a free slot here, is called at once, in event order, and the event's row is
 * leased for those calls; the others get a pending delivery due now, which claimDue() takes like any. An event whose lease ran out (its instance died during the calls,
 * or its outcomes were never written) has the delivery of every direct call still on its list
 * (still awaiting its outcome: migration 0036) written as a claim leaves it: pending at seq 1 and due now (failed when its endpoint is now
 * disabled), its attempt 1 'lost'. Rows with no direct call left go.
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
      INSERT INTO webhook_deliveries (id, endpoint_id, event_id, company_id, status, attempts, seq, next_attempt_at, created_at)
      SELECT gen_random_uuid(), w.id, e.id, e.company_id, CASE WHEN w.enabled THEN 'pending' ELSE 'failed' END, 1, 1,
        CASE WHEN w.enabled THEN ${c.now}::timestamptz END, f.fanned_at
      FROM fan f CROSS JOIN LATERAL unnest(f.direct) AS x(endpoint_id) JOIN webhook_endpoints w ON w.id = x.endpoint_id JOIN events e ON e.id = f.event_id
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
        row_number() OVER (PARTITION BY w.id ORDER BY e.seq) <= greatest(0, ${c.bound}::int - coalesce(b.calls, 0)) AS direct
      FROM fan f JOIN events e ON e.id = f.event_id
      JOIN webhook_endpoints w ON webhook_endpoint_sent(w, e) AND date_trunc('milliseconds', w.created_at) <= e.created_at
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
      UPDATE webhook_fanouts f SET lease_until = ${c.leaseUntil}::timestamptz, fanned_at = ${c.now}::timestamptz, direct = d.endpoints
      FROM direct d WHERE f.event_id = d.event_id
    ),
    done AS (
      DELETE FROM webhook_fanouts f USING fan WHERE f.event_id = fan.event_id AND NOT EXISTS (SELECT 1 FROM direct d WHERE d.event_id = fan.event_id)
    )
    SELECT e.id AS event_id, e.type, e.company_id AS event_company_id, e.data, e.created_at,
      -- JSON, not uuid[]: pg's array parser costs more than JSON.parse (teams.repository.ts).
      coalesce((SELECT to_json(d.endpoints) FROM direct d WHERE d.event_id = f.event_id), '[]'::json) AS direct_ids,
      -- Each endpoint called in the pass once, on one row (the subquery runs once): built per
      -- event, the same endpoints' JSON was about a fifth of this statement's time, and parsed
      -- again per event (bench/findings.md, "Session of 2026-11-29 (second)").
      CASE WHEN row_number() OVER () = 1 THEN coalesce((
        SELECT json_agg(json_build_object('id', w.id, 'url', w.url, 'secret', w.secret, 'previous_secret', w.previous_secret,
          'previous_secret_expires_at', w.previous_secret_expires_at))
        FROM webhook_endpoints w WHERE w.id IN (SELECT unnest(d.endpoints) FROM direct d)
      ), '[]') END AS endpoints
    FROM fan f JOIN events e ON e.id = f.event_id
  `.execute(db)
  // Looked for, not taken from rows[0]: SQL promises no order of the rows without ORDER BY.
  const endpoints = new Map((rows.find((row) => row.endpoints !== null)?.endpoints ?? []).map((w) => [w.id, w]))
  return rows.map((row) => ({
    event_id: row.event_id, type: row.type, event_company_id: row.event_company_id, data: row.data, created_at: row.created_at,
    // Both were read by the same statement, from one snapshot: a miss (undefined) is a fault of
    // this code, which the delivery loop reports for that event alone (delivery.ts).
    direct: row.direct_ids.map((id) => endpoints.get(id)),
  }))
}

/** A row of fanOutDue()'s statement: an event, its direct endpoints' ids, and on one row of them the pass's endpoints. */
interface FannedRow extends Omit<FannedEvent, 'direct'> {
  direct_ids: string[]
  endpoints: DirectTarget[] | null
}

/** Records a batch of direct calls' outcomes in one statement: record_direct_webhook_outcomes() (migrations 0034, 0036, 0037, 0039). */
export async function recordDirectOutcomes(db: Kysely<DB>, outcomes: readonly DirectOutcome[]): Promise<void> {
  if (outcomes.length === 0) return
  const column = <T>(pick: (o: DirectOutcome) => T) => outcomes.map(pick)
  await sql`
    SELECT record_direct_webhook_outcomes(
      ${column((o) => o.eventId)}::uuid[], ${column((o) => o.endpointId)}::uuid[], ${column((o) => o.companyId)}::uuid[],
      ${column((o) => o.outcome)}::text[], ${column((o) => o.statusCode)}::int[], ${column((o) => o.durationMs)}::int[],
      ${column((o) => o.error?.slice(0, 1000) ?? null)}::text[], ${column((o) => o.retryAt?.toISOString() ?? null)}::timestamptz[],
      ${column((o) => o.startedAt.toISOString())}::timestamptz[], ${column((o) => o.at.toISOString())}::timestamptz[]
    )
  `.execute(db)
}

/**
 * For the metrics: each endpoint's oldest event not delivered nor given up. Three sources: its
 * pending deliveries; the events not fanned out yet that it wants (their oldest per company and
 * type first, so a backlog costs its groups, not its rows times the endpoints); and the fanned-out
 * events whose direct call to it awaits its outcome (still on the event's list: migration 0036).
 */
export async function oldestPending(db: Kysely<DB>) {
  const { rows } = await sql<{ endpoint_id: string; oldest: Date }>`
    WITH unfanned AS (
      SELECT e.company_id, e.type, min(e.created_at) AS oldest, max(e.created_at) AS newest
      FROM webhook_fanouts f JOIN events e ON e.id = f.event_id
      WHERE f.direct IS NULL GROUP BY e.company_id, e.type
    )
    SELECT endpoint_id, min(oldest) AS oldest FROM (
      SELECT endpoint_id, min(created_at) AS oldest FROM webhook_deliveries WHERE status = 'pending' GROUP BY endpoint_id
      UNION ALL
      -- An endpoint made amid a group is owed its events from its own making on.
      SELECT w.id, min(greatest(u.oldest, date_trunc('milliseconds', w.created_at))) FROM unfanned u
      JOIN webhook_endpoints w ON webhook_endpoint_wants(w, u.type, u.company_id) AND date_trunc('milliseconds', w.created_at) <= u.newest
      GROUP BY w.id
      UNION ALL
      SELECT x.endpoint_id, min(f.fanned_at) FROM webhook_fanouts f CROSS JOIN LATERAL unnest(f.direct) AS x(endpoint_id)
      WHERE f.direct IS NOT NULL
      GROUP BY x.endpoint_id
    ) pending GROUP BY endpoint_id`.execute(db)
  return rows
}
