-- Events of the local engine's ledger (issue 15 over issue 16), written in the invoice's own
-- transaction by write_event() (0019), like every other change:
--   invoice.created         an invoice is generated (conversion, renewal, change)
--   invoice.paid            it is paid in full (at once, or later by a retry or a new card)
--   invoice.payment_failed  a charge of it failed (first attempt or a dunning retry)
--   invoice.not_paid        dunning is exhausted (after that attempt's payment_failed): it stays
--                           unpaid, the subscription is cancelled
--   invoice.voided          it is voided
--   invoice.updated         any other change a client sees
--   credit_note.created / credit_note.updated
-- A new invoice that is already paid or already failed gets both its created event and that one.
-- seq is bookkeeping (the cursor's tie-breaker), never shown.
CREATE FUNCTION emit_invoice_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  old_row jsonb;
  new_row jsonb := to_jsonb(NEW) - 'seq';
  moved jsonb;
  verb text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM write_event('invoice.created', NEW.company_id, jsonb_build_object('object', new_row));
    IF NEW.status = 'paid' AND NEW.total > 0 THEN
      PERFORM write_event('invoice.paid', NEW.company_id, jsonb_build_object('object', new_row));
    ELSIF NEW.status = 'payment_due' AND NEW.attempt_count > 0 THEN
      PERFORM write_event('invoice.payment_failed', NEW.company_id, jsonb_build_object('object', new_row));
    END IF;
    RETURN NULL;
  END IF;
  old_row := to_jsonb(OLD) - 'seq';
  moved := moved_fields(old_row, new_row);
  IF moved = '{}' THEN RETURN NULL; END IF;
  -- The last retry's failure is a failed payment too, before the invoice is given up.
  IF NEW.attempt_count > OLD.attempt_count AND NEW.status = 'not_paid' THEN
    PERFORM write_event('invoice.payment_failed', NEW.company_id, jsonb_build_object('object', new_row, 'previous_attributes', moved));
  END IF;
  verb := CASE
    WHEN NEW.status IS DISTINCT FROM OLD.status AND NEW.status = 'paid' THEN 'paid'
    WHEN NEW.status IS DISTINCT FROM OLD.status AND NEW.status = 'not_paid' THEN 'not_paid'
    WHEN NEW.status IS DISTINCT FROM OLD.status AND NEW.status = 'voided' THEN 'voided'
    WHEN NEW.attempt_count > OLD.attempt_count AND NEW.status = 'payment_due' THEN 'payment_failed'
    ELSE 'updated'
  END;
  PERFORM write_event('invoice.' || verb, NEW.company_id, jsonb_build_object('object', new_row, 'previous_attributes', moved));
  RETURN NULL;
END $$;

CREATE TRIGGER invoices_event AFTER INSERT OR UPDATE ON invoices
  FOR EACH ROW EXECUTE FUNCTION emit_invoice_event();
CREATE TRIGGER credit_notes_event AFTER INSERT OR UPDATE ON credit_notes
  FOR EACH ROW EXECUTE FUNCTION emit_row_event('credit_note', 'company_id', 'seq');
