-- A provider's invoice amounts as the provider has them. Chargebee settles an invoice by credits, payments,
-- adjustments (adjustment credit notes) and write-offs; 0014 had only the first two, so the
-- others were shown as credits applied. The local engine neither adjusts nor writes off: 0.
-- A voided invoice owes nothing (amount_due 0); what no field settled is what was voided.
ALTER TABLE invoices
  ADD COLUMN amount_adjusted  bigint NOT NULL DEFAULT 0 CHECK (amount_adjusted >= 0),
  ADD COLUMN write_off_amount bigint NOT NULL DEFAULT 0 CHECK (write_off_amount >= 0);
ALTER TABLE invoices DROP CONSTRAINT invoices_check;
ALTER TABLE invoices ADD CONSTRAINT invoices_amounts_add_up CHECK (
  credits_applied + amount_paid + amount_adjusted + write_off_amount + amount_due = total
  OR (status = 'voided' AND amount_due = 0 AND credits_applied + amount_paid + amount_adjusted + write_off_amount <= total)
);
