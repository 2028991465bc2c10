-- Italian electronic invoices (decisions §9.7; docs/billing.md, "FatturaPA";
-- docs/adr/0037-fatturapa-documents.md). A company's codice fiscale and codice destinatario, checked
-- on write; `pec` already exists. The spec's free-text fiscal_code and codice_destinatario stay as
-- they are: the documents read only these checked columns.
ALTER TABLE companies
  ADD COLUMN tax_code text,
  ADD COLUMN sdi_code text;

-- Each document's progressive, given once, the first time it is produced: its number in the
-- exchange system's file name and ProgressivoInvio, unique across companies, never reused.
CREATE TABLE fatturapa_progressives (
  company_id    uuid NOT NULL,
  document_type text NOT NULL CHECK (document_type IN ('invoice', 'credit_note')),
  document_id   uuid NOT NULL,
  progressive   bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, document_type, document_id)
);
