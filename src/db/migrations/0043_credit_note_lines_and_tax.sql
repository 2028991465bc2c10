-- Credit notes carry their lines, discounts and tax as invoices do (docs/billing.md, "Invoices,
-- credit notes and credits"): a credit is the unused share of what its reference invoice charged,
-- line by line, each line's tax computed on what is credited for it.
--
-- Existing rows: their lines and tax were never recorded apart from their total. They are left
-- with no lines, no discounts and no tax line, and sub_total equal to total (any VAT they credited
-- stays inside that figure); their total, allocations and availability do not change.
ALTER TABLE credit_notes
  ADD COLUMN line_items jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN discounts  jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN taxes      jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN sub_total  bigint;
UPDATE credit_notes SET sub_total = total;
ALTER TABLE credit_notes ALTER COLUMN sub_total SET NOT NULL;
