-- The foundation: clients and keys, the catalogue, companies with their subsidiaries,
-- contracts and teams, subscriptions, idempotency keys and the job table of the scheduler.
-- Every tenant table carries company_id and is keyed by it first, ready to be distributed.

CREATE TABLE signing_keys (
  kid         text PRIMARY KEY,
  private_jwk jsonb NOT NULL,
  public_jwk  jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE companies (
  id                  uuid PRIMARY KEY,
  name                text NOT NULL,
  address             text,
  city                text,
  province            text,
  zip                 text,
  country             text NOT NULL,
  phone               text,
  vat                 text,
  fiscal_code         text,
  pec                 text,
  codice_destinatario text,
  billing_email       text,
  admin_user_id       uuid,
  admin_user_email    text,
  timezone            text NOT NULL,
  number_of_employees integer,
  location_info       jsonb,
  preferences         jsonb NOT NULL DEFAULT '{}',
  disabled_at         timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE oauth_clients (
  client_id   text PRIMARY KEY,
  secret_hash text NOT NULL,
  name        text NOT NULL,
  company_id  uuid REFERENCES companies (id), -- null for a platform client
  scopes      text[] NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX oauth_clients_company_idx ON oauth_clients (company_id, created_at);

CREATE TABLE plans (
  id           uuid PRIMARY KEY,
  sku          text NOT NULL UNIQUE,
  name         text NOT NULL,
  price_cents  bigint NOT NULL CHECK (price_cents >= 0),
  plan_family  text NOT NULL,
  period_unit  text NOT NULL CHECK (period_unit IN ('month', 'year')),
  features     text[] NOT NULL DEFAULT '{}',
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE products (
  id                   uuid PRIMARY KEY,
  sku                  text NOT NULL UNIQUE,
  name                 text NOT NULL,
  visible              boolean NOT NULL DEFAULT true,
  subscription_manager text NOT NULL CHECK (subscription_manager IN ('local', 'chargebee')),
  allowed_plans        text[] NOT NULL DEFAULT '{}',
  category             text,
  brand                text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE addons (
  id          uuid PRIMARY KEY,
  name        text NOT NULL,
  price_cents bigint NOT NULL CHECK (price_cents >= 0),
  period_unit text NOT NULL CHECK (period_unit IN ('month', 'year')),
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- discount_value_minor: basis points for a percentage (10 % = 1000), cents for a fixed amount.
CREATE TABLE coupons (
  id                   uuid PRIMARY KEY,
  code                 text NOT NULL UNIQUE,
  name                 text NOT NULL,
  discount_type        text NOT NULL CHECK (discount_type IN ('percentage', 'fixed_amount')),
  discount_value_minor bigint NOT NULL CHECK (discount_value_minor > 0),
  valid_till           date,
  max_redemptions      integer CHECK (max_redemptions > 0),
  redemptions          integer NOT NULL DEFAULT 0,
  created_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE subsidiaries (
  company_id uuid NOT NULL REFERENCES companies (id),
  id         uuid NOT NULL,
  name       text NOT NULL,
  city       text,
  country    text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  UNIQUE (id)
);

CREATE TABLE contracts (
  company_id    uuid NOT NULL REFERENCES companies (id),
  id            uuid NOT NULL,
  first_name    text NOT NULL,
  last_name     text NOT NULL,
  email         text,
  subsidiary_id uuid,
  active        boolean NOT NULL DEFAULT true,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  UNIQUE (id),
  FOREIGN KEY (company_id, subsidiary_id) REFERENCES subsidiaries (company_id, id)
);
CREATE INDEX contracts_subsidiary_idx ON contracts (company_id, subsidiary_id);

CREATE TABLE teams (
  company_id    uuid NOT NULL REFERENCES companies (id),
  id            uuid NOT NULL,
  name          text NOT NULL,
  code          text NOT NULL,
  subsidiary_id uuid,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  UNIQUE (id),
  UNIQUE (company_id, code),
  FOREIGN KEY (company_id, subsidiary_id) REFERENCES subsidiaries (company_id, id)
);

CREATE TABLE team_members (
  company_id  uuid NOT NULL,
  team_id     uuid NOT NULL,
  contract_id uuid NOT NULL,
  is_leader   boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, team_id, contract_id),
  FOREIGN KEY (company_id, team_id) REFERENCES teams (company_id, id),
  FOREIGN KEY (company_id, contract_id) REFERENCES contracts (company_id, id)
);
CREATE INDEX team_members_contract_idx ON team_members (company_id, contract_id);

-- One subscription per company: the current one. Its history is in subscription_events.
CREATE TABLE subscriptions (
  company_id         uuid NOT NULL REFERENCES companies (id),
  id                 uuid NOT NULL,
  customer_id        text NOT NULL,
  provider           text NOT NULL CHECK (provider IN ('local', 'chargebee')),
  product_sku        text NOT NULL,
  plan_sku           text NOT NULL,
  plan_quantity      integer NOT NULL CHECK (plan_quantity > 0),
  addons             jsonb NOT NULL DEFAULT '[]',
  coupon_code        text,
  status             text NOT NULL CHECK (status IN ('future', 'in_trial', 'active', 'non_renewing', 'paused', 'cancelled')),
  trial_start        timestamptz,
  trial_end          timestamptz,
  current_term_start timestamptz,
  current_term_end   timestamptz,
  cancelled_at       timestamptz,
  cancel_scheduled_at timestamptz,
  payment_source     jsonb,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  UNIQUE (id),
  UNIQUE (company_id),
  UNIQUE (customer_id)
);

CREATE TABLE subscription_events (
  company_id      uuid NOT NULL,
  id              bigserial,
  subscription_id uuid NOT NULL,
  event_type      text NOT NULL,
  from_status     text,
  to_status       text,
  details         jsonb NOT NULL DEFAULT '{}',
  actor           text NOT NULL,
  occurred_at     timestamptz NOT NULL,
  PRIMARY KEY (company_id, id)
);

-- Replays of POST and PUT by Idempotency-Key. status_code null: the first request is running.
CREATE TABLE idempotency_keys (
  owner            text NOT NULL,
  key              text NOT NULL,
  request_hash     text NOT NULL,
  status_code      integer,
  response_headers jsonb,
  response_body    text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (owner, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- The scheduler's work: one row per thing to do at run_at; (kind, key) makes scheduling idempotent.
CREATE TABLE jobs (
  id         bigserial PRIMARY KEY,
  kind       text NOT NULL,
  key        text NOT NULL,
  run_at     timestamptz NOT NULL,
  payload    jsonb NOT NULL DEFAULT '{}',
  attempts   integer NOT NULL DEFAULT 0,
  last_error text,
  done_at    timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (kind, key)
);
CREATE INDEX jobs_due_idx ON jobs (run_at) WHERE done_at IS NULL;
