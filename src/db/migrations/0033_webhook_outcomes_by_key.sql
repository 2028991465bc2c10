-- Webhook outcomes are recorded row by row, each by its primary key.
--
-- The batch statement of migration 0030's design joined the batch to webhook_deliveries and
-- webhook_attempts, and the planner, from statistics that a busy queue outruns, chose to read
-- every pending delivery (the partial index on status = 'pending') and every attempt (a sequential
-- scan) for each batch: the cost of recording one outcome grew with the backlog and with the
-- attempts table: 94 µs of PostgreSQL's CPU per outcome with 20,000 pending. Here each outcome is
-- two updates by primary key, whose plans cannot change with the tables' sizes: what a batch
-- costs grows with the batch only. The rows are taken in the deliveries' order, so two batches
-- that share rows (an outcome after its lease ran out) lock them in the same order.
--
-- A delivery is settled only by the attempt of its current seq, still pending: an outcome that
-- arrives after its lease ran out and another attempt started decides nothing. Every attempt gets
-- its outcome (a late one too: it replaces 'lost'); next_retry_at only on the attempt that decided
-- a retry. The last attempt's failure disables its endpoint with the given reason.
CREATE FUNCTION record_webhook_outcomes(
  p_attempt bigint[], p_delivery uuid[], p_seq int[], p_outcome text[], p_status_code int[], p_duration_ms int[],
  p_error text[], p_retry_at timestamptz[], p_disabled_reason text[], p_at timestamptz[]
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  o record;
  settled_endpoint uuid;
BEGIN
  FOR o IN
    SELECT * FROM unnest(p_attempt, p_delivery, p_seq, p_outcome, p_status_code, p_duration_ms, p_error, p_retry_at, p_disabled_reason, p_at)
      AS t(attempt_id, delivery_id, seq, outcome, status_code, duration_ms, error, retry_at, disabled_reason, at)
    ORDER BY delivery_id, attempt_id
  LOOP
    settled_endpoint := NULL;
    UPDATE webhook_deliveries SET
      status = CASE WHEN o.outcome = 'succeeded' THEN 'delivered' WHEN o.retry_at IS NULL THEN 'failed' ELSE 'pending' END,
      next_attempt_at = o.retry_at,
      delivered_at = CASE WHEN o.outcome = 'succeeded' THEN o.at END
    WHERE id = o.delivery_id AND seq = o.seq AND status = 'pending'
    RETURNING endpoint_id INTO settled_endpoint;
    UPDATE webhook_attempts SET outcome = o.outcome, status_code = o.status_code, duration_ms = o.duration_ms, error = o.error,
      next_retry_at = CASE WHEN settled_endpoint IS NOT NULL THEN o.retry_at END
    WHERE id = o.attempt_id;
    IF settled_endpoint IS NOT NULL AND o.disabled_reason IS NOT NULL THEN
      UPDATE webhook_endpoints SET enabled = false, disabled_reason = o.disabled_reason, updated_at = now() WHERE id = settled_endpoint;
    END IF;
  END LOOP;
END $$;
