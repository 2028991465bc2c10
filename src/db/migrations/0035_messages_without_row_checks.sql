-- A delivery's messages are written without a check per row
-- (docs/adr/0016-contracts-and-communications-never-deleted.md).
--
-- The two foreign keys of communication_messages ran a lookup of the referenced row for every
-- message: for a communication to 100,000 recipients, 0.8 of the statement's 1.9 s. They guarded
-- against a message naming a contract or a communication that does not exist. What writes
-- messages cannot make one: the delivery's one INSERT ... SELECT takes each contract from the
-- contracts table in the same statement, and the communication it names is locked (FOR UPDATE) by
-- the same transaction. What could leave one behind later is a contract or a communication
-- deleted, or its key changed. No route does either (a contract ends: `active` false), and from
-- here on the database refuses both, whoever asks: a reference can neither be written dangling
-- nor be left so. The guards run once per statement that deletes or changes a key (never, in the
-- service), instead of once per message.
ALTER TABLE communication_messages
  DROP CONSTRAINT communication_messages_company_id_communication_id_fkey,
  DROP CONSTRAINT communication_messages_company_id_contract_id_fkey;

CREATE FUNCTION refuse_losing_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    RAISE EXCEPTION '% rows never change their key: messages name them (migration 0035)', TG_TABLE_NAME
      USING ERRCODE = 'restrict_violation';
  END IF;
  RAISE EXCEPTION '% rows are never deleted: messages name them (migration 0035)', TG_TABLE_NAME
    USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER contracts_never_deleted BEFORE DELETE OR TRUNCATE ON contracts
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_losing_rows();
CREATE TRIGGER contracts_keys_kept BEFORE UPDATE OF company_id, id ON contracts
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_losing_rows();
CREATE TRIGGER communications_never_deleted BEFORE DELETE OR TRUNCATE ON communications
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_losing_rows();
CREATE TRIGGER communications_keys_kept BEFORE UPDATE OF company_id, id ON communications
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_losing_rows();
