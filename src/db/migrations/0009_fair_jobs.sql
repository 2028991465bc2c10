-- Jobs carry the company whose work they are (NULL: the platform's own work, such as purging
-- idempotency keys), so the scheduler can serve companies in turn instead of oldest-first
-- across all of them (src/jobs/scheduler.ts). Pending jobs written before this migration name
-- their company in the payload.
ALTER TABLE jobs ADD COLUMN company_id uuid;

UPDATE jobs SET company_id = (payload->>'company_id')::uuid
WHERE done_at IS NULL
  AND payload->>'company_id' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

-- One company's due jobs in claim order (a claim is one probe), and the walk from one company
-- with due jobs to the next (a loose index scan: one probe per company, not per job).
CREATE INDEX jobs_company_due_idx ON jobs (company_id, run_at, id) WHERE done_at IS NULL;
