-- Revenue analytics (docs/analytics.md, docs/adr/0036-revenue-analytics.md): one row per company,
-- currency and plan (plan_id '*': all its plans) on each day its MRR or its trials changed, written
-- in the transaction of the subscription change. `prev_*` is the state at the end of the day before,
-- so a series sums deltas and reads only the rows of its range; `had_mrr_before` tells `new` from
-- `reactivation`. `npm run analytics:rebuild` writes it again from subscription_events.
CREATE TABLE analytics_mrr_days (
  company_id     uuid NOT NULL,
  currency_code  text NOT NULL,
  plan_id        text NOT NULL,
  day            date NOT NULL,
  mrr            bigint NOT NULL CHECK (mrr >= 0),
  prev_mrr       bigint NOT NULL CHECK (prev_mrr >= 0),
  trials         integer NOT NULL CHECK (trials >= 0),
  prev_trials    integer NOT NULL CHECK (prev_trials >= 0),
  had_mrr_before boolean NOT NULL,
  PRIMARY KEY (company_id, currency_code, plan_id, day)
);
CREATE INDEX analytics_mrr_days_range_idx ON analytics_mrr_days (currency_code, plan_id, day)
  INCLUDE (company_id, mrr, prev_mrr, trials, prev_trials, had_mrr_before);
