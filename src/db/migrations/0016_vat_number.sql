-- A company's VAT identification number, with its country prefix (DE123456789), as the service
-- normalises it: an EU business customer in another country than the seller's is then
-- reverse-charged (docs/billing.md, "Taxes and currencies"). Null for a consumer or unknown.
-- Apart from the spec's free-text `vat`, which stays as the client wrote it.
ALTER TABLE companies ADD COLUMN vat_number text;
