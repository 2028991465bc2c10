/**
 * A page of a list as services and repositories see it: what was asked (`Page`), what was read
 * (`Paged`), and the sort key to continue after. Reading a page from a request and answering it is
 * http/pagination.ts; the SQL of keyset reads is db/keyset.ts.
 */

export interface Page {
  /** Absent: the whole list. */
  limit?: number
  /** The sort key of the last item of the previous page; absent on the first page. */
  after?: SortKey
  /** 1 on the first page. */
  number: number
}

/** A page as a repository or service read it: its items and, when more remain, the key to continue after. */
export interface Paged<T> {
  items: T[]
  next?: SortKey
}
export type SortKey = Array<string | number>

/**
 * Cuts a page out of rows read with limit + 1: the extra row only says that more remain. Used by
 * repositories on their keyset reads, and on lists merged in memory (sorted by `keyOf`).
 */
export function cutPage<T>(rows: T[], page: { limit?: number }, keyOf: (row: T) => SortKey): Paged<T> {
  if (page.limit === undefined || rows.length <= page.limit) return { items: rows }
  const items = rows.slice(0, page.limit)
  return { items, next: keyOf(items[items.length - 1]!) }
}

/**
 * A page of a list merged in memory and sorted by `keyOf` (ascending, as JavaScript compares): for lists no single
 * query sorts.
 */
export function pageInMemory<T>(
  sorted: T[],
  page: { limit?: number; after?: Readonly<SortKey> },
  keyOf: (row: T) => SortKey,
): Paged<T> {
  if (page.limit === undefined) return { items: sorted }
  const after = page.after
  const start = after ? sorted.findIndex((row) => compareKeys(keyOf(row), after) > 0) : 0
  return cutPage(start < 0 ? [] : sorted.slice(start, start + page.limit + 1), page, keyOf)
}

function compareKeys(a: Readonly<SortKey>, b: Readonly<SortKey>): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    if (x < y) return -1
    if (x > y) return 1
  }
  return 0
}
