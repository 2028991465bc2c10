-- A webhook delivery is its own queue entry (docs/webhooks.md,
-- docs/adr/0024-events-through-an-outbox.md): no scheduler job per delivery any more. A pending delivery is due at
-- next_attempt_at; a claim moves next_attempt_at to the end of its lease (the timeout and a
-- minute) and bumps seq, so an attempt whose instance died is claimed again when the lease runs
-- out, and an outcome that arrives after that (its seq is not the delivery's) decides nothing.
-- One statement claims, starts and records many deliveries (webhook-endpoints.repository.ts):
-- a job per delivery cost about seventeen round trips.

ALTER TABLE webhook_deliveries RENAME COLUMN job_seq TO seq;
ALTER TABLE webhook_deliveries ALTER COLUMN next_attempt_at SET DEFAULT now();

-- Nothing pending is lost in the upgrade: each delivery's current job (key <id>/<seq>) gives its
-- due time, a lease's end included (its attempt, still 'pending', becomes 'lost' at the next claim).
UPDATE webhook_deliveries d SET next_attempt_at = j.run_at
  FROM jobs j
  WHERE j.kind = 'webhook.deliver' AND j.done_at IS NULL AND j.key = d.id || '/' || d.seq AND d.status = 'pending';
-- A pending delivery with no job of its own (none should exist) is due now rather than never.
UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status = 'pending' AND next_attempt_at IS NULL;
DELETE FROM jobs WHERE kind = 'webhook.deliver';

-- The claim: per endpoint, its due deliveries in due order (a probe per endpoint), and the walk
-- from one endpoint with pending deliveries to the next (a loose index scan).
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';

-- The outbox, as in 0019 without the job: the delivery is due at once (now(), the time of the
-- change's transaction; the column's default).
CREATE OR REPLACE FUNCTION write_event(p_type text, p_company uuid, p_data jsonb) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
  new_id uuid := gen_random_uuid();
BEGIN
  INSERT INTO events (id, type, company_id, data) VALUES (new_id, p_type, p_company, p_data);
  INSERT INTO webhook_deliveries (id, endpoint_id, event_id, company_id)
  SELECT gen_random_uuid(), e.id, new_id, p_company FROM webhook_endpoints e
  WHERE e.enabled AND (e.company_id IS NULL OR e.company_id = p_company)
    AND (cardinality(e.event_types) = 0 OR p_type = ANY (e.event_types) OR split_part(p_type, '.', 1) || '.*' = ANY (e.event_types));
  RETURN new_id;
END $$;
