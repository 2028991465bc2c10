-- Communications (issue 5): what a company sends to its teams and subsidiaries, the occurrences
-- delivered, one message per recipient contract and occurrence, and uploaded attachments.
-- Communications are never deleted; their history is change_log.

CREATE TABLE communications (
  company_id                 uuid NOT NULL REFERENCES companies (id),
  id                         uuid NOT NULL,
  subject                    text NOT NULL,
  message                    text NOT NULL,
  status                     text NOT NULL CHECK (status IN ('draft', 'scheduled', 'active', 'submitted', 'discontinued')),
  sender_id                  text NOT NULL, -- a client id (the token's subject) or a contract id
  send_at                    timestamptz NOT NULL,
  recurrent                  text NOT NULL CHECK (recurrent IN ('none', 'daily', 'weekly', 'monthly', 'yearly')),
  recurrent_until            date,
  action_required            text NOT NULL CHECK (action_required IN ('none', 'acknowledge')),
  destination_team_ids       uuid[] NOT NULL DEFAULT '{}',
  destination_subsidiary_ids uuid[] NOT NULL DEFAULT '{}',
  attachments                jsonb NOT NULL DEFAULT '[]', -- [{id, name, mime}] of communication_attachments
  change_log                 jsonb NOT NULL DEFAULT '[]',
  -- The occurrence whose delivery job is pending (null: none), and its position in the series.
  -- A delivery job whose occurrence is not this one is stale (the communication changed) and does nothing.
  next_send_at               timestamptz,
  next_index                 integer,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  UNIQUE (id),
  CHECK (recurrent = 'none' OR recurrent_until IS NOT NULL)
);
-- List (22): newest send_at first, optionally within a year and with a status.
CREATE INDEX communications_send_at_idx ON communications (company_id, send_at DESC, id);
CREATE INDEX communications_status_idx ON communications (company_id, status, send_at DESC, id);

-- One row per delivered occurrence, written in the delivery's transaction: the report lists an
-- occurrence even when it reached nobody, and "has a delivered occurrence" is one index probe.
CREATE TABLE communication_occurrences (
  company_id       uuid NOT NULL,
  communication_id uuid NOT NULL,
  send_at          timestamptz NOT NULL,
  delivered_at     timestamptz NOT NULL,
  PRIMARY KEY (company_id, communication_id, send_at),
  FOREIGN KEY (company_id, communication_id) REFERENCES communications (company_id, id)
);

-- One message per recipient contract and occurrence. The unique key makes a delivery idempotent
-- (INSERT ... ON CONFLICT DO NOTHING) and is also the index of the report and of endpoint 32.
CREATE TABLE communication_messages (
  company_id       uuid NOT NULL,
  id               uuid NOT NULL,
  communication_id uuid NOT NULL,
  contract_id      uuid NOT NULL,
  send_at          timestamptz NOT NULL,
  delivered_at     timestamptz NOT NULL,
  opened_at        timestamptz,
  action_done_at   timestamptz,
  PRIMARY KEY (company_id, id),
  UNIQUE (company_id, communication_id, send_at, contract_id),
  FOREIGN KEY (company_id, communication_id) REFERENCES communications (company_id, id),
  FOREIGN KEY (company_id, contract_id) REFERENCES contracts (company_id, id)
);
-- A contract's inbox, newest first.
CREATE INDEX communication_messages_inbox_idx ON communication_messages (company_id, contract_id, send_at DESC);

-- Uploaded files, kept in the database so that every instance serves them (nothing on local disk).
CREATE TABLE communication_attachments (
  company_id uuid NOT NULL REFERENCES companies (id),
  id         uuid NOT NULL,
  name       text NOT NULL,
  mime       text NOT NULL,
  size       integer NOT NULL CHECK (size >= 0),
  content    bytea NOT NULL,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  UNIQUE (id)
);
