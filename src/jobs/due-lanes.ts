import { sql, type Kysely } from 'kysely'
import type { DB } from '../db/tables.ts'
import type { Lane } from './job.ts'

/**
 * The companies (null: the platform) with a job of `kinds` due at `now`, the one whose oldest
 * due job is oldest first. A loose index scan over jobs_company_due_idx (0009_fair_jobs.sql):
 * each step jumps to the next company with a due job, so one company's due backlog costs one
 * probe, not one row per job (EXPLAIN in docs/architecture.md). A company whose pending jobs
 * all lie in the future is still walked entry by entry (the index cannot skip past it on
 * run_at): the cost grows with the pending jobs of companies with no due work, a job or two
 * each today (a renewal, a series' next occurrence). A table of each company's next due time
 * would bound it by the companies with due work, if scale ever asks for it.
 */
export async function dueLanes(db: Kysely<DB>, kinds: string[], now: Date, real: { kinds: string[]; now: Date }): Promise<Lane[]> {
  const { rows } = await sql<{ company_id: string | null; run_at: Date | string }>`
    WITH RECURSIVE lanes AS (
      (SELECT company_id, run_at FROM jobs
       WHERE done_at IS NULL AND company_id IS NOT NULL
         AND ((run_at <= ${now} AND kind = ANY(${kinds}::text[])) OR (run_at <= ${real.now} AND kind = ANY(${real.kinds}::text[])))
       ORDER BY company_id, run_at LIMIT 1)
      UNION ALL
      SELECT next.company_id, next.run_at FROM lanes CROSS JOIN LATERAL (
        SELECT company_id, run_at FROM jobs
        WHERE done_at IS NULL AND company_id > lanes.company_id
          AND ((run_at <= ${now} AND kind = ANY(${kinds}::text[])) OR (run_at <= ${real.now} AND kind = ANY(${real.kinds}::text[])))
        ORDER BY company_id, run_at LIMIT 1) next
    )
    SELECT company_id, run_at FROM lanes
    UNION ALL
    (SELECT company_id, run_at FROM jobs
     WHERE done_at IS NULL AND company_id IS NULL
       AND ((run_at <= ${now} AND kind = ANY(${kinds}::text[])) OR (run_at <= ${real.now} AND kind = ANY(${real.kinds}::text[])))
     ORDER BY run_at LIMIT 1)`.execute(db)
  return rows
    .map((r) => ({ lane: r.company_id, at: new Date(r.run_at).getTime() }))
    .sort((x, y) => x.at - y.at)
    .map((r) => r.lane)
}
