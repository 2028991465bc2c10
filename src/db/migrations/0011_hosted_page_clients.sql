-- The client whose token asked for a hosted page or portal session (issue 13): revoking that
-- client withdraws the links it made. Pages made before this column have none and stay usable
-- until they expire (HOSTED_PAGE_TTL_SECONDS, one hour by default).
-- No foreign key: a client row is only ever marked revoked, and a page whose client is missing
-- is treated as withdrawn too.
ALTER TABLE hosted_pages ADD COLUMN client_id text;
