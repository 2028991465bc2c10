-- What the statistics keeper (src/db/table-statistics.ts) and PostgreSQL's own analyze cost on
-- the webhooks' busiest tables, and one join of the direct calls' outcomes
-- (docs/adr/0017-table-statistics-follow-growth.md).
--
-- No statistics for columns no query filters, joins or sorts by: the events' payload (jsonb) and
-- the batch rows' arrays. ANALYZE sorted 30,000 sampled payloads, and the arrays' elements,
-- for figures no plan reads: on a copy with 80,000 events and 6,000 batch rows of 25 items it
-- took 190-260 and 160 ms, and 86-115 and 7-12 ms without them. In one run of the bench's events
-- part the keeper analyzed each of them nine or ten times: 3.9 s of PostgreSQL's time, of 5.7 s
-- for all its ANALYZEs.
-- SET STATISTICS takes a lock that lets reads and writes go on.
ALTER TABLE events ALTER COLUMN data SET STATISTICS 0;
ALTER TABLE webhook_delivered_batches
  ALTER COLUMN attempt_ids SET STATISTICS 0, ALTER COLUMN delivery_ids SET STATISTICS 0, ALTER COLUMN event_ids SET STATISTICS 0,
  ALTER COLUMN started_ats SET STATISTICS 0, ALTER COLUMN status_codes SET STATISTICS 0, ALTER COLUMN durations_ms SET STATISTICS 0;

-- As migration 0036's, but for how a failed call's attempt finds its new delivery: by the id given
-- to it beforehand, among the failed calls only. It was joined back to every outcome of the batch
-- by event and endpoint, once per failure: a nested loop (the planner cannot know the arrays'
-- lengths): 26 failures times 240 outcomes in a batch of the bench, 1-4 ms of a statement of
-- 5-11 ms in a run with auto_explain.
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
  -- The fresh failures, each with the id its delivery row gets: their attempts find them by it
  -- among the failures alone (below), not among every outcome of the batch once per failure.
  fresh_failed AS MATERIALIZED (
    SELECT gen_random_uuid() AS delivery_id, i.* FROM fresh i WHERE i.outcome <> 'succeeded'
  ),
  failed AS (
    INSERT INTO webhook_deliveries (id, endpoint_id, event_id, company_id, status, attempts, seq, next_attempt_at, created_at)
    SELECT i.delivery_id, i.endpoint_id, i.event_id, i.company_id, CASE WHEN i.retry_at IS NULL THEN 'failed' ELSE 'pending' END,
      1, 1, i.retry_at, i.started_at
    FROM fresh_failed i JOIN events e ON e.id = i.event_id
    ORDER BY i.event_id, i.endpoint_id
    FOR KEY SHARE OF e
    ON CONFLICT (event_id, endpoint_id) DO NOTHING
    RETURNING id, event_id, endpoint_id
  ),
  failed_attempts AS (
    INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_id, attempt, started_at, outcome, status_code, duration_ms, error, next_retry_at)
    SELECT d.id, i.endpoint_id, i.event_id, 1, i.started_at, i.outcome, i.status_code, i.duration_ms, i.error, i.retry_at
    FROM failed d JOIN fresh_failed i ON i.delivery_id = d.id
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
