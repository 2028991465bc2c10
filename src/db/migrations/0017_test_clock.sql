-- The test clock (docs/test-clock.md): with TEST_CLOCK_ENABLED every instance reads its business
-- time as its own clock plus `offset_ms`, the one offset of the database, so all instances on
-- the database agree. One row. `status` is 'advancing' while an advance runs its due jobs
-- (`advancing_to` its target), and `heartbeat_at` (the database's time) shows the advancing
-- instance is alive: an advance left 'advancing' by an instance that died is taken over once
-- its heartbeat is old.
CREATE TABLE test_clock (
  id           boolean PRIMARY KEY DEFAULT true CHECK (id),
  offset_ms    bigint NOT NULL DEFAULT 0 CHECK (offset_ms >= 0),
  status       text NOT NULL DEFAULT 'ready' CHECK (status IN ('ready', 'advancing')),
  advancing_to timestamptz,
  heartbeat_at timestamptz
);
INSERT INTO test_clock DEFAULT VALUES;

-- Every instance keeps the offset in memory: a change is announced when it commits (and each
-- instance also reads the row every 200 ms, for a notification it missed).
CREATE FUNCTION announce_test_clock() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('test_clock_changed', NEW.offset_ms::text);
  RETURN NULL;
END $$;

CREATE TRIGGER test_clock_changed AFTER UPDATE ON test_clock
  FOR EACH ROW WHEN (OLD.offset_ms IS DISTINCT FROM NEW.offset_ms OR OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION announce_test_clock();
