-- Changes scheduled for the term's end and pauses (docs/billing.md, "Scheduled changes" and "Pause";
-- docs/adr/0035-scheduled-changes-and-pause.md). `scheduled_change` holds the choice the renewal
-- bills: {plan_sku, plan_quantity, addons, coupon_code}. `pause_date` is when a pause starts (or
-- started), `resume_date` when it ends by itself; both null when no pause is set.
ALTER TABLE subscriptions
  ADD COLUMN scheduled_change jsonb,
  ADD COLUMN pause_date       timestamptz,
  ADD COLUMN resume_date      timestamptz;
