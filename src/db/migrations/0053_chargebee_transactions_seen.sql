-- Chargebee's offline payments (record_payment, or one reported by webhook) seen by the invoice
-- mirror: a transaction is recorded once on its invoice's recorded_payments, whichever of the
-- API's answer and Chargebee's webhook brings it first (docs/chargebee.md, "Money operations").
ALTER TABLE provider_object_versions DROP CONSTRAINT provider_object_versions_object_type_check;
ALTER TABLE provider_object_versions ADD CONSTRAINT provider_object_versions_object_type_check
  CHECK (object_type IN ('invoice', 'credit_note', 'payment_source', 'transaction'));
