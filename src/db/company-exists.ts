import { sql, type Kysely } from 'kysely'
import { prepared } from './prepared.ts'
import { inRequestTransaction } from './request-transaction.ts'
import { BoundedSet } from '../core/bounded-map.ts'

/** Past this many remembered companies the one remembered first goes (each entry is a 36-character id). */
const REMEMBERED_LIMIT = 200_000

const perDatabase = new WeakMap<Kysely<any>, (companyId: string) => Promise<boolean>>()

/**
 * Whether a company exists: asked before most reads and writes of a company's things (its
 * contracts, holidays, teams), so that an unknown company is a 404 rather than an empty list.
 * No route, job or migration ever deletes a company, so a company once seen committed exists for
 * good: each process remembers the ids it has seen and asks the database only about the others
 * (bench/findings.md, issue 19: a round trip less for half of the requests of a mix spread over
 * 1,000 companies). A company seen inside a request's own transaction (Idempotency-Key) is not
 * remembered: that transaction could still roll back. One memory per Kysely instance, shared by
 * the repositories that use it.
 */
export function companyExistsOn(db: Kysely<any>): (companyId: string) => Promise<boolean> {
  const existing = perDatabase.get(db)
  if (existing) return existing
  const seen = new BoundedSet<string>(REMEMBERED_LIMIT)
  const find = prepared(db, (id: string) => sql<{ found: number }>`SELECT 1 AS found FROM companies WHERE id = ${id}`)
  const exists = async (companyId: string) => {
    if (seen.has(companyId)) return true
    const found = (await find(companyId)).length > 0
    if (found && !inRequestTransaction()) {
      seen.add(companyId)
    }
    return found
  }
  perDatabase.set(db, exists)
  return exists
}
