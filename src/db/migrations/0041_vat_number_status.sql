-- Whether a platform client checked a company's VAT number (decisions §9.1; docs/billing.md,
-- "Taxes and currencies"): reverse charge applies only while it is 'valid'. Null exactly when
-- there is no vat_number.
--
-- Existing rows: a company with a vat_number gets 'not_validated', whoever wrote the number.
-- Until now a company token could set its own number and so be reverse-charged unchecked; none
-- of those numbers is known to have been checked, so from this migration on such companies are
-- taxed as consumers until a platform client marks their number 'valid'. Companies without a
-- vat_number keep none and get a null status. Each updated row writes its company.updated event.
ALTER TABLE companies ADD COLUMN vat_number_status text;
UPDATE companies SET vat_number_status = 'not_validated' WHERE vat_number IS NOT NULL;
ALTER TABLE companies ADD CONSTRAINT companies_vat_number_status_check
  CHECK ((vat_number IS NULL) = (vat_number_status IS NULL) AND vat_number_status IN ('valid', 'invalid', 'not_validated'));
