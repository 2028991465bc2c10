-- Holidays a company defines, company-wide (subsidiary_id null) or for one of its subsidiaries.
-- Public holidays are not stored: they are computed from the date-holidays data when read.
CREATE TABLE holidays (
  company_id        uuid NOT NULL REFERENCES companies (id),
  id                uuid NOT NULL,
  subsidiary_id     uuid,
  name              text NOT NULL,
  day               date NOT NULL,
  is_worker_holiday boolean NOT NULL DEFAULT true,
  recurrent         text NOT NULL DEFAULT 'none' CHECK (recurrent IN ('none', 'yearly')),
  recurrent_until   date,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, id),
  UNIQUE (id),
  FOREIGN KEY (company_id, subsidiary_id) REFERENCES subsidiaries (company_id, id),
  -- An end only for a yearly holiday, and never before its first day.
  CHECK (recurrent_until IS NULL OR (recurrent = 'yearly' AND recurrent_until >= day))
);
-- all_holidays reads a company's holidays by day; endpoint 31 by subsidiary.
CREATE INDEX holidays_day_idx ON holidays (company_id, day);
CREATE INDEX holidays_subsidiary_idx ON holidays (company_id, subsidiary_id, day);
