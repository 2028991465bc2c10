-- A direct call that succeeds is recorded as an item of a batch row, one row per endpoint and
-- outcome batch, not as a delivery row and an attempt row of its own
-- (docs/adr/0024-events-through-an-outbox.md). The two rows, their five index entries and the key-share locks on the endpoint's and
-- the event's rows were most of what a change with endpoints cost PostgreSQL: ~70 µs of its CPU
-- per delivery, eight to ten deliveries per change. Nothing reads such a delivery again but the
-- endpoint's list of attempts, which reads these rows beside webhook_attempts.
--
-- Which direct calls still await their outcome is now the fan-out row's `direct` list itself: an
-- outcome takes its endpoint out of it (the row goes once the list is empty), where it was the
-- calls without a delivery row. A claim that finds the lease run out writes the deliveries of the
-- endpoints still listed, as before. Failed direct calls keep their delivery and attempt rows:
-- they are the queue's retries.

CREATE TABLE webhook_delivered_batches (
  -- The smallest of its items' attempt ids: the list of attempts sorts by it, then by position.
  id           bigint PRIMARY KEY,
  endpoint_id  uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  -- The endpoint's company (null: a platform endpoint), as every tenant table has it.
  company_id   uuid,
  -- Retention: a row recorded before the events' cutoff holds only events past it.
  recorded_at  timestamptz NOT NULL DEFAULT now(),
  -- One item per delivery, at the same position in each array. The attempt ids come from the
  -- attempts' sequence, so an item's id is never another attempt's.
  attempt_ids  bigint[] NOT NULL,
  delivery_ids uuid[] NOT NULL,
  event_ids    uuid[] NOT NULL,
  started_ats  timestamptz[] NOT NULL,
  status_codes int[] NOT NULL,
  durations_ms int[] NOT NULL
);
CREATE INDEX webhook_delivered_batches_endpoint_idx ON webhook_delivered_batches (endpoint_id, id);
CREATE INDEX webhook_delivered_batches_recorded_idx ON webhook_delivered_batches (recorded_at);

-- As migration 0034's, with the batch rows. A call is fresh while its endpoint is on its event's
-- `direct` list (the fan-out row is locked here first, in the events' order, as before; a claim
-- skips it meanwhile). A fresh success becomes an item of its endpoint's batch row; a fresh
-- failure gets its delivery (pending, for the retry, or failed) and its attempt, as before. An
-- outcome that is not fresh arrived after its lease ran out and a claim wrote its delivery: it is
-- recorded on that delivery as before (or not at all: its endpoint or its event was deleted
-- meanwhile). The endpoints' rows are key-share locked first, so a deletion cannot slip in
-- between and fail the batch on the foreign key. Then the calls of the batch leave their events'
-- lists, with the deleted endpoints'; a list left empty takes its fan-out row with it. (A failure
-- whose event the retention deletes meanwhile, 30 days after it was written, may make this
-- statement a deadlock's victim: its outcomes are then dropped and their leases send them again.)
CREATE OR REPLACE FUNCTION record_direct_webhook_outcomes(
  p_event uuid[], p_endpoint uuid[], p_company uuid[], p_outcome text[], p_status_code int[], p_duration_ms int[],
  p_error text[], p_retry_at timestamptz[], p_started_at timestamptz[], p_at timestamptz[]
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  o record;
  late bigint[];
  settled_delivery uuid;
BEGIN
  PERFORM 1 FROM webhook_fanouts WHERE event_id = ANY (p_event) ORDER BY event_id FOR UPDATE;
  PERFORM 1 FROM webhook_endpoints WHERE id = ANY (p_endpoint) ORDER BY id FOR KEY SHARE;
  WITH input AS (
    SELECT * FROM unnest(p_event, p_endpoint, p_company, p_outcome, p_status_code, p_duration_ms, p_error, p_retry_at, p_started_at, p_at)
      WITH ORDINALITY AS t(event_id, endpoint_id, company_id, outcome, status_code, duration_ms, error, retry_at, started_at, at, n)
  ),
  fresh AS MATERIALIZED (
    SELECT i.* FROM input i
    JOIN webhook_fanouts f ON f.event_id = i.event_id AND i.endpoint_id = ANY (f.direct)
    JOIN webhook_endpoints w ON w.id = i.endpoint_id
  ),
  -- Attempt ids taken in the batch's order (from rows already sorted), so that they grow with
  -- an item's position, as the list reads them.
  succeeded AS MATERIALIZED (
    SELECT nextval('webhook_attempts_id_seq') AS attempt_id, s.* FROM (SELECT * FROM fresh WHERE outcome = 'succeeded' ORDER BY n) s
  ),
  delivered AS (
    INSERT INTO webhook_delivered_batches (id, endpoint_id, company_id, attempt_ids, delivery_ids, event_ids, started_ats, status_codes, durations_ms)
    SELECT min(s.attempt_id), s.endpoint_id, w.company_id, array_agg(s.attempt_id ORDER BY s.n), array_agg(gen_random_uuid() ORDER BY s.n),
      array_agg(s.event_id ORDER BY s.n), array_agg(s.started_at ORDER BY s.n), array_agg(s.status_code ORDER BY s.n), array_agg(s.duration_ms ORDER BY s.n)
    FROM succeeded s JOIN webhook_endpoints w ON w.id = s.endpoint_id GROUP BY s.endpoint_id, w.company_id
  ),
  failed AS (
    INSERT INTO webhook_deliveries (id, endpoint_id, event_id, company_id, status, attempts, seq, next_attempt_at, created_at)
    SELECT gen_random_uuid(), i.endpoint_id, i.event_id, i.company_id, CASE WHEN i.retry_at IS NULL THEN 'failed' ELSE 'pending' END,
      1, 1, i.retry_at, i.started_at
    FROM fresh i JOIN events e ON e.id = i.event_id
    WHERE i.outcome <> 'succeeded'
    ORDER BY i.event_id, i.endpoint_id
    FOR KEY SHARE OF e
    ON CONFLICT (event_id, endpoint_id) DO NOTHING
    RETURNING id, event_id, endpoint_id
  ),
  failed_attempts AS (
    INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_id, attempt, started_at, outcome, status_code, duration_ms, error, next_retry_at)
    SELECT d.id, i.endpoint_id, i.event_id, 1, i.started_at, i.outcome, i.status_code, i.duration_ms, i.error, i.retry_at
    FROM failed d JOIN fresh i ON i.event_id = d.event_id AND i.endpoint_id = d.endpoint_id
  )
  -- Late: neither a fresh success nor a fresh failure written (one whose delivery a claim wrote meanwhile, as in 0034).
  SELECT array_agg(i.n) INTO late FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.n = i.n AND f.outcome = 'succeeded')
    AND NOT EXISTS (SELECT 1 FROM failed d WHERE d.event_id = i.event_id AND d.endpoint_id = i.endpoint_id);

  FOR o IN
    SELECT * FROM unnest(p_event, p_endpoint, p_outcome, p_status_code, p_duration_ms, p_error, p_retry_at, p_at)
      WITH ORDINALITY AS t(event_id, endpoint_id, outcome, status_code, duration_ms, error, retry_at, at, n)
    WHERE n = ANY (coalesce(late, '{}'))
    ORDER BY event_id, endpoint_id
  LOOP
    settled_delivery := NULL;
    UPDATE webhook_deliveries SET
      status = CASE WHEN o.outcome = 'succeeded' THEN 'delivered' WHEN o.retry_at IS NULL THEN 'failed' ELSE 'pending' END,
      next_attempt_at = o.retry_at,
      delivered_at = CASE WHEN o.outcome = 'succeeded' THEN o.at END
    WHERE event_id = o.event_id AND endpoint_id = o.endpoint_id AND seq = 1 AND status = 'pending'
    RETURNING id INTO settled_delivery;
    UPDATE webhook_attempts a SET outcome = o.outcome, status_code = o.status_code, duration_ms = o.duration_ms, error = o.error,
      next_retry_at = CASE WHEN settled_delivery IS NOT NULL THEN o.retry_at END
    FROM webhook_deliveries d
    WHERE d.event_id = o.event_id AND d.endpoint_id = o.endpoint_id AND a.delivery_id = d.id AND a.attempt = 1;
  END LOOP;

  WITH left_over AS (
    SELECT f.event_id, ARRAY(
      SELECT x.endpoint_id FROM unnest(f.direct) AS x(endpoint_id)
      WHERE NOT EXISTS (SELECT 1 FROM unnest(p_event, p_endpoint) AS i(event_id, endpoint_id) WHERE i.event_id = f.event_id AND i.endpoint_id = x.endpoint_id)
        AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.id = x.endpoint_id)
    ) AS direct
    FROM webhook_fanouts f WHERE f.event_id = ANY (p_event) AND f.direct IS NOT NULL
  ),
  emptied AS (
    DELETE FROM webhook_fanouts f USING left_over l WHERE f.event_id = l.event_id AND cardinality(l.direct) = 0
  )
  UPDATE webhook_fanouts f SET direct = l.direct FROM left_over l
  WHERE f.event_id = l.event_id AND cardinality(l.direct) > 0 AND cardinality(l.direct) < cardinality(f.direct);
END $$;

-- The fan-out rows written before this migration listed every direct call, those whose outcome
-- was already written as a delivery included: they leave the lists now, so that every list holds
-- only calls still awaiting their outcome (a list left empty takes its row with it).
WITH left_over AS (
  SELECT f.event_id, ARRAY(
    SELECT x.endpoint_id FROM unnest(f.direct) AS x(endpoint_id)
    WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = f.event_id AND d.endpoint_id = x.endpoint_id)
  ) AS direct
  FROM webhook_fanouts f WHERE f.direct IS NOT NULL
),
emptied AS (
  DELETE FROM webhook_fanouts f USING left_over l WHERE f.event_id = l.event_id AND cardinality(l.direct) = 0
)
UPDATE webhook_fanouts f SET direct = l.direct FROM left_over l
WHERE f.event_id = l.event_id AND cardinality(l.direct) > 0 AND cardinality(l.direct) < cardinality(f.direct);
