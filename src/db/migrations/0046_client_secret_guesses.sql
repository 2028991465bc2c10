-- Wrong client secrets per client_id, shared by every instance on the database
-- (src/modules/oauth/oauth.guesses.ts, docs/adr/0005-guessing-coupons-and-secrets.md). Any id
-- sent to the token endpoint has a row, a made-up one too; a row whose window and lock are past
-- (stale_at) is deleted by the next wrong secret at another id.
CREATE TABLE client_secret_guesses (
  client_id text PRIMARY KEY,
  -- The wrong secrets within the sliding window, oldest first; emptied when they lock the id.
  wrong_at timestamptz[] NOT NULL,
  locked_until timestamptz,
  -- When neither the window nor the lock holds anything more: the row may then go.
  stale_at timestamptz NOT NULL
);

CREATE INDEX client_secret_guesses_stale_at ON client_secret_guesses (stale_at);
