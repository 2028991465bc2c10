-- Issue 16: coupons gain Chargebee's duration and targets; a subscription remembers what its
-- coupon has discounted (Chargebee's subscription.coupons[]: applied_count, apply_till).
--
-- Every coupon so far applied forever to the invoice amount: the defaults keep them so.
ALTER TABLE coupons
  ADD COLUMN duration_type  text    NOT NULL DEFAULT 'forever'
    CHECK (duration_type IN ('one_time', 'forever', 'limited_period')),
  ADD COLUMN duration_month integer CHECK (duration_month BETWEEN 1 AND 240),
  ADD COLUMN apply_on       text    NOT NULL DEFAULT 'invoice_amount'
    CHECK (apply_on IN ('invoice_amount', 'each_specified_item')),
  -- Plan skus and addon ids the discount applies to (each_specified_item only).
  ADD COLUMN plan_ids       text[]  NOT NULL DEFAULT '{}',
  ADD COLUMN addon_ids      text[]  NOT NULL DEFAULT '{}';
ALTER TABLE coupons ADD CONSTRAINT coupons_month_with_limited_period
  CHECK ((duration_type = 'limited_period') = (duration_month IS NOT NULL));
ALTER TABLE coupons ADD CONSTRAINT coupons_items_with_each_specified_item
  CHECK (apply_on = 'each_specified_item' OR (cardinality(plan_ids) = 0 AND cardinality(addon_ids) = 0));

-- coupon_applied_at: when the coupon was put on the subscription. coupon_applied_count: how many
-- billing periods it has discounted. coupon_apply_till: a limited_period coupon discounts the
-- periods that start before it (set at the first period it discounts). coupon_period_start: the
-- term it last discounted; coupon_period_discounts: what a fixed amount has already taken off
-- in that term, by line ("invoice" for the invoice amount, else "plan:<sku>" / "addon:<id>"),
-- so that it applies once per billing period and only its surplus comes back within it.
ALTER TABLE subscriptions
  ADD COLUMN coupon_applied_at       timestamptz,
  ADD COLUMN coupon_applied_count    integer NOT NULL DEFAULT 0 CHECK (coupon_applied_count >= 0),
  ADD COLUMN coupon_apply_till       timestamptz,
  ADD COLUMN coupon_period_start     timestamptz,
  ADD COLUMN coupon_period_discounts jsonb   NOT NULL DEFAULT '{}';

-- What a coupon had discounted when the company took it off (the usage above, as JSON): put on
-- again, it resumes there, so a one_time or limited_period coupon cannot be renewed by removing
-- and re-applying it.
ALTER TABLE coupon_redemptions ADD COLUMN usage jsonb;

-- Coupons held today were forever coupons: when they were put on is not recorded, their last
-- change is the best we know.
UPDATE subscriptions SET coupon_applied_at = updated_at WHERE coupon_code IS NOT NULL;
