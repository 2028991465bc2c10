-- Events and outgoing webhooks (docs/webhooks.md, docs/adr/0024-events-through-an-outbox.md).
--
-- Every change writes its event in its own transaction, by triggers on the tables that hold
-- the resources: a change without its event, or an event without its change, cannot commit,
-- whoever writes (a request, a batch of requests sharing one statement, a job, psql), and a
-- kill -9 rolls back both. write_event() is the outbox: it stores the event and, in the same
-- statement, a delivery and its scheduler job for every enabled webhook endpoint that wants it.

CREATE TABLE events (
  -- Insertion order: lists are newest first by it, and a cursor is a position in it.
  seq        bigserial NOT NULL,
  id         uuid PRIMARY KEY,
  type       text NOT NULL,
  company_id uuid,
  data       jsonb NOT NULL,
  -- To the millisecond, as the API shows it: created_after compares what clients see.
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  UNIQUE (seq)
);
CREATE INDEX events_company_seq_idx ON events (company_id, seq);
CREATE INDEX events_created_at_idx ON events (created_at);

CREATE TABLE webhook_endpoints (
  id              uuid PRIMARY KEY,
  -- Null: a platform endpoint, which hears every company's events.
  company_id      uuid REFERENCES companies (id),
  url             text NOT NULL,
  -- Empty: every type. 'subscription.*' stands for every subscription event.
  event_types     text[] NOT NULL DEFAULT '{}',
  description     text,
  secret          text NOT NULL,
  enabled         boolean NOT NULL DEFAULT true,
  disabled_reason text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_company_idx ON webhook_endpoints (company_id) WHERE enabled;

-- One event for one endpoint: pending until a 2xx, failed once its retries are spent.
CREATE TABLE webhook_deliveries (
  id              uuid PRIMARY KEY,
  endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id        uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  company_id      uuid,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  -- Which scheduler job (key <id>/<job_seq>) may run the next attempt; any other is stale.
  job_seq         integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  delivered_at    timestamptz
);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

-- Every HTTP attempt of a delivery, as GET .../deliveries shows it.
CREATE TABLE webhook_attempts (
  id            bigserial PRIMARY KEY,
  delivery_id   uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  endpoint_id   uuid NOT NULL,
  event_id      uuid NOT NULL,
  attempt       integer NOT NULL,
  started_at    timestamptz NOT NULL,
  -- pending: sent, no outcome yet (or its instance died: then 'lost' once the next attempt starts).
  outcome       text NOT NULL DEFAULT 'pending' CHECK (outcome IN ('pending', 'succeeded', 'failed', 'timeout', 'error', 'refused', 'lost')),
  status_code   integer,
  duration_ms   integer,
  error         text,
  next_retry_at timestamptz
);
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, id);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id);

-- The outbox: the event, and a delivery with its job for each endpoint that wants it. The job
-- is due at once (now(): the time of the change's transaction) in the company's lane.
CREATE FUNCTION write_event(p_type text, p_company uuid, p_data jsonb) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
  new_id uuid := gen_random_uuid();
BEGIN
  INSERT INTO events (id, type, company_id, data) VALUES (new_id, p_type, p_company, p_data);
  WITH wanted AS (
    INSERT INTO webhook_deliveries (id, endpoint_id, event_id, company_id)
    SELECT gen_random_uuid(), e.id, new_id, p_company FROM webhook_endpoints e
    WHERE e.enabled AND (e.company_id IS NULL OR e.company_id = p_company)
      AND (cardinality(e.event_types) = 0 OR p_type = ANY (e.event_types) OR split_part(p_type, '.', 1) || '.*' = ANY (e.event_types))
    RETURNING id
  )
  INSERT INTO jobs (kind, key, run_at, company_id, payload)
  SELECT 'webhook.deliver', wanted.id || '/0', now(), p_company, jsonb_build_object('delivery_id', wanted.id, 'seq', 0) FROM wanted;
  RETURN new_id;
END $$;

-- The fields of each side of an update that moved: Stripe's previous_attributes.
CREATE FUNCTION moved_fields(old_row jsonb, new_row jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(jsonb_object_agg(o.key, o.value), '{}') FROM jsonb_each(old_row) o
  WHERE o.value IS DISTINCT FROM new_row -> o.key
$$;

-- <resource>.created / .updated / .deleted for a row of a resource's table. TG_ARGV[0]: the
-- resource; TG_ARGV[1]: the column naming the company; the rest: columns no client sees
-- (bookkeeping), left out of the object and of what counts as a change.
CREATE FUNCTION emit_row_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  resource text := TG_ARGV[0];
  bookkeeping text[] := TG_ARGV[2:];
  old_row jsonb;
  new_row jsonb;
  moved jsonb;
  verb text;
BEGIN
  IF TG_OP <> 'INSERT' THEN old_row := to_jsonb(OLD) - bookkeeping; END IF;
  IF TG_OP <> 'DELETE' THEN new_row := to_jsonb(NEW) - bookkeeping; END IF;
  IF TG_OP = 'INSERT' THEN
    PERFORM write_event(resource || '.created', (new_row ->> TG_ARGV[1])::uuid, jsonb_build_object('object', new_row));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM write_event(resource || '.deleted', (old_row ->> TG_ARGV[1])::uuid, jsonb_build_object('object', old_row));
  ELSE
    -- A write that moved nothing a client sees (the same values again) is no change.
    moved := moved_fields(old_row - 'updated_at', new_row - 'updated_at');
    IF moved = '{}' THEN RETURN NULL; END IF;
    verb := 'updated';
    IF resource = 'company' AND moved ? 'disabled_at' THEN
      verb := CASE WHEN NEW.disabled_at IS NULL THEN 'enabled' ELSE 'disabled' END;
    END IF;
    PERFORM write_event(resource || '.' || verb, (new_row ->> TG_ARGV[1])::uuid,
      jsonb_build_object('object', new_row, 'previous_attributes', moved));
  END IF;
  RETURN NULL;
END $$;

-- change_log is the company's internal history (0018): never shown by the API, nor in events.
CREATE TRIGGER companies_event AFTER INSERT OR UPDATE OR DELETE ON companies
  FOR EACH ROW EXECUTE FUNCTION emit_row_event('company', 'id', 'change_log');
CREATE TRIGGER subsidiaries_event AFTER INSERT OR UPDATE OR DELETE ON subsidiaries
  FOR EACH ROW EXECUTE FUNCTION emit_row_event('subsidiary', 'company_id');
CREATE TRIGGER contracts_event AFTER INSERT OR UPDATE OR DELETE ON contracts
  FOR EACH ROW EXECUTE FUNCTION emit_row_event('contract', 'company_id');
CREATE TRIGGER teams_event AFTER INSERT OR UPDATE OR DELETE ON teams
  FOR EACH ROW EXECUTE FUNCTION emit_row_event('team', 'company_id');
CREATE TRIGGER holidays_event AFTER INSERT OR UPDATE OR DELETE ON holidays
  FOR EACH ROW EXECUTE FUNCTION emit_row_event('holiday', 'company_id');
-- The pointer to the pending occurrence moves with every delivery: bookkeeping, not a change.
CREATE TRIGGER communications_event AFTER INSERT OR UPDATE OR DELETE ON communications
  FOR EACH ROW EXECUTE FUNCTION emit_row_event('communication', 'company_id', 'next_send_at', 'next_index');

-- A membership: team.member_added / member_updated (leadership) / member_removed.
CREATE FUNCTION emit_membership_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM write_event('team.member_added', NEW.company_id, jsonb_build_object('object', to_jsonb(NEW)));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM write_event('team.member_removed', OLD.company_id, jsonb_build_object('object', to_jsonb(OLD)));
  ELSIF OLD.is_leader IS DISTINCT FROM NEW.is_leader THEN
    PERFORM write_event('team.member_updated', NEW.company_id,
      jsonb_build_object('object', to_jsonb(NEW), 'previous_attributes', jsonb_build_object('is_leader', OLD.is_leader)));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER team_members_event AFTER INSERT OR UPDATE OR DELETE ON team_members
  FOR EACH ROW EXECUTE FUNCTION emit_membership_event();

-- An occurrence is recorded once, when its messages are delivered.
CREATE FUNCTION emit_occurrence_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM write_event('communication.occurrence_delivered', NEW.company_id,
    jsonb_build_object('object', jsonb_build_object('communication_id', NEW.communication_id, 'company_id', NEW.company_id,
      'send_at', NEW.send_at, 'delivered_at', NEW.delivered_at)));
  RETURN NULL;
END $$;
CREATE TRIGGER communication_occurrences_event AFTER INSERT ON communication_occurrences
  FOR EACH ROW EXECUTE FUNCTION emit_occurrence_event();

-- A message's first opening and first acknowledgement (an acknowledgement also opens).
CREATE FUNCTION emit_message_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.opened_at IS NULL AND NEW.opened_at IS NOT NULL THEN
    PERFORM write_event('message.opened', NEW.company_id, jsonb_build_object('object', to_jsonb(NEW)));
  END IF;
  IF OLD.action_done_at IS NULL AND NEW.action_done_at IS NOT NULL THEN
    PERFORM write_event('message.acknowledged', NEW.company_id, jsonb_build_object('object', to_jsonb(NEW)));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER communication_messages_event AFTER UPDATE OF opened_at, action_done_at ON communication_messages
  FOR EACH ROW EXECUTE FUNCTION emit_message_event();

-- A subscription's changes are already recorded with their verb (created, cancellation_scheduled,
-- renewed, ...) in subscription_events, right after the subscription's row is written: each
-- becomes subscription.<verb>, its object the subscription as it now is, its previous_attributes
-- what the change moved. Left out, as the API leaves them out: the coupon's bookkeeping of the
-- period it last discounted, and a card's test behaviour (only its brand, last 4 and expiry show).
CREATE FUNCTION subscription_fields(fields jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(f -> 'payment_source') = 'object'
    THEN jsonb_set(f, '{payment_source}', (f -> 'payment_source') - 'test_behaviour') ELSE f END
  FROM (SELECT fields - 'updated_at' - 'coupon_period_start' - 'coupon_period_discounts' AS f) AS stripped
$$;

CREATE FUNCTION emit_subscription_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  current jsonb;
BEGIN
  SELECT subscription_fields(to_jsonb(s)) INTO current FROM subscriptions s WHERE s.company_id = NEW.company_id AND s.id = NEW.subscription_id;
  PERFORM write_event('subscription.' || NEW.event_type, NEW.company_id, jsonb_build_object('object', current)
    || CASE WHEN NEW.details ? 'changes'
         THEN jsonb_build_object('previous_attributes', subscription_fields((SELECT coalesce(jsonb_object_agg(c.key, c.value -> 0), '{}') FROM jsonb_each(NEW.details -> 'changes') c)))
         ELSE '{}' END);
  RETURN NULL;
END $$;
CREATE TRIGGER subscription_events_event AFTER INSERT ON subscription_events
  FOR EACH ROW EXECUTE FUNCTION emit_subscription_event();
