-- The local engine's ledger (issue 16): invoices, credit notes, dunning.
-- Money in minor units (bigint), as the catalogue. Every row carries company_id first in its key,
-- and points at its subscription with the composite key, as the other tenant tables.
-- seq orders rows made at the same business time (a change's credit note before its invoice)
-- and is the cursor's tie-breaker; the API never shows it.
CREATE TABLE invoices (
  company_id       uuid NOT NULL,
  id               uuid NOT NULL,
  seq              bigserial,
  subscription_id  uuid NOT NULL,
  kind             text NOT NULL CHECK (kind IN ('activation', 'renewal', 'change')),
  status           text NOT NULL CHECK (status IN ('paid', 'payment_due', 'not_paid', 'voided')),
  date             timestamptz NOT NULL,
  due_date         timestamptz NOT NULL,
  period_start     timestamptz NOT NULL,
  period_end       timestamptz NOT NULL,
  line_items       jsonb NOT NULL,
  discounts        jsonb NOT NULL,
  taxes            jsonb NOT NULL,
  sub_total        bigint NOT NULL,
  total            bigint NOT NULL CHECK (total >= 0),
  credits_applied  bigint NOT NULL CHECK (credits_applied >= 0),
  amount_paid      bigint NOT NULL CHECK (amount_paid >= 0),
  amount_due       bigint NOT NULL CHECK (amount_due >= 0),
  currency_code    text NOT NULL,
  paid_at          timestamptz,
  dunning_status   text CHECK (dunning_status IN ('in_progress', 'exhausted', 'success')),
  attempt_count    integer NOT NULL DEFAULT 0,
  next_retry_at    timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  FOREIGN KEY (company_id, subscription_id) REFERENCES subscriptions (company_id, id),
  CHECK (credits_applied + amount_paid + amount_due = total)
);
-- Newest first per company (the list's order and cursor).
CREATE INDEX invoices_company_date_idx ON invoices (company_id, date DESC, seq DESC);

CREATE TABLE credit_notes (
  company_id           uuid NOT NULL,
  id                   uuid NOT NULL,
  seq                  bigserial,
  subscription_id      uuid NOT NULL,
  reference_invoice_id uuid,
  type                 text NOT NULL CHECK (type IN ('adjustment', 'refundable')),
  reason_code          text NOT NULL,
  total                bigint NOT NULL CHECK (total > 0),
  amount_allocated     bigint NOT NULL CHECK (amount_allocated >= 0),
  currency_code        text NOT NULL,
  date                 timestamptz NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  FOREIGN KEY (company_id, subscription_id) REFERENCES subscriptions (company_id, id),
  FOREIGN KEY (company_id, reference_invoice_id) REFERENCES invoices (company_id, id),
  CHECK (amount_allocated <= total)
);
CREATE INDEX credit_notes_company_date_idx ON credit_notes (company_id, date DESC, seq DESC);

-- Which credit note paid how much of which invoice (Chargebee's allocations).
CREATE TABLE credit_allocations (
  company_id     uuid NOT NULL,
  credit_note_id uuid NOT NULL,
  invoice_id     uuid NOT NULL,
  amount         bigint NOT NULL CHECK (amount > 0),
  PRIMARY KEY (company_id, credit_note_id, invoice_id),
  FOREIGN KEY (company_id, credit_note_id) REFERENCES credit_notes (company_id, id),
  FOREIGN KEY (company_id, invoice_id) REFERENCES invoices (company_id, id)
);
