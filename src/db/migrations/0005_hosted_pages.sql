-- Hosted pages of the built-in billing provider (issue 6; spec 1, 10, 11), stored here so that
-- every instance sharing the database serves them.
-- kind: manager (choose a plan, 1), portal (the customer's portal session, 10), payment (add a card, 11).
-- token_hash: SHA-256 (hex) of the random token in the page's URL; the token itself is never stored.
-- state: a portal session's status (created → logged_in → logged_out) or a page's state
--   (created → requested → succeeded | cancelled).
-- redirect_url: where the finished page sends the browser, already checked against the allow-list.
CREATE TABLE hosted_pages (
  id              uuid PRIMARY KEY,
  company_id      uuid NOT NULL REFERENCES companies (id),
  subscription_id uuid NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('manager', 'portal', 'payment')),
  token_hash      text NOT NULL UNIQUE,
  state           text NOT NULL,
  redirect_url    text NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  CONSTRAINT hosted_pages_state_check CHECK (
    (kind = 'portal' AND state IN ('created', 'logged_in', 'logged_out'))
    OR (kind <> 'portal' AND state IN ('created', 'requested', 'succeeded', 'cancelled'))
  )
);

-- A company's pages, newest last (support, and a future purge of expired ones).
CREATE INDEX hosted_pages_company_idx ON hosted_pages (company_id, created_at);
