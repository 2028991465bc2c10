-- Chargebee kept in step (issue 17, docs/chargebee.md "Staying in step").
--
-- A Chargebee-managed subscription's invoices and credit notes are stored in the ledger of 0014
-- from Chargebee's webhooks and its reconciliation reads: each under a UUID derived from
-- Chargebee's id (so a repeated or reconciled copy lands on the same row), the events of 0020
-- following by trigger as for the local engine's. Chargebee's objects carry a resource_version
-- that grows with every change; the newest applied per object is kept here, so that a late
-- webhook carrying an older copy never moves an invoice, a credit note or a card backwards.
-- provider_object_id is Chargebee's own id, for the operators (the API shows ours).
CREATE TABLE provider_object_versions (
  company_id         uuid NOT NULL,
  object_id          uuid NOT NULL,
  object_type        text NOT NULL CHECK (object_type IN ('invoice', 'credit_note', 'payment_source')),
  provider_object_id text NOT NULL,
  resource_version   bigint NOT NULL,
  PRIMARY KEY (company_id, object_id)
);
