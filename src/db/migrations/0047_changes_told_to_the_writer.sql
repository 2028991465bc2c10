-- Cached reads forget what a transaction wrote, as the database saw it written, never what a
-- route says it writes. The statement-level triggers of the tables cached reads show
-- (migrations 0008 and 0031) now run in every session and name the changes of each statement:
-- '<company>:<table>' for each company it touched, ':<table>' for every company (a plan, or more
-- than 100 companies in one statement).
--
-- In the service's own sessions (`company_admin.announce = 'after_commit'`) they tell the writer
-- itself, with a notice (message 'company_changed', the changes one per line in its detail): a
-- message on the writer's own connection, which costs no lock and no WAL. The service gathers the
-- notices of each piece of work and announces them on `company_changed` once it has committed
-- (src/cache/read-cache-changes.ts). A NOTIFY here would serialize the commits of every writing
-- transaction (docs/adr/0008-bounded-database-waits.md). Every other session (psql, a script)
-- keeps being announced at its commit by NOTIFY, as before. The record in `company_changes`
-- (migration 0010) still covers a writer that dies between its commit and its announcement.

CREATE OR REPLACE FUNCTION announce_company_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  -- TG_ARGV[0]: the column that names the company ('id' in companies, 'company_id' elsewhere);
  -- none for a table whose rows show in every company (plans).
  company_column text := TG_ARGV[0];
  touched text[];
  changes text[];
BEGIN
  IF company_column IS NULL THEN
    changes := ARRAY[':' || TG_TABLE_NAME];
  ELSE
    -- Static statements (planned once per table) rather than format()ed ones: these run on every
    -- write of the service. A branch whose column a table lacks is never run on it.
    IF company_column = 'id' THEN
      IF TG_OP = 'INSERT' THEN SELECT array_agg(DISTINCT id::text) INTO touched FROM new_rows;
      ELSIF TG_OP = 'UPDATE' THEN SELECT array_agg(DISTINCT c) INTO touched FROM (SELECT id::text AS c FROM new_rows UNION SELECT id::text FROM old_rows) t;
      ELSE SELECT array_agg(DISTINCT id::text) INTO touched FROM old_rows;
      END IF;
    ELSE
      IF TG_OP = 'INSERT' THEN SELECT array_agg(DISTINCT company_id::text) INTO touched FROM new_rows;
      ELSIF TG_OP = 'UPDATE' THEN SELECT array_agg(DISTINCT c) INTO touched FROM (SELECT company_id::text AS c FROM new_rows UNION SELECT company_id::text FROM old_rows) t;
      ELSE SELECT array_agg(DISTINCT company_id::text) INTO touched FROM old_rows;
      END IF;
    END IF;
    IF touched IS NULL THEN
      RETURN NULL;
    ELSIF cardinality(touched) > 100 THEN
      changes := ARRAY[':' || TG_TABLE_NAME];
    ELSE
      changes := ARRAY(SELECT company || ':' || TG_TABLE_NAME FROM unnest(touched) AS company);
    END IF;
  END IF;
  IF current_setting('company_admin.announce', true) = 'after_commit' THEN
    RAISE NOTICE USING MESSAGE = 'company_changed', DETAIL = array_to_string(changes, E'\n');
  ELSE
    PERFORM pg_notify('company_changed', change) FROM unnest(changes) AS change;
  END IF;
  RETURN NULL;
END $$;

-- The triggers ran only outside the service's sessions (WHEN (announcing())); now in every one.
DO $$
DECLARE
  t record;
  definition text;
BEGIN
  FOR t IN
    SELECT tg.oid, tg.tgname, tg.tgrelid::regclass AS rel FROM pg_trigger tg JOIN pg_proc p ON p.oid = tg.tgfoid
    WHERE p.proname = 'announce_company_changes' AND NOT tg.tgisinternal
  LOOP
    definition := regexp_replace(pg_get_triggerdef(t.oid), ' WHEN \(announcing\(\)\)', '');
    IF definition LIKE '%announcing()%' THEN
      RAISE EXCEPTION 'trigger % on % keeps its WHEN clause: %', t.tgname, t.rel, definition;
    END IF;
    EXECUTE format('DROP TRIGGER %I ON %s', t.tgname, t.rel);
    EXECUTE definition;
  END LOOP;
END $$;

DROP FUNCTION announcing();
