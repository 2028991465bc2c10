-- Issue 14: company updates (PATCH) keep their history; every list pages by keyset.
--
-- A company's change_log records each PATCH as communications record theirs:
-- [{at, by, action: "updated", changes: {field: [old, new]}}]. Kept for operators and audits;
-- the Company representation of the spec does not show it.
ALTER TABLE companies ADD COLUMN change_log jsonb NOT NULL DEFAULT '[]';

-- Each list reads its pages as WHERE (sort key) > (cursor's key) ORDER BY sort key LIMIT n+1:
-- an index in that order makes a page deep into the list cost what the first one does.
CREATE INDEX companies_name_idx ON companies (name, id);
CREATE INDEX subsidiaries_name_idx ON subsidiaries (company_id, name, id);
CREATE INDEX contracts_name_idx ON contracts (company_id, last_name, first_name, id);
CREATE INDEX teams_name_idx ON teams (company_id, name, code);
CREATE INDEX holidays_defined_idx ON holidays (company_id, subsidiary_id, day, name, id);
-- The communications list (22) is newest first with ties by id, newest id first: scanned
-- backwards, an index on (send_at, id) gives exactly that order (the old one had id ascending).
DROP INDEX communications_send_at_idx;
DROP INDEX communications_status_idx;
CREATE INDEX communications_send_at_idx ON communications (company_id, send_at, id);
CREATE INDEX communications_status_idx ON communications (company_id, status, send_at, id);
-- The inbox: newest send_at first, then id.
DROP INDEX communication_messages_inbox_idx;
CREATE INDEX communication_messages_inbox_idx ON communication_messages (company_id, contract_id, send_at DESC, id);
