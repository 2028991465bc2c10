-- The built-in billing engine (issue 4): what the subscriptions table of 0001 lacks.
-- billing_anchor_day: the day of the month terms renew on (1-31), kept so that a term
--   ending on a short month's last day (Feb 28) renews on the anchor again (Mar 31).
-- cancellation_reason / cancellation_message: what the client said when cancelling (endpoint 2).
ALTER TABLE subscriptions ADD COLUMN billing_anchor_day smallint CHECK (billing_anchor_day BETWEEN 1 AND 31);
ALTER TABLE subscriptions ADD COLUMN cancellation_reason text;
ALTER TABLE subscriptions ADD COLUMN cancellation_message text;

-- A subscription's history, newest last, read per company.
CREATE INDEX subscription_events_subscription_idx ON subscription_events (company_id, subscription_id, id);
