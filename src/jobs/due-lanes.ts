import { sql, type Kysely } from 'kysely'
import type { DB } from '../db/tables.ts'
import type { Lane } from './job.ts'

/**
 * Companies with a due job, oldest due first, by a loose index scan over jobs_company_due_idx: one
 * probe per company, not a row per job. Companies whose pending jobs all lie in the future are still
 * walked entry by entry; a table of next due times would bound that if scale asks for it.
 */
export async function dueLanes(
  db: Kysely<DB>,
  kinds: string[],
  now: Date,
  real: { kinds: string[]; now: Date },
): Promise<Lane[]> {
  const { rows } = await sql<{ company_id: string | null; run_at: Date | string }>`
    WITH RECURSIVE lanes AS (
      (SELECT company_id, run_at FROM jobs
       WHERE done_at IS NULL AND company_id IS NOT NULL
         AND ((run_at <= ${now} AND kind = ANY(${kinds}::text[])) OR (run_at <= ${real.now}
           AND kind = ANY(${real.kinds}::text[])))
       ORDER BY company_id, run_at LIMIT 1)
      UNION ALL
      SELECT next.company_id, next.run_at FROM lanes CROSS JOIN LATERAL (
        SELECT company_id, run_at FROM jobs
        WHERE done_at IS NULL AND company_id > lanes.company_id
          AND ((run_at <= ${now} AND kind = ANY(${kinds}::text[])) OR (run_at <= ${real.now}
            AND kind = ANY(${real.kinds}::text[])))
        ORDER BY company_id, run_at LIMIT 1) next
    )
    SELECT company_id, run_at FROM lanes
    UNION ALL
    (SELECT company_id, run_at FROM jobs
     WHERE done_at IS NULL AND company_id IS NULL
       AND ((run_at <= ${now} AND kind = ANY(${kinds}::text[])) OR (run_at <= ${real.now}
         AND kind = ANY(${real.kinds}::text[])))
     ORDER BY run_at LIMIT 1)`.execute(db)
  return rows
    .map((r) => ({ lane: r.company_id, at: new Date(r.run_at).getTime() }))
    .sort((x, y) => x.at - y.at)
    .map((r) => r.lane)
}
