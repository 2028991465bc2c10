import { sql, type Kysely } from 'kysely'
import { prepared } from './prepared.ts'
import { inRequestTransaction } from './request-transaction.ts'
import { BoundedSet } from '../core/bounded-map.ts'

/** Past this many remembered companies the one remembered first goes (each entry is a 36-character id). */
const REMEMBERED_LIMIT = 200_000

const perDatabase = new WeakMap<Kysely<any>, (companyId: string) => Promise<boolean>>()

/**
 * Whether a company exists, so an unknown company is a 404 rather than an empty list. Companies are
 * never deleted, so each process remembers the ids it saw committed; one seen inside a request's own
 * transaction is not remembered, as that could still roll back.
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
