import type { Insertable } from 'kysely'
import type { Executor } from '../../jobs/scheduler.ts'
import type { SubscriptionEventsTable, SubscriptionsTable } from '../../db/tables.ts'

/** The SQL of subscriptions and their event history. */
export function createSubscriptionsRepository() {
  return {
    insert: (executor: Executor, subscription: Insertable<SubscriptionsTable>) =>
      executor.insertInto('subscriptions').values(subscription).returningAll().executeTakeFirstOrThrow(),
    findByCompany: (executor: Executor, companyId: string) =>
      executor.selectFrom('subscriptions').selectAll().where('company_id', '=', companyId).executeTakeFirst(),
    insertEvent: (executor: Executor, event: Insertable<SubscriptionEventsTable>) =>
      executor.insertInto('subscription_events').values(event).execute(),
  }
}

export type SubscriptionsRepository = ReturnType<typeof createSubscriptionsRepository>
