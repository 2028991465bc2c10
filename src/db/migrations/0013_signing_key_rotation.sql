-- Signing keys rotate (docs/operations.md, "Signing keys"). Each key has its place in the
-- sequence (`generation`, unique: two instances that find a rotation due at once make one next
-- key, the second insert does nothing), the moment it starts signing (`active_from`; it is
-- published from its creation, ahead of that) and, once a next key exists, the moment it stops
-- verifying (`retire_at`: the next key's start plus the token lifetime and the clock skew).
ALTER TABLE signing_keys ADD COLUMN generation integer;
ALTER TABLE signing_keys ADD COLUMN active_from timestamptz;
ALTER TABLE signing_keys ADD COLUMN retire_at timestamptz;

-- Keys of the previous version: in the order they were made, each signing since its creation.
UPDATE signing_keys k SET generation = n.generation, active_from = k.created_at
FROM (SELECT kid, row_number() OVER (ORDER BY created_at, kid) AS generation FROM signing_keys) n
WHERE n.kid = k.kid;

ALTER TABLE signing_keys ALTER COLUMN generation SET NOT NULL;
ALTER TABLE signing_keys ALTER COLUMN active_from SET NOT NULL;
ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_generation_key UNIQUE (generation);

-- Every instance keeps the keys in memory: any change (a rotation by an instance, by
-- `npm run rotate-key`, by hand) is announced when it commits, and every instance reads them again.
CREATE FUNCTION announce_signing_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('signing_keys_changed', '');
  RETURN NULL;
END $$;

CREATE TRIGGER signing_keys_changed AFTER INSERT OR UPDATE OR DELETE ON signing_keys
  FOR EACH STATEMENT EXECUTE FUNCTION announce_signing_keys();
