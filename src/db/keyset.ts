import { sql, type Kysely, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely'
import { prepared } from './prepared.ts'

/**
 * Keyset paging for repositories: WHERE (key) > (cursor) walks the list's index, so a deep page
 * costs what the first does, unlike OFFSET. limit + 1 rows tell whether another page follows.
 */
export interface SortColumn {
  column: string
  desc?: boolean
  /** A timestamp travels as text to keep its microseconds. */
  cast?: 'timestamptz' | 'uuid' | 'date'
}

export interface KeysetPage {
  limit?: number
  after?: ReadonlyArray<string | number>
}

export function keyset<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  order: readonly SortColumn[],
  page: KeysetPage | undefined,
): SelectQueryBuilder<DB, TB, O> {
  let q = query
  if (page?.after) q = q.where(after(order, page.after))
  for (const { column, desc } of order) q = q.orderBy(sql.ref(column), desc ? 'desc' : 'asc')
  if (page?.limit !== undefined) q = q.limit(page.limit + 1)
  return q
}

/**
 * A list without filters compiled once: each page shape is one SQL text whatever the company and
 * cursor. Answers undefined for what it does not cover; the caller then builds the query.
 */
export function preparedPages<O>(
  db: Kysely<any>,
  order: readonly SortColumn[],
  list: (scope: string) => SelectQueryBuilder<any, any, O>,
) {
  const whole = prepared(db, (scope: string) => keyset(list(scope), order, undefined))
  const first = prepared(db, (scope: string, rows: number) => keyset(list(scope), order, undefined).limit(rows))
  const next = prepared(db, (scope: string, rows: number, ...key: Array<string | number>) =>
    keyset(list(scope), order, { after: key }).limit(rows),
  )
  return (scope: string, page: KeysetPage): Promise<O[]> | undefined => {
    if (!page.after) return page.limit === undefined ? whole(scope) : first(scope, page.limit + 1)
    return page.limit !== undefined && page.after.length === order.length
      ? next(scope, page.limit + 1, ...page.after)
      : undefined
  }
}

// One direction: a row comparison, answered from the index. Mixed directions: the expanded form.
export function after(order: readonly SortColumn[], values: ReadonlyArray<string | number>): RawBuilder<SqlBool> {
  const value = (i: number) => {
    const cast = order[i]!.cast
    return cast ? sql`${values[i]}::${sql.raw(cast)}` : sql`${values[i]}`
  }
  const refs = order.map(({ column }) => sql.ref(column))
  if (order.every((c) => c.desc === order[0]!.desc)) {
    const op = sql.raw(order[0]!.desc ? '<' : '>')
    return sql<SqlBool>`(${sql.join(refs)}) ${op} (${sql.join(order.map((_, i) => value(i)))})`
  }
  const alternatives = order.map((column, i) => {
    const equal = refs.slice(0, i).map((ref, j) => sql`${ref} = ${value(j)}`)
    const beyond = sql`${refs[i]} ${sql.raw(column.desc ? '<' : '>')} ${value(i)}`
    return sql`(${sql.join([...equal, beyond], sql` AND `)})`
  })
  return sql<SqlBool>`(${sql.join(alternatives, sql` OR `)})`
}

/** `text` as an ILIKE pattern matching it literally anywhere. */
export const containing = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
