-- The Idempotency-Key store never holds a secret (docs/webhooks.md, docs/api-contract.md): an
-- answer's secret fields are kept as null, and a replay shows them null. This erases the secrets
-- of the answers kept before that rule, rather than wait up to 24 hours for them to expire.
--
-- What it assumes about existing rows of idempotency_keys:
-- - A webhook endpoint's creation or secret rotation was kept whole, its body the serializer's
--   JSON text with no white space, its secret a top-level "secret":"whsec_<base64>". That field
--   becomes null and the rest of the text stays as it was; the answer becomes no-store.
-- - A client's creation was kept without a body (status 201, Cache-Control: no-store, Location
--   /api/v1/companies/<id>/clients/<client_id>). Its body is rebuilt from oauth_clients (a client
--   is revoked, never deleted) with client_secret null, so its replay answers the same client.
-- - A body with a top-level "client_secret":"..." (none is expected) has it set to null.
-- - Every other row stays as it is. A text that only quotes such a field (inside a JSON string,
--   its quotes escaped) is not matched.

UPDATE idempotency_keys
SET response_body = regexp_replace(response_body, '([{,])"secret":"whsec_[A-Za-z0-9+/=]*"', '\1"secret":null'),
    response_headers = coalesce(response_headers, '{}'::jsonb) || '{"cache-control": "no-store"}'::jsonb
WHERE response_body ~ '^\{.*[{,]"secret":"whsec_';

UPDATE idempotency_keys
SET response_body = regexp_replace(response_body, '([{,])"client_secret":"[^"\\]*"', '\1"client_secret":null'),
    response_headers = coalesce(response_headers, '{}'::jsonb) || '{"cache-control": "no-store"}'::jsonb
WHERE response_body ~ '^\{.*[{,]"client_secret":"';

UPDATE idempotency_keys k
SET response_body = json_build_object('client_id', c.client_id, 'client_secret', NULL, 'name', c.name, 'scopes', c.scopes)::text
FROM oauth_clients c
WHERE k.response_body IS NULL
  AND k.status_code = 201
  AND k.response_headers ->> 'cache-control' LIKE '%no-store%'
  AND k.response_headers ->> 'location' ~ '^/api/v1/companies/[^/]+/clients/[^/]+$'
  AND c.client_id = substring(k.response_headers ->> 'location' FROM '[^/]+$');
