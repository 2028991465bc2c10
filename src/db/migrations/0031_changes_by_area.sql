-- Cached reads forget by what changed (issue 19): each cached read declares the tables it shows
-- (src/db/read-areas.ts), and a change says which table it touched, so a team's creation no
-- longer forgets the company's holidays. The table's name is the area: the functions below take
-- it from TG_TABLE_NAME, so no trigger can name the wrong one.
--
-- The announcement's payload (channel `company_changed`, migration 0008) becomes
-- '<company>:<table>' for one company, ':<table>' for every company (a plan, or a statement that
-- touched more than 100 companies). A bare '<company>' (or '') still means every area of that
-- company (of every company): what the service says for a write it cannot name.
--
-- The record (`company_changes`, migration 0010) gains `area`, the table; NULL means every area.

CREATE OR REPLACE FUNCTION announce_company_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  -- TG_ARGV[0]: the column that names the company ('id' in companies, 'company_id' elsewhere).
  company_column text := TG_ARGV[0];
  touched text[];
BEGIN
  IF company_column IS NULL THEN
    PERFORM pg_notify('company_changed', ':' || TG_TABLE_NAME);
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
    PERFORM pg_notify('company_changed', ':' || TG_TABLE_NAME);
  ELSE
    PERFORM pg_notify('company_changed', company || ':' || TG_TABLE_NAME) FROM unnest(touched) AS company;
  END IF;
  RETURN NULL;
END $$;

ALTER TABLE company_changes ADD COLUMN area text;

CREATE OR REPLACE FUNCTION record_company_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_ARGV[0] = 'id' THEN
    IF TG_OP <> 'INSERT' THEN INSERT INTO company_changes (company_id, area) VALUES (OLD.id::text, TG_TABLE_NAME); END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.id IS DISTINCT FROM OLD.id) THEN INSERT INTO company_changes (company_id, area) VALUES (NEW.id::text, TG_TABLE_NAME); END IF;
  ELSE
    IF TG_OP <> 'INSERT' THEN INSERT INTO company_changes (company_id, area) VALUES (OLD.company_id::text, TG_TABLE_NAME); END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.company_id IS DISTINCT FROM OLD.company_id) THEN INSERT INTO company_changes (company_id, area) VALUES (NEW.company_id::text, TG_TABLE_NAME); END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION record_every_company_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO company_changes (company_id, area) VALUES ('', TG_TABLE_NAME);
  RETURN NULL;
END $$;

-- The tables the newly cached reads show (contracts page, holidays, all_holidays), announced and
-- recorded as the others are (test/read-cache-areas.test.ts checks every table a cached read
-- shows has both).
CREATE TRIGGER contracts_inserted AFTER INSERT ON contracts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER contracts_updated AFTER UPDATE ON contracts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER contracts_deleted AFTER DELETE ON contracts REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER contracts_recorded AFTER INSERT OR UPDATE OR DELETE ON contracts
  FOR EACH ROW EXECUTE FUNCTION record_company_change('company_id');

CREATE TRIGGER holidays_inserted AFTER INSERT ON holidays REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER holidays_updated AFTER UPDATE ON holidays REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER holidays_deleted AFTER DELETE ON holidays REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER holidays_recorded AFTER INSERT OR UPDATE OR DELETE ON holidays
  FOR EACH ROW EXECUTE FUNCTION record_company_change('company_id');

CREATE TRIGGER subsidiaries_inserted AFTER INSERT ON subsidiaries REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER subsidiaries_updated AFTER UPDATE ON subsidiaries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER subsidiaries_deleted AFTER DELETE ON subsidiaries REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT WHEN (announcing()) EXECUTE FUNCTION announce_company_changes('company_id');
CREATE TRIGGER subsidiaries_recorded AFTER INSERT OR UPDATE OR DELETE ON subsidiaries
  FOR EACH ROW EXECUTE FUNCTION record_company_change('company_id');
