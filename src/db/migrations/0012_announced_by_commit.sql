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
