-- Cached reads (src/db/read-cache.ts) are forgotten when what they show changes. Every
-- statement that changes one of the tables they read announces the companies it touched on the
-- channel `company_changed`: NOTIFY is delivered when the transaction commits and never when it
-- rolls back, so a listener hears of a change exactly when other sessions can see it. An empty
-- payload means "every company": a statement touching more than 100 companies, or a plan (its
-- features show in every company on it). A read that starts to show another table must add that
-- table here.
--
-- Except in the service's own sessions for requests: PostgreSQL serializes the commits of
-- transactions that sent a NOTIFY (a lock on the notification queue, held through the commit's
-- WAL flush), which cut concurrent team creation from ~2,200 to ~900 a second in the bench. The
-- service's connections set `company_admin.announce = 'after_commit'`, and the service announces
-- a request's company itself once the request's work has committed (src/http/cached-reads.ts),
-- in a statement of its own whose commit does not wait for a WAL flush. Its jobs announce in
-- their transaction (src/jobs/scheduler.ts), and so does every other writer: psql, a script,
-- another tool.

-- Whether this session's changes are announced by the triggers: not in the service's own
-- sessions. A WHEN clause, so that in those the trigger costs nothing (calling the function only
-- to return at once was 0.15 ms a statement, half of a team creation's insert).
CREATE FUNCTION announcing() RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT current_setting('company_admin.announce', true) IS DISTINCT FROM 'after_commit'
$$;

CREATE FUNCTION announce_company_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  -- TG_ARGV[0]: the column that names the company ('id' in companies, 'company_id' elsewhere).
  company_column text := TG_ARGV[0];
  touched text[];
BEGIN
  IF company_column IS NULL THEN
    PERFORM pg_notify('company_changed', '');
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    EXECUTE format('SELECT array_agg(DISTINCT %I::text) FROM new_rows', company_column) INTO touched;
  ELSIF TG_OP = 'UPDATE' THEN
    EXECUTE format('SELECT array_agg(DISTINCT c::text) FROM (SELECT %1$I AS c FROM new_rows UNION SELECT %1$I FROM old_rows) t', company_column) INTO touched;
  ELSE
    EXECUTE format('SELECT array_agg(DISTINCT %I::text) FROM old_rows', company_column) INTO touched;
  END IF;
  IF touched IS NULL THEN
    RETURN NULL;
  ELSIF cardinality(touched) > 100 THEN
    PERFORM pg_notify('company_changed', '');
  ELSE
    PERFORM pg_notify('company_changed', company) FROM unnest(touched) AS company;
  END IF;
  RETURN NULL;
END $$;

-- Transition tables are per event, so each table has one trigger per event.
CREATE TRIGGER companies_inserted AFTER INSERT ON companies REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('id');
CREATE TRIGGER companies_updated AFTER UPDATE ON companies REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('id');
CREATE TRIGGER companies_deleted AFTER DELETE ON companies REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('id');

CREATE TRIGGER subscriptions_inserted AFTER INSERT ON subscriptions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER subscriptions_updated AFTER UPDATE ON subscriptions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER subscriptions_deleted AFTER DELETE ON subscriptions REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');

CREATE TRIGGER teams_inserted AFTER INSERT ON teams REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER teams_updated AFTER UPDATE ON teams REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER teams_deleted AFTER DELETE ON teams REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');

CREATE TRIGGER team_members_inserted AFTER INSERT ON team_members REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER team_members_updated AFTER UPDATE ON team_members REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER team_members_deleted AFTER DELETE ON team_members REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');

-- A plan's features are part of every company on it: any change to plans forgets every company.
CREATE TRIGGER plans_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON plans
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes();
