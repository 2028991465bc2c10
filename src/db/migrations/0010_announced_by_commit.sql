-- Every change to the tables the cached reads show is recorded by its own commit, whoever
-- writes: a row in `company_changes` per changed row (the company's id; '' for every company),
-- which every instance reads every 200 ms from where its last read's snapshot left off
-- (src/db/read-cache.ts). The service's own sessions still announce their changes right after
-- commit (migration 0008), which is what other instances hear within a millisecond; when the
-- writer dies between its commit and that announcement, the record is what they hear, at most
-- 200 ms later instead of the 60 s of the caches' age limit.
--
-- Why a table and not a NOTIFY in the transaction: PostgreSQL serializes the commits of
-- transactions that sent a NOTIFY (one lock on the notification queue, held through the
-- commit's WAL flush). Measured on this database with pgbench, 32 clients each updating one
-- team: 235-274 transactions a second with a NOTIFY in them, 2,216-2,267 without. An insert
-- into an unlogged table takes no such lock and writes no WAL. Unlogged: after a crash of the
-- database the table is empty, and so is every cache (their connections dropped).
--
-- The access state that token verification keeps for 5 s
-- (src/modules/oauth/oauth.access.ts): a company disabled or enabled, a client revoked or its
-- secret or scopes changed, is announced on `access_changed` by its own commit ('' for every
-- client, a client's id for one).

CREATE FUNCTION announce_access_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'companies' THEN
    PERFORM pg_notify('access_changed', '');
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('access_changed', OLD.client_id);
  ELSE
    PERFORM pg_notify('access_changed', NEW.client_id);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER companies_access_changed AFTER UPDATE OF disabled_at ON companies
  FOR EACH ROW WHEN (OLD.disabled_at IS DISTINCT FROM NEW.disabled_at) EXECUTE FUNCTION announce_access_changes();
CREATE TRIGGER oauth_clients_access_changed AFTER UPDATE ON oauth_clients
  FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.secret_hash IS DISTINCT FROM NEW.secret_hash
    OR OLD.scopes IS DISTINCT FROM NEW.scopes OR OLD.company_id IS DISTINCT FROM NEW.company_id)
  EXECUTE FUNCTION announce_access_changes();
CREATE TRIGGER oauth_clients_access_deleted AFTER DELETE ON oauth_clients
  FOR EACH ROW EXECUTE FUNCTION announce_access_changes();


CREATE UNLOGGED TABLE company_changes (
  -- The writing transaction: readers take what committed since their last snapshot's xmin.
  xid        xid8 NOT NULL DEFAULT pg_current_xact_id(),
  company_id text NOT NULL,
  at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX company_changes_xid_idx ON company_changes (xid);

-- Row-level, with a plan kept for the session: a one-row write pays one small insert. TG_ARGV[0]
-- names the company column ('id' in companies).
CREATE FUNCTION record_company_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_ARGV[0] = 'id' THEN
    IF TG_OP <> 'INSERT' THEN INSERT INTO company_changes (company_id) VALUES (OLD.id::text); END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.id IS DISTINCT FROM OLD.id) THEN INSERT INTO company_changes (company_id) VALUES (NEW.id::text); END IF;
  ELSE
    IF TG_OP <> 'INSERT' THEN INSERT INTO company_changes (company_id) VALUES (OLD.company_id::text); END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.company_id IS DISTINCT FROM OLD.company_id) THEN INSERT INTO company_changes (company_id) VALUES (NEW.company_id::text); END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION record_every_company_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO company_changes (company_id) VALUES ('');
  RETURN NULL;
END $$;

CREATE TRIGGER companies_recorded AFTER INSERT OR UPDATE OR DELETE ON companies
  FOR EACH ROW EXECUTE FUNCTION record_company_change('id');
CREATE TRIGGER subscriptions_recorded AFTER INSERT OR UPDATE OR DELETE ON subscriptions
  FOR EACH ROW EXECUTE FUNCTION record_company_change('company_id');
CREATE TRIGGER teams_recorded AFTER INSERT OR UPDATE OR DELETE ON teams
  FOR EACH ROW EXECUTE FUNCTION record_company_change('company_id');
CREATE TRIGGER team_members_recorded AFTER INSERT OR UPDATE OR DELETE ON team_members
  FOR EACH ROW EXECUTE FUNCTION record_company_change('company_id');
-- A plan's features are part of every company on it.
CREATE TRIGGER plans_recorded AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON plans
  FOR EACH STATEMENT EXECUTE FUNCTION record_every_company_change();
