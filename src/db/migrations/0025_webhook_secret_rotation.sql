-- Secret rotation of webhook endpoints (docs/webhooks.md): the secret a rotation replaced keeps
-- signing beside the new one ("v1,<new> v1,<old>") until previous_secret_expires_at, so a
-- receiver can switch to the new secret without refusing a delivery in between.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret text;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at timestamptz;
