-- Refunds and manual credit notes on the local engine's invoices (docs/billing.md, "Money operations";
-- docs/adr/0031-refunds-and-manual-credit-notes.md). A refundable credit note is paid out in part or
-- whole (refunds, oldest first); what it has left is total − amount_allocated − amount_refunded.
-- An invoice shows what its credit notes refunded.
ALTER TABLE credit_notes
  ADD COLUMN amount_refunded bigint NOT NULL DEFAULT 0 CHECK (amount_refunded >= 0),
  ADD COLUMN refunds         jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN description     text,
  ADD CONSTRAINT credit_notes_used_within_total CHECK (amount_allocated + amount_refunded <= total);
ALTER TABLE invoices
  ADD COLUMN amount_refunded bigint NOT NULL DEFAULT 0 CHECK (amount_refunded >= 0);
-- The credit notes of one invoice (the sum that may not pass its total, the PDF's list).
CREATE INDEX credit_notes_reference_idx ON credit_notes (company_id, reference_invoice_id, date, seq)
  WHERE reference_invoice_id IS NOT NULL;

-- A credit note's events: credit_note.created, credit_note.refunded when a refund pays out part of
-- it, credit_note.updated for any other change a client sees.
CREATE FUNCTION emit_credit_note_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  old_row jsonb;
  new_row jsonb := to_jsonb(NEW) - 'seq';
  moved jsonb;
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM write_event('credit_note.created', NEW.company_id, jsonb_build_object('object', new_row));
    RETURN NULL;
  END IF;
  old_row := to_jsonb(OLD) - 'seq';
  moved := moved_fields(old_row, new_row);
  IF moved = '{}' THEN RETURN NULL; END IF;
  PERFORM write_event(
    'credit_note.' || CASE WHEN NEW.amount_refunded > OLD.amount_refunded THEN 'refunded' ELSE 'updated' END,
    NEW.company_id, jsonb_build_object('object', new_row, 'previous_attributes', moved));
  RETURN NULL;
END $$;
DROP TRIGGER credit_notes_event ON credit_notes;
CREATE TRIGGER credit_notes_event AFTER INSERT OR UPDATE ON credit_notes
  FOR EACH ROW EXECUTE FUNCTION emit_credit_note_event();

-- The invoice's events, with one more verb: invoice.refunded when amount_refunded grows.
CREATE OR REPLACE FUNCTION emit_invoice_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
    PERFORM write_event('invoice.payment_failed', NEW.company_id,
      jsonb_build_object('object', new_row, 'previous_attributes', moved));
  END IF;
  IF jsonb_array_length(NEW.recorded_payments) > jsonb_array_length(OLD.recorded_payments) THEN
    PERFORM write_event('invoice.payment_recorded', NEW.company_id,
      jsonb_build_object('object', new_row, 'previous_attributes', moved));
    IF NEW.status IS NOT DISTINCT FROM OLD.status THEN RETURN NULL; END IF;
  END IF;
  verb := CASE
    WHEN NEW.amount_refunded > OLD.amount_refunded THEN 'refunded'
    WHEN NEW.write_off_amount > OLD.write_off_amount THEN 'written_off'
    WHEN NEW.status IS DISTINCT FROM OLD.status AND NEW.status = 'paid' THEN 'paid'
    WHEN NEW.status IS DISTINCT FROM OLD.status AND NEW.status = 'not_paid' THEN 'not_paid'
    WHEN NEW.status IS DISTINCT FROM OLD.status AND NEW.status = 'voided' THEN 'voided'
    WHEN NEW.attempt_count > OLD.attempt_count AND NEW.status = 'payment_due' THEN 'payment_failed'
    ELSE 'updated'
  END;
  PERFORM write_event('invoice.' || verb, NEW.company_id,
      jsonb_build_object('object', new_row, 'previous_attributes', moved));
  RETURN NULL;
END $$;
