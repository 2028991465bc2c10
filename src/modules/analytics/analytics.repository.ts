import { sql } from 'kysely'
import type { Executor } from '../../jobs/scheduler.ts'
import type { SubscriptionAddon } from '../../db/tables.ts'

// The derived table analytics_mrr_days (migration 0056), and the catalogue and subscription reads
// its writer prices a company's subscriptions with. Series read it by currency, plan and day.

/** What of a subscription its MRR depends on: its row now, or as the history had it. */
export interface SubscriptionFacts {
  status: string
  plan_sku: string
  plan_quantity: number
  addons: SubscriptionAddon[]
  coupon_code: string | null
  current_term_start: Date | null
  coupon_apply_till: Date | null
}

export interface DayRow {
  company_id: string
  day: string
  mrr: number
  prev_mrr: number
  trials: number
  prev_trials: number
  had_mrr_before: boolean
}

export interface KeyState {
  currency_code: string
  plan_id: string
  day: string
  mrr: number
  prev_mrr: number
  trials: number
  prev_trials: number
  had_mrr_before: boolean
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function createAnalyticsRepository() {
  return {
    subscriptionsOf: (executor: Executor, companyId: string): Promise<SubscriptionFacts[]> =>
      executor
        .selectFrom('subscriptions')
        .select([
          'status',
          'plan_sku',
          'plan_quantity',
          'addons',
          'coupon_code',
          'current_term_start',
          'coupon_apply_till',
        ])
        .where('company_id', '=', companyId)
        .orderBy('id')
        .execute(),
    plansBySku: (executor: Executor, skus: string[]) =>
      skus.length === 0
        ? Promise.resolve([])
        : executor
            .selectFrom('plans')
            .select(['id', 'sku', 'price_cents', 'pricing_model', 'tiers', 'period_unit', 'currency_code'])
            .where('sku', 'in', skus)
            .execute(),
    // A provider's own addon ids are not UUIDs: no match, never a malformed query.
    addonsById: (executor: Executor, ids: string[]) => {
      const ours = ids.filter((id) => UUID.test(id))
      return ours.length === 0
        ? Promise.resolve([])
        : executor
            .selectFrom('addons')
            .select(['id', 'price_cents', 'pricing_model', 'tiers'])
            .where('id', 'in', ours)
            .execute()
    },
    couponsByCode: (executor: Executor, codes: string[]) =>
      codes.length === 0
        ? Promise.resolve([])
        : executor
            .selectFrom('coupons')
            .select([
              'code',
              'discount_type',
              'discount_value_minor',
              'duration_type',
              'apply_on',
              'plan_ids',
              'addon_ids',
            ])
            .where('code', 'in', codes)
            .execute(),
    planExists: async (executor: Executor, id: string) =>
      UUID.test(id) &&
      (await executor.selectFrom('plans').select('id').where('id', '=', id).executeTakeFirst()) !== undefined,

    /** The company's newest row on each currency and plan, up to `day`; its last day of all. */
    async latestByKey(executor: Executor, companyId: string, day: string): Promise<KeyState[]> {
      const { rows } = await sql<KeyState>`
        SELECT DISTINCT ON (currency_code, plan_id)
          currency_code, plan_id, day, mrr, prev_mrr, trials, prev_trials, had_mrr_before
        FROM analytics_mrr_days
        WHERE company_id = ${companyId} AND day <= ${day}
        ORDER BY currency_code, plan_id, day DESC`.execute(executor)
      return rows
    },
    async lastDay(executor: Executor, companyId: string): Promise<string | null> {
      const row = await executor
        .selectFrom('analytics_mrr_days')
        .select((eb) => eb.fn.max('day').as('day'))
        .where('company_id', '=', companyId)
        .executeTakeFirst()
      return row?.day ?? null
    },
    async put(executor: Executor, companyId: string, row: KeyState) {
      await executor
        .insertInto('analytics_mrr_days')
        .values({ company_id: companyId, ...row })
        .onConflict((oc) =>
          oc.columns(['company_id', 'currency_code', 'plan_id', 'day']).doUpdateSet({
            mrr: row.mrr,
            prev_mrr: row.prev_mrr,
            trials: row.trials,
            prev_trials: row.prev_trials,
            had_mrr_before: row.had_mrr_before,
          }),
        )
        .execute()
    },
    async remove(executor: Executor, companyId: string, key: { currency_code: string; plan_id: string; day: string }) {
      await executor
        .deleteFrom('analytics_mrr_days')
        .where('company_id', '=', companyId)
        .where('currency_code', '=', key.currency_code)
        .where('plan_id', '=', key.plan_id)
        .where('day', '=', key.day)
        .execute()
    },

    /** MRR, customers and trials at the end of `day`: the sum of every change up to it. */
    async totalsAt(executor: Executor, key: { currency: string; planId: string }, day: string) {
      const { rows } = await sql<{
        mrr: number | string | null
        customers: number | string | null
        trials: number | string | null
      }>`
        SELECT sum(mrr - prev_mrr) AS mrr,
          sum((mrr > 0)::int - (prev_mrr > 0)::int) AS customers,
          sum(trials - prev_trials) AS trials
        FROM analytics_mrr_days
        WHERE currency_code = ${key.currency} AND plan_id = ${key.planId} AND day <= ${day}`.execute(executor)
      const row = rows[0]
      return { mrr: Number(row?.mrr ?? 0), customers: Number(row?.customers ?? 0), trials: Number(row?.trials ?? 0) }
    },
    /** The rows of days `after` < day <= `to`, by company then day. */
    rowsBetween: (executor: Executor, key: { currency: string; planId: string }, after: string, to: string) =>
      executor
        .selectFrom('analytics_mrr_days')
        .select(['company_id', 'day', 'mrr', 'prev_mrr', 'trials', 'prev_trials', 'had_mrr_before'])
        .where('currency_code', '=', key.currency)
        .where('plan_id', '=', key.planId)
        .where('day', '>', after)
        .where('day', '<=', to)
        .orderBy('company_id')
        .orderBy('day')
        .execute() as Promise<DayRow[]>,

    /** The whole table in one order, for comparing a rebuild with it. */
    everything: (executor: Executor) =>
      executor
        .selectFrom('analytics_mrr_days')
        .selectAll()
        .orderBy('company_id')
        .orderBy('currency_code')
        .orderBy('plan_id')
        .orderBy('day')
        .execute(),
    clear: (executor: Executor) => executor.deleteFrom('analytics_mrr_days').execute(),
    /** Each subscription's row now and its events, newest first, to replay. */
    subscriptionsWithCompany: (executor: Executor) =>
      executor
        .selectFrom('subscriptions')
        .select([
          'company_id',
          'id',
          'status',
          'plan_sku',
          'plan_quantity',
          'addons',
          'coupon_code',
          'current_term_start',
          'coupon_apply_till',
        ])
        .orderBy('company_id')
        .execute(),
    eventsOf: (executor: Executor, companyIds: string[]) =>
      companyIds.length === 0
        ? Promise.resolve([])
        : executor
            .selectFrom('subscription_events')
            .select(['company_id', 'subscription_id', 'id', 'details', 'occurred_at'])
            .where('company_id', 'in', companyIds)
            .orderBy('company_id')
            .orderBy('id')
            .execute(),
  }
}

export type AnalyticsRepository = ReturnType<typeof createAnalyticsRepository>
