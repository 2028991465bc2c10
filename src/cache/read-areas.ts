/**
 * What each cached read shows, by table: the one place that says it. A change to a table forgets
 * the cached answers of the reads that show it, and only those (src/cache/read-cache.ts). The
 * tables' triggers announce and record a change under the table's own name (TG_TABLE_NAME,
 * migration 0031), so an area is a table's name; test/read-cache-areas.test.ts checks that every
 * table named here is announced and recorded. A read that starts to show another table adds it
 * here, and a migration gives that table the triggers (the test fails until it does).
 *
 * A company's existence is not an area: a company is never deleted (src/db/company-exists.ts),
 * and an answer for a company that does not exist (404) is never kept.
 */
export const CACHED_READS = {
  /** GET /companies/:id: the company, its subscription, the plan's features. */
  company: ['companies', 'subscriptions', 'plans'],
  /** GET /companies/:id/teams, whole: the teams and their leaders. */
  teams: ['teams', 'team_members'],
  /** GET /companies/:id/contracts (any page, any filter): the contracts and their team_ids. */
  contracts: ['contracts', 'team_members'],
  /** GET /companies/:id/holidays: the company-wide holidays as defined. */
  holidays: ['holidays'],
  /** GET /companies/:id/subsidiaries/:sid/holidays: the subsidiary's holidays (404 for a subsidiary not the company's). */
  subsidiary_holidays: ['holidays', 'subsidiaries'],
  /** GET /companies/:id/all_holidays: the year's holidays, and the public ones of the company's country and province in its time zone. */
  all_holidays: ['holidays', 'companies'],
  /** The token endpoint's client (src/modules/oauth/oauth.token-clients.ts): its company's subscription and plan. */
  token_client: ['subscriptions', 'plans'],
} as const satisfies Record<string, readonly string[]>

export type CachedRead = keyof typeof CACHED_READS
/** A table some cached read shows. */
export type Area = (typeof CACHED_READS)[CachedRead][number]

/** Every table some cached read shows: each must be announced and recorded by its triggers. */
export const ANNOUNCED_TABLES: readonly Area[] = [...new Set(Object.values(CACHED_READS).flat())]

/** Whether a change of `areas` (undefined: any) shows in `read`. */
export function changeShowsIn(read: CachedRead, areas: readonly string[] | undefined): boolean {
  return areas === undefined || (CACHED_READS[read] as readonly string[]).some((area) => areas.includes(area))
}

/**
 * A change as the triggers name it, announce it and record it: '<company>:<table,...>' for some
 * tables of one company, ':<table,...>' for some tables of every company; without ':', every
 * table ('' every company).
 */
export interface Change { companyId?: string; areas?: string[] }

export function parseChange(payload: string): Change {
  const colon = payload.indexOf(':')
  const company = colon < 0 ? payload : payload.slice(0, colon)
  return {
    companyId: company || undefined,
    areas: colon < 0 ? undefined : payload.slice(colon + 1).split(',').filter(Boolean),
  }
}
