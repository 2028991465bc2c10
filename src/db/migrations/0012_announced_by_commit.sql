-- Changes are announced by the commit that makes them, whoever writes: the service's own
-- sessions no longer set `company_admin.announce = 'after_commit'` (migration 0008), so the
-- tables' triggers announce its changes on `company_changed` in the writing transaction too.
-- Announced after the commit, by the process that wrote, a change was lost when that process
-- died in between: other instances kept showing the old state for up to 60 s. PostgreSQL
-- serializes the commits of transactions that sent a NOTIFY (one lock on the notification
-- queue, held through the commit's WAL flush); since team creations share one statement and
-- one commit (src/db/write-batches.ts) that costs little: docs/decisions.md, "Cached reads",
-- has the figures.
--
-- The same for the access state that token verification keeps for 5 s
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

-- Run in every session now, the statement-level triggers of migration 0008 cost the service's
-- writes their transition tables and a dynamic query planned at every statement (EXPLAIN
-- ANALYZE: most of a one-row update's trigger time). Row-level triggers with a plan kept for the
-- session do the same for the tables with a company column; PostgreSQL sends one notification
-- per distinct payload per transaction however many rows name it. A statement touching many
-- companies now announces each of them rather than ''. The plans' trigger (every company) stays.
DROP TRIGGER companies_inserted ON companies;
DROP TRIGGER companies_updated ON companies;
DROP TRIGGER companies_deleted ON companies;
DROP TRIGGER subscriptions_inserted ON subscriptions;
DROP TRIGGER subscriptions_updated ON subscriptions;
DROP TRIGGER subscriptions_deleted ON subscriptions;
DROP TRIGGER teams_inserted ON teams;
DROP TRIGGER teams_updated ON teams;
DROP TRIGGER teams_deleted ON teams;
DROP TRIGGER team_members_inserted ON team_members;
DROP TRIGGER team_members_updated ON team_members;
DROP TRIGGER team_members_deleted ON team_members;
DROP TRIGGER plans_changed ON plans;
DROP FUNCTION announcing();

CREATE FUNCTION announce_company_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM pg_notify('company_changed', OLD.company_id::text);
  END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.company_id IS DISTINCT FROM OLD.company_id) THEN
    PERFORM pg_notify('company_changed', NEW.company_id::text);
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION announce_company_row_by_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM pg_notify('company_changed', OLD.id::text);
  END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.id IS DISTINCT FROM OLD.id) THEN
    PERFORM pg_notify('company_changed', NEW.id::text);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER companies_changed AFTER INSERT OR UPDATE OR DELETE ON companies
  FOR EACH ROW EXECUTE FUNCTION announce_company_row_by_id();
CREATE TRIGGER subscriptions_changed AFTER INSERT OR UPDATE OR DELETE ON subscriptions
  FOR EACH ROW EXECUTE FUNCTION announce_company_row();
CREATE TRIGGER teams_changed AFTER INSERT OR UPDATE OR DELETE ON teams
  FOR EACH ROW EXECUTE FUNCTION announce_company_row();
CREATE TRIGGER team_members_changed AFTER INSERT OR UPDATE OR DELETE ON team_members
  FOR EACH ROW EXECUTE FUNCTION announce_company_row();
-- A plan's features are part of every company on it: any change to plans forgets every company.
CREATE TRIGGER plans_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON plans
  FOR EACH STATEMENT EXECUTE FUNCTION announce_company_changes();
