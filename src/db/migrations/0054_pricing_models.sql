-- Chargebee's pricing models on plans and addons (docs/billing.md, "Pricing models"). `tiers`
-- holds [{starting_unit, ending_unit, price}] with price in minor units, for tiered, volume and
-- stairstep only; price_cents then repeats the first tier's price.
ALTER TABLE plans
  ADD COLUMN pricing_model text NOT NULL DEFAULT 'per_unit'
    CHECK (pricing_model IN ('flat_fee', 'per_unit', 'tiered', 'volume', 'stairstep')),
  ADD COLUMN tiers jsonb;
ALTER TABLE addons
  ADD COLUMN pricing_model text NOT NULL DEFAULT 'per_unit'
    CHECK (pricing_model IN ('flat_fee', 'per_unit', 'tiered', 'volume', 'stairstep')),
  ADD COLUMN tiers jsonb;
