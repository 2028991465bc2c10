-- Issue 13: subscriptions follow the catalogue; a company redeems a coupon once.
--
-- A subscription names its product and plan by sku, and a sku can be renamed (15). The
-- references become foreign keys that carry a rename over (ON UPDATE CASCADE): the subscription
-- keeps pointing at the same product row, whatever its sku becomes, and a new product given the
-- old sku never captures it. NOT VALID: rows left pointing at a sku renamed before this
-- migration (the defect it fixes) do not stop the service from starting; the service answers
-- them with a 409, never a 500 (docs/billing.md), and every write from now on is checked.
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_product_fk
  FOREIGN KEY (product_sku) REFERENCES products (sku) ON UPDATE CASCADE NOT VALID;
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_plan_fk
  FOREIGN KEY (plan_sku) REFERENCES plans (sku) ON UPDATE CASCADE NOT VALID;
CREATE INDEX subscriptions_product_sku_idx ON subscriptions (product_sku);
CREATE INDEX subscriptions_plan_sku_idx ON subscriptions (plan_sku);

-- One row per (coupon, company) that ever applied it: coupons.redemptions counts these rows,
-- and the primary key makes a second redemption by the same company impossible, also in a race.
CREATE TABLE coupon_redemptions (
  coupon_id   uuid NOT NULL REFERENCES coupons (id),
  company_id  uuid NOT NULL REFERENCES companies (id),
  redeemed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (coupon_id, company_id)
);
CREATE INDEX coupon_redemptions_company_idx ON coupon_redemptions (company_id);

-- The coupons held today count as redeemed by their companies.
INSERT INTO coupon_redemptions (coupon_id, company_id)
  SELECT c.id, s.company_id FROM subscriptions s JOIN coupons c ON c.code = s.coupon_code
  ON CONFLICT DO NOTHING;
