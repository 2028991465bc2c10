import type { Kysely } from 'kysely'
import type { DB } from '../../db/tables.ts'
import type { AnalyticsRepository, SubscriptionFacts } from './analytics.repository.ts'
import { type AnalyticsWriter, statesFromHistory } from './analytics.writer.ts'

type Repo = Pick<AnalyticsRepository, 'clear' | 'subscriptionsWithCompany' | 'eventsOf'>

const BATCH = 500

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const item of items) {
    const k = key(item)
    const group = groups.get(k)
    if (group) group.push(item)
    else groups.set(k, [item])
  }
  return groups
}

/**
 * Writes analytics_mrr_days again from subscription_events, in one transaction: each company's
 * events replayed in order through the writer the live changes use. Answers the companies replayed.
 */
export async function rebuildAnalytics(deps: { db: Kysely<DB>; repo: Repo; writer: AnalyticsWriter }) {
  const { repo, writer } = deps
  return deps.db.transaction().execute(async (trx) => {
    await repo.clear(trx)
    const subscriptions = await repo.subscriptionsWithCompany(trx)
    const byCompany = groupBy(subscriptions, (s) => s.company_id)
    const companies = [...byCompany.keys()]
    for (let i = 0; i < companies.length; i += BATCH) {
      const batch = companies.slice(i, i + BATCH)
      const events = groupBy(await repo.eventsOf(trx, batch), (e) => e.company_id)
      for (const companyId of batch) {
        const own = events.get(companyId) ?? []
        const states = new Map<string, SubscriptionFacts[]>()
        for (const s of byCompany.get(companyId) ?? []) {
          const { company_id: _, id, ...facts } = s
          states.set(
            id,
            statesFromHistory(
              facts,
              own.filter((e) => e.subscription_id === id),
            ),
          )
        }
        const seen = new Map<string, number>()
        const current = new Map<string, SubscriptionFacts>()
        for (const event of own) {
          const index = seen.get(event.subscription_id) ?? 0
          seen.set(event.subscription_id, index + 1)
          const state = states.get(event.subscription_id)?.[index]
          if (!state) continue
          current.set(event.subscription_id, state)
          await writer.record(trx, companyId, event.occurred_at, [...current.values()])
        }
      }
    }
    return companies.length
  })
}
