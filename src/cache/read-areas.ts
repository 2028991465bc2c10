/**
 * What each cached read shows, by table: a change to a table forgets only the answers of the reads
 * showing it. Triggers name changes by table, and test/read-cache-areas.test.ts checks every table
 * here has them. A company's existence is no area: companies are never deleted.
 */
export const CACHED_READS = {
  company: ['companies', 'subscriptions', 'plans'],
  teams: ['teams', 'team_members'],
  contracts: ['contracts', 'team_members'],
  holidays: ['holidays'],
  subsidiary_holidays: ['holidays', 'subsidiaries'],
  all_holidays: ['holidays', 'companies'],
  token_client: ['subscriptions', 'plans'],
} as const satisfies Record<string, readonly string[]>

export type CachedRead = keyof typeof CACHED_READS
export type Area = (typeof CACHED_READS)[CachedRead][number]

export const ANNOUNCED_TABLES: readonly Area[] = [...new Set(Object.values(CACHED_READS).flat())]

export function changeShowsIn(read: CachedRead, areas: readonly string[] | undefined): boolean {
  return areas === undefined || (CACHED_READS[read] as readonly string[]).some((area) => areas.includes(area))
}

/** As the triggers name it: '<company>:<table,...>', ':<table,...>' for every company, no ':' for every table. */
export interface Change {
  companyId?: string
  areas?: string[]
}

export function parseChange(payload: string): Change {
  const colon = payload.indexOf(':')
  const company = colon < 0 ? payload : payload.slice(0, colon)
  return {
    companyId: company || undefined,
    areas:
      colon < 0
        ? undefined
        : payload
            .slice(colon + 1)
            .split(',')
            .filter(Boolean),
  }
}
