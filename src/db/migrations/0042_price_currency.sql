-- Each price carries its own currency (ISO 4217 code): plans, addons and fixed-amount coupons.
-- A percentage coupon has none (NULL). The service gives a new price the CURRENCY_CODE setting as
-- its default, so the columns have no database default.
--
-- Existing rows: until now every stored amount meant minor units of the CURRENCY_CODE in force,
-- so each existing plan, addon and fixed-amount coupon is given the CURRENCY_CODE of the instance
-- (or `npm run migrate`) that applies this migration, which src/db/migrate.ts passes as the
-- transaction's setting `company_admin.currency_code`. Run it with the CURRENCY_CODE those prices
-- were written under. Without that setting it applies only to a catalogue with no such rows.
ALTER TABLE plans ADD COLUMN currency_code text;
ALTER TABLE addons ADD COLUMN currency_code text;
ALTER TABLE coupons ADD COLUMN currency_code text;

DO $$
DECLARE
  given text := nullif(current_setting('company_admin.currency_code', true), '');
BEGIN
  IF given IS NULL AND (EXISTS (SELECT 1 FROM plans) OR EXISTS (SELECT 1 FROM addons)
      OR EXISTS (SELECT 1 FROM coupons WHERE discount_type = 'fixed_amount')) THEN
    RAISE EXCEPTION 'existing prices need the CURRENCY_CODE they were written under: apply this migration with the service''s configuration (npm run migrate)';
  END IF;
  UPDATE plans SET currency_code = given;
  UPDATE addons SET currency_code = given;
  UPDATE coupons SET currency_code = given WHERE discount_type = 'fixed_amount';
END
$$;

ALTER TABLE plans ALTER COLUMN currency_code SET NOT NULL,
  ADD CONSTRAINT plans_currency_code_format CHECK (currency_code ~ '^[A-Z]{3}$');
ALTER TABLE addons ALTER COLUMN currency_code SET NOT NULL,
  ADD CONSTRAINT addons_currency_code_format CHECK (currency_code ~ '^[A-Z]{3}$');
ALTER TABLE coupons
  ADD CONSTRAINT coupons_currency_code_format CHECK (currency_code ~ '^[A-Z]{3}$'),
  ADD CONSTRAINT coupons_currency_code_fixed_amount CHECK ((discount_type = 'fixed_amount') = (currency_code IS NOT NULL));
