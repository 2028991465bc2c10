-- A company's webhook endpoint is sent the events its creator could read (docs/webhooks.md):
-- `resources` lists the event resources (contract, team, ...) whose read scope the creating token
-- held. NULL sends every resource: platform endpoints, endpoints a platform token made for a
-- company, and endpoints made before this column (nothing recorded what their creator could read,
-- and taking events away from a working integration unannounced would break it).
ALTER TABLE webhook_endpoints ADD COLUMN resources text[];

-- The outbox as migration 0030 left it (the delivery is its own queue entry, due at once), with
-- the endpoint's resources as one more condition.
CREATE OR REPLACE FUNCTION write_event(p_type text, p_company uuid, p_data jsonb) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
  new_id uuid := gen_random_uuid();
BEGIN
  INSERT INTO events (id, type, company_id, data) VALUES (new_id, p_type, p_company, p_data);
  INSERT INTO webhook_deliveries (id, endpoint_id, event_id, company_id)
  SELECT gen_random_uuid(), e.id, new_id, p_company FROM webhook_endpoints e
  WHERE e.enabled AND (e.company_id IS NULL OR e.company_id = p_company)
    AND (cardinality(e.event_types) = 0 OR p_type = ANY (e.event_types) OR split_part(p_type, '.', 1) || '.*' = ANY (e.event_types))
    AND (e.resources IS NULL OR split_part(p_type, '.', 1) = ANY (e.resources));
  RETURN new_id;
END $$;
