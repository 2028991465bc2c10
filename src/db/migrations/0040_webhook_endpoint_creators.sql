-- Who answers for a webhook endpoint, and its stop with that client or its company
-- (docs/webhooks.md, "Who made it"; docs/adr/0001-webhook-endpoint-access.md).
--
-- Assumes about existing rows: nothing recorded who made them, so created_by stays NULL on each
-- ("made before creators were recorded"). Such an endpoint keeps its state: enabled ones stay
-- enabled, and no revocation stops it (no client answers for it) until a client re-enables it
-- after any disabling, which makes that client its created_by. A company's disabling stops it as
-- any other of the company's endpoints.
--
-- created_by: the client id (oauth_clients.client_id) whose token made it or last re-enabled it.
-- No foreign key: a client row is only ever marked revoked (as hosted pages' client_id, 0011).
ALTER TABLE webhook_endpoints ADD COLUMN created_by text;
CREATE INDEX webhook_endpoints_created_by_idx ON webhook_endpoints (created_by);

-- The last event (events.seq) an endpoint stopped with its client or its company is still sent:
-- the one its stop was written with (company.disabled), and those before it that it had not been
-- sent a first time. NULL: a disabled endpoint is sent nothing (the other disablings).
ALTER TABLE webhook_endpoints ADD COLUMN last_event_seq bigint;

-- Whether a disabled endpoint is still owed the event: the fan-out's and the claim's test
-- beside webhook_endpoint_wants() (0034), which stays the outbox's (enabled endpoints only).
CREATE FUNCTION webhook_endpoint_sent(w webhook_endpoints, e events) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT (w.enabled OR e.seq <= w.last_event_seq) AND (w.company_id IS NULL OR w.company_id = e.company_id)
    AND (cardinality(w.event_types) = 0 OR e.type = ANY (w.event_types) OR split_part(e.type, '.', 1) || '.*' = ANY (w.event_types))
    AND (w.resources IS NULL OR split_part(e.type, '.', 1) = ANY (w.resources))
$$;

-- The stop itself, in the transaction of the revocation or the disabling, whoever writes it (the
-- API, a job, psql). max(seq) sees the events this transaction wrote and those committed before
-- this statement: those are sent, later ones are not.
CREATE FUNCTION stop_webhook_endpoints() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  last_seq bigint := (SELECT max(seq) FROM events);
BEGIN
  IF TG_TABLE_NAME = 'companies' THEN
    UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'company_disabled',
      last_event_seq = CASE WHEN enabled THEN last_seq ELSE last_event_seq END, updated_at = now()
    WHERE company_id = NEW.id;
  ELSE
    UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'client_revoked',
      last_event_seq = CASE WHEN enabled THEN last_seq ELSE last_event_seq END, updated_at = now()
    WHERE created_by = OLD.client_id;
  END IF;
  RETURN NULL;
END $$;

-- Named to fire after companies_event (triggers of one kind fire in name order): company.disabled
-- is then written, while the endpoints are still enabled, before they stop with it as their last.
CREATE TRIGGER companies_webhook_endpoints_stopped AFTER UPDATE OF disabled_at ON companies
  FOR EACH ROW WHEN (OLD.disabled_at IS NULL AND NEW.disabled_at IS NOT NULL) EXECUTE FUNCTION stop_webhook_endpoints();
CREATE TRIGGER oauth_clients_webhook_endpoints_stopped AFTER UPDATE OF revoked_at ON oauth_clients
  FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL) EXECUTE FUNCTION stop_webhook_endpoints();
CREATE TRIGGER oauth_clients_webhook_endpoints_deleted AFTER DELETE ON oauth_clients
  FOR EACH ROW EXECUTE FUNCTION stop_webhook_endpoints();
