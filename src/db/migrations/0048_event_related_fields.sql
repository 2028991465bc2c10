-- An event stores, beside the row its trigger saw, what the resource's GET reads from other
-- tables, as it is at the change (docs/adr/0010-event-objects.md). Whoever inserts the event,
-- this trigger on the events table adds them, so no writer can leave them out:
--   contract.*        team_ids: its teams
--   team.* (the team) team_leader_ids: its leaders
--   team.member_*     contract: the contract's row (its team_ids are read when presented: storing
--                     them would cost every membership change a row per team of the contract)
--   company.*         subscription: the subscription mirror the company's GET joins (null: none)
--   communication.occurrence_delivered  communication: the row, as communication events store it
--   subscription.*    updated_at: the subscription's (its trigger leaves it out)
-- Each is one lookup on a primary key or on team_members' indexes, reading the rows the GET shows.

CREATE FUNCTION event_related_fields(p_type text, p_company uuid, p_object jsonb)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  resource text := split_part(p_type, '.', 1);
  related jsonb;
BEGIN
  IF jsonb_typeof(p_object) IS DISTINCT FROM 'object' THEN RETURN '{}'; END IF;
  IF starts_with(p_type, 'team.member_') THEN
    SELECT to_jsonb(c) INTO related FROM contracts c
      WHERE c.company_id = p_company AND c.id = (p_object ->> 'contract_id')::uuid;
    RETURN jsonb_build_object('contract', related);
  ELSIF resource = 'contract' THEN
    SELECT coalesce(jsonb_agg(m.team_id ORDER BY m.team_id), '[]') INTO related
      FROM team_members m WHERE m.company_id = p_company AND m.contract_id = (p_object ->> 'id')::uuid;
    RETURN jsonb_build_object('team_ids', related);
  ELSIF resource = 'team' THEN
    SELECT coalesce(jsonb_agg(m.contract_id ORDER BY m.contract_id), '[]') INTO related
      FROM team_members m WHERE m.company_id = p_company AND m.team_id = (p_object ->> 'id')::uuid AND m.is_leader;
    RETURN jsonb_build_object('team_leader_ids', related);
  ELSIF resource = 'company' THEN
    SELECT jsonb_build_object('subscription_id', s.id, 'subscription_customer_id', s.customer_id,
        'subscription_plan', s.plan_sku, 'subscription_status', s.status, 'current_term_end', s.current_term_end,
        'trial_end', s.trial_end, 'plan_quantity', s.plan_quantity, 'features', p.features)
      INTO related FROM subscriptions s LEFT JOIN plans p ON p.sku = s.plan_sku
      WHERE s.company_id = (p_object ->> 'id')::uuid LIMIT 1;
    RETURN jsonb_build_object('subscription', related);
  ELSIF p_type = 'communication.occurrence_delivered' THEN
    SELECT to_jsonb(c) - 'next_send_at' - 'next_index' INTO related
      FROM communications c WHERE c.company_id = p_company AND c.id = (p_object ->> 'communication_id')::uuid;
    RETURN jsonb_build_object('communication', related);
  ELSIF resource = 'subscription' THEN
    SELECT to_jsonb(s.updated_at) INTO related FROM subscriptions s
      WHERE s.company_id = p_company AND s.id = (p_object ->> 'id')::uuid;
    RETURN CASE WHEN related IS NULL THEN '{}' ELSE jsonb_build_object('updated_at', related) END;
  END IF;
  RETURN '{}';
END $$;

CREATE FUNCTION add_event_related_fields() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.data := jsonb_set(NEW.data, '{object}',
    (NEW.data -> 'object') || event_related_fields(NEW.type, NEW.company_id, NEW.data -> 'object'));
  RETURN NEW;
END $$;
CREATE TRIGGER events_related_fields BEFORE INSERT ON events FOR EACH ROW
  WHEN (split_part(NEW.type, '.', 1) IN ('company', 'contract', 'team', 'subscription')
    OR NEW.type = 'communication.occurrence_delivered')
  EXECUTE FUNCTION add_event_related_fields();

-- Some writers change the related rows after the resource's row, in the same transaction: a
-- company's subscription is created after the company, a team's leaders are set after its row,
-- a delivery updates the communication after recording the occurrence. For those types the
-- fields are taken again at commit, when the change is whole; the event keeps its place.
CREATE FUNCTION refresh_event_related_fields() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  fresh jsonb := (NEW.data -> 'object')
    || event_related_fields(NEW.type, NEW.company_id, NEW.data -> 'object');
BEGIN
  IF fresh IS DISTINCT FROM NEW.data -> 'object' THEN
    UPDATE events SET data = jsonb_set(data, '{object}', fresh) WHERE id = NEW.id;
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER events_related_fields_at_commit AFTER INSERT ON events
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (split_part(NEW.type, '.', 1) = 'company' OR NEW.type IN ('team.updated', 'communication.occurrence_delivered'))
  EXECUTE FUNCTION refresh_event_related_fields();
