-- Promotional credits and one-off charges on the local engine (docs/billing.md, "Money operations";
-- docs/adr/0032-promotional-credits-and-one-off-charges.md).

-- A customer's promotional credits as Chargebee's promotional_credit resource: each row an
-- increment or a decrement of the balance in its currency. An invoice that takes some is a
-- decrement naming it; a void gives them back as an increment naming it.
CREATE TABLE promotional_credits (
  company_id    uuid NOT NULL,
  id            uuid NOT NULL,
  seq           bigserial,
  type          text NOT NULL CHECK (type IN ('increment', 'decrement')),
  amount        bigint NOT NULL CHECK (amount > 0),
  currency_code text NOT NULL,
  description   text NOT NULL,
  invoice_id    uuid,
  date          timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  FOREIGN KEY (company_id, invoice_id) REFERENCES invoices (company_id, id)
);
CREATE INDEX promotional_credits_invoice_idx ON promotional_credits (company_id, invoice_id)
  WHERE invoice_id IS NOT NULL;

-- One-off charges: billed at once (invoice_id set in the same transaction) or waiting for the
-- subscription's next renewal invoice (invoice_id null until it bills them).
CREATE TABLE charges (
  company_id      uuid NOT NULL,
  id              uuid NOT NULL,
  seq             bigserial,
  subscription_id uuid NOT NULL,
  amount          bigint NOT NULL CHECK (amount > 0),
  description     text NOT NULL,
  currency_code   text NOT NULL,
  invoice_id      uuid,
  date            timestamptz NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  FOREIGN KEY (company_id, subscription_id) REFERENCES subscriptions (company_id, id),
  FOREIGN KEY (company_id, invoice_id) REFERENCES invoices (company_id, id)
);
CREATE INDEX charges_unbilled_idx ON charges (company_id, subscription_id, seq) WHERE invoice_id IS NULL;

-- An invoice made for a one-off charge alone.
ALTER TABLE invoices DROP CONSTRAINT invoices_kind_check;
ALTER TABLE invoices ADD CONSTRAINT invoices_kind_check CHECK (kind IN ('activation', 'renewal', 'change', 'charge'));
