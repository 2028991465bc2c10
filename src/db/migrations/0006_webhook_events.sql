-- Webhooks of billing providers (issue 6, docs/chargebee.md).
-- webhook_events: every event received, by the provider's event id, so that a repeated
--   delivery is answered 200 and changes nothing; outcome says what it did.
CREATE TABLE webhook_events (
  provider        text NOT NULL CHECK (provider IN ('chargebee')),
  event_id        text NOT NULL,
  event_type      text NOT NULL,
  occurred_at     timestamptz NOT NULL,
  received_at     timestamptz NOT NULL,
  outcome         text NOT NULL CHECK (outcome IN ('applied', 'unchanged', 'stale', 'ignored')),
  subscription_id uuid,
  PRIMARY KEY (provider, event_id)
);

-- provider_subscription_versions: the newest Chargebee resource_version applied to a
--   subscription from a webhook; an event carrying an older one is stale and changes nothing.
CREATE TABLE provider_subscription_versions (
  subscription_id  uuid PRIMARY KEY REFERENCES subscriptions (id) ON DELETE CASCADE,
  resource_version bigint NOT NULL,
  occurred_at      timestamptz NOT NULL
);
