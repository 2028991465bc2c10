-- Report (29) counters (issue 8): each occurrence keeps how many messages it created, how many
-- were opened and how many acknowledged, so the report reads one row per occurrence instead of
-- counting every message. They change in the same statement as the messages they count
-- (communications.repository.ts insertMessages, messages.repository.ts markOpened and
-- markActionDone). `delivered` is not stored: a message is inserted delivered
-- (communication_messages.delivered_at is NOT NULL), so it always equals `recipients`.

ALTER TABLE communication_occurrences
  ADD COLUMN recipients   integer NOT NULL DEFAULT 0,
  ADD COLUMN opened       integer NOT NULL DEFAULT 0,
  ADD COLUMN actions_done integer NOT NULL DEFAULT 0;

-- The messages delivered before this migration, counted as the report used to count them.
UPDATE communication_occurrences o
SET recipients = m.recipients, opened = m.opened, actions_done = m.actions_done
FROM (
  SELECT company_id, communication_id, send_at,
         count(*) AS recipients, count(opened_at) AS opened, count(action_done_at) AS actions_done
  FROM communication_messages
  GROUP BY company_id, communication_id, send_at
) m
WHERE o.company_id = m.company_id AND o.communication_id = m.communication_id AND o.send_at = m.send_at;
