-- Events are fanned out to their webhook endpoints when the delivery loop claims them, not when
-- they are written (docs/adr/0024-events-through-an-outbox.md). A change's transaction writes its event and, when an enabled endpoint wants
-- it, one webhook_fanouts row: no longer a delivery row per endpoint (each cost the change ~18 µs
-- of PostgreSQL's CPU, and was then updated at its claim and at its outcome).
--
-- A claim leases an event's fan-out row: the endpoints with a free slot are called at once and
-- have no row yet (the row's `direct` lists them); the others get a pending delivery, due now,
-- as before. A direct call's delivery and attempt are written with its outcome, in their final
-- state; once every direct call of the event has its delivery, the fan-out row goes. A direct
-- call is attempt 1 at seq 1 of a delivery not written yet: if its instance dies, the lease runs
-- out and the next claim writes that delivery as a claim would have left it (pending at seq 1,
-- due now, its attempt 1 'lost'), which the queue then retries with the same webhook-id. A late
-- outcome of that call finds the delivery written and is recorded as any outcome of seq 1 is.

CREATE TABLE webhook_fanouts (
  event_id    uuid PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
  -- The event's company (null: a platform event), as every tenant table has it.
  company_id  uuid,
  -- Due to be fanned out (now(): the time of the change's transaction), then the end of the lease
  -- of its direct calls (the timeout and a minute).
  lease_until timestamptz NOT NULL DEFAULT now(),
  -- When it was fanned out, and the endpoints called at once then (null: not fanned out yet).
  fanned_at   timestamptz,
  direct      uuid[]
);
-- Due order, the event's id breaking ties: the events of one transaction share their time, and a
-- claim takes them in this order without sorting the backlog.
CREATE INDEX webhook_fanouts_due_idx ON webhook_fanouts (lease_until, event_id);

-- One delivery per event and endpoint: a direct call's outcome and a claim that finds its lease
-- run out may both write it; the first wins. It replaces the index on event_id alone. Built in
-- the migration's transaction (CONCURRENTLY cannot be): it holds the deliveries' writes for the
-- build, a second or so per million rows, at the upgrade only.
CREATE UNIQUE INDEX webhook_deliveries_event_endpoint_key ON webhook_deliveries (event_id, endpoint_id);
DROP INDEX webhook_deliveries_event_idx;

-- Whether an endpoint wants an event: the fan-out's join, the outbox's test, the metrics' count.
-- A SQL function of one expression: the planner inlines it.
CREATE FUNCTION webhook_endpoint_wants(w webhook_endpoints, p_type text, p_company uuid) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT w.enabled AND (w.company_id IS NULL OR w.company_id = p_company)
    AND (cardinality(w.event_types) = 0 OR p_type = ANY (w.event_types) OR split_part(p_type, '.', 1) || '.*' = ANY (w.event_types))
    AND (w.resources IS NULL OR split_part(p_type, '.', 1) = ANY (w.resources))
$$;

-- The outbox: the event, and its fan-out row when an enabled endpoint wants it.
CREATE OR REPLACE FUNCTION write_event(p_type text, p_company uuid, p_data jsonb) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
  new_id uuid := gen_random_uuid();
BEGIN
  INSERT INTO events (id, type, company_id, data) VALUES (new_id, p_type, p_company, p_data);
  IF EXISTS (SELECT 1 FROM webhook_endpoints e WHERE webhook_endpoint_wants(e, p_type, p_company)) THEN
    INSERT INTO webhook_fanouts (event_id, company_id) VALUES (new_id, p_company);
  END IF;
  RETURN new_id;
END $$;

-- Nothing pending is lost in the upgrade: the deliveries written by the old outbox stay in the
-- queue, and are claimed as before.

-- The outcomes of direct calls (attempt 1, seq 1), each with its delivery and attempt written in
-- their final state, in two set-wise inserts for the batch: a statement per outcome in a loop
-- cost more than the rows themselves. An endpoint deleted during
-- the call has nothing to record (the endpoints' rows are key-share locked, so a deletion cannot
-- slip in between and fail the batch on the foreign key). A delivery a claim wrote meanwhile (the
-- lease ran out: its attempt 1 is 'lost') is settled as record_webhook_outcomes() settles an
-- outcome of seq 1: only while it is still pending at seq 1; its attempt gets the outcome either
-- way. Then the fan-out rows of the batch's events whose every direct call has its delivery go.
-- The fan-out rows are locked first, in the events' order: a claim (fanOutDue) locks a row and
-- then writes its deliveries, so taking them in the other order could deadlock with it; locked
-- here, the claim skips them until this commits. An event pruned during the call is skipped as a
-- deleted endpoint is (the key-share locks hold both until the commit).
CREATE FUNCTION record_direct_webhook_outcomes(
  p_event uuid[], p_endpoint uuid[], p_company uuid[], p_outcome text[], p_status_code int[], p_duration_ms int[],
  p_error text[], p_retry_at timestamptz[], p_started_at timestamptz[], p_at timestamptz[]
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  o record;
  late bigint[];
  settled_delivery uuid;
BEGIN
  PERFORM 1 FROM webhook_fanouts WHERE event_id = ANY (p_event) ORDER BY event_id FOR UPDATE;
  WITH input AS (
    SELECT * FROM unnest(p_event, p_endpoint, p_company, p_outcome, p_status_code, p_duration_ms, p_error, p_retry_at, p_started_at, p_at)
      WITH ORDINALITY AS t(event_id, endpoint_id, company_id, outcome, status_code, duration_ms, error, retry_at, started_at, at, n)
  ),
  written AS (
    INSERT INTO webhook_deliveries (id, endpoint_id, event_id, company_id, status, attempts, seq, next_attempt_at, delivered_at, created_at)
    SELECT gen_random_uuid(), i.endpoint_id, i.event_id, i.company_id,
      CASE WHEN i.outcome = 'succeeded' THEN 'delivered' WHEN i.retry_at IS NULL THEN 'failed' ELSE 'pending' END,
      1, 1, i.retry_at, CASE WHEN i.outcome = 'succeeded' THEN i.at END, i.started_at
    FROM input i JOIN webhook_endpoints w ON w.id = i.endpoint_id JOIN events e ON e.id = i.event_id
    ORDER BY i.event_id, i.endpoint_id
    FOR KEY SHARE OF w, e
    ON CONFLICT (event_id, endpoint_id) DO NOTHING
    RETURNING id, event_id, endpoint_id
  ),
  attempts AS (
    INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_id, attempt, started_at, outcome, status_code, duration_ms, error, next_retry_at)
    SELECT d.id, i.endpoint_id, i.event_id, 1, i.started_at, i.outcome, i.status_code, i.duration_ms, i.error, i.retry_at
    FROM written d JOIN input i ON i.event_id = d.event_id AND i.endpoint_id = d.endpoint_id
  )
  SELECT array_agg(i.n) INTO late FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM written d WHERE d.event_id = i.event_id AND d.endpoint_id = i.endpoint_id);

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

  DELETE FROM webhook_fanouts f
  WHERE f.event_id = ANY (p_event) AND f.direct IS NOT NULL
    AND NOT EXISTS (
      SELECT 1 FROM unnest(f.direct) AS x(endpoint_id)
      WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = f.event_id AND d.endpoint_id = x.endpoint_id)
        AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.id = x.endpoint_id)
    );
END $$;
