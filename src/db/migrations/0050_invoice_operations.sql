-- Money operations on the local engine's invoices (docs/billing.md, "Money operations";
-- docs/adr/0030-offline-payments-voids-and-write-offs.md): offline payments recorded on an
-- invoice, voids and write-offs, and what a payment beyond the amount due leaves the customer.
ALTER TABLE invoices
  ADD COLUMN recorded_payments jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN voided_at         timestamptz,
  ADD COLUMN void_reason_code  text,
  ADD COLUMN comments          jsonb NOT NULL DEFAULT '[]';

-- A payment's part beyond what its invoice owed: the customer's excess_payments, taken by the
-- next invoices after refundable credit notes, oldest first (as credit_notes and their allocations).
CREATE TABLE excess_payments (
  company_id       uuid NOT NULL,
  id               uuid NOT NULL,
  seq              bigserial,
  subscription_id  uuid NOT NULL,
  invoice_id       uuid NOT NULL,
  total            bigint NOT NULL CHECK (total > 0),
  amount_allocated bigint NOT NULL DEFAULT 0 CHECK (amount_allocated >= 0),
  currency_code    text NOT NULL,
  date             timestamptz NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  FOREIGN KEY (company_id, subscription_id) REFERENCES subscriptions (company_id, id),
  FOREIGN KEY (company_id, invoice_id) REFERENCES invoices (company_id, id),
  CHECK (amount_allocated <= total)
);
CREATE INDEX excess_payments_available_idx ON excess_payments (company_id, date, seq) WHERE amount_allocated < total;

CREATE TABLE excess_payment_allocations (
  company_id        uuid NOT NULL,
  excess_payment_id uuid NOT NULL,
  invoice_id        uuid NOT NULL,
  amount            bigint NOT NULL CHECK (amount > 0),
  PRIMARY KEY (company_id, excess_payment_id, invoice_id),
  FOREIGN KEY (company_id, excess_payment_id) REFERENCES excess_payments (company_id, id),
  FOREIGN KEY (company_id, invoice_id) REFERENCES invoices (company_id, id)
);

-- The invoice's events, with two more verbs:
--   invoice.payment_recorded  a payment recorded on it (a new entry of recorded_payments), before
--                             the invoice.paid of a payment that settles it
--   invoice.written_off       what was due is written off (it becomes paid, without invoice.paid)
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
