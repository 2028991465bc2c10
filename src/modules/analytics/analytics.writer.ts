import type { Executor } from '../../jobs/scheduler.ts'
import type { SubscriptionAddon } from '../../db/tables.ts'
import { itemAmount } from '../billing/index.ts'
import { type MrrInput, type MrrPeriod, subscriptionMrr } from './analytics.mrr.ts'
import type { AnalyticsRepository, KeyState, SubscriptionFacts } from './analytics.repository.ts'

/** Every plan of a company on a currency, as a row's plan_id. */
export const ALL_PLANS = '*'

type Repo = Pick<
  AnalyticsRepository,
  'subscriptionsOf' | 'plansBySku' | 'addonsById' | 'couponsByCode' | 'latestByKey' | 'lastDay' | 'put' | 'remove'
>

export const utcDay = (at: Date) => at.toISOString().slice(0, 10)

/**
 * Keeps analytics_mrr_days: after a change of a company's subscriptions, in the change's
 * transaction, its MRR and trials on each currency and plan from the end of the change's day.
 * The rebuild replays the history through the same `record`, so the two give one table.
 */
export function createAnalyticsWriter(deps: { repo: Repo }) {
  const { repo } = deps

  /** Each subscription's currency, plan id, MRR and whether it is in trial; one on a plan not known, none. */
  async function priced(executor: Executor, subs: SubscriptionFacts[]) {
    const [plans, addons, coupons] = await Promise.all([
      repo.plansBySku(executor, [...new Set(subs.map((s) => s.plan_sku))]),
      repo.addonsById(executor, [...new Set(subs.flatMap((s) => s.addons.map((a) => a.id)))]),
      repo.couponsByCode(executor, [...new Set(subs.flatMap((s) => (s.coupon_code ? [s.coupon_code] : [])))]),
    ])
    return subs.flatMap((s) => {
      const plan = plans.find((p) => p.sku === s.plan_sku)
      if (!plan) return []
      const period: MrrPeriod = plan.period_unit
      const coupon = coupons.find((c) => c.code === s.coupon_code)
      const recurring =
        coupon !== undefined &&
        (coupon.duration_type === 'forever' ||
          (coupon.duration_type === 'limited_period' &&
            (s.coupon_apply_till === null ||
              s.current_term_start === null ||
              s.current_term_start.getTime() < s.coupon_apply_till.getTime())))
      // Addons recur with the plan's term, as the engine bills them.
      const input: MrrInput = {
        status: s.status,
        lines: [
          { kind: 'plan', id: plan.sku, amount: itemAmount(plan, s.plan_quantity), period },
          ...s.addons.flatMap((a) => {
            const addon = addons.find((row) => row.id === a.id)
            return addon ? [{ kind: 'addon' as const, id: a.id, amount: itemAmount(addon, a.quantity), period }] : []
          }),
        ],
        coupon: recurring && coupon ? { ...coupon, period } : null,
      }
      return [
        {
          currency: plan.currency_code,
          planId: plan.id,
          mrr: subscriptionMrr(input),
          trial: s.status === 'in_trial' ? 1 : 0,
        },
      ]
    })
  }

  /** The company's rows as its subscriptions now stand (or `subs`, the history's), from `at`'s day. */
  async function record(executor: Executor, companyId: string, at: Date, subs?: SubscriptionFacts[]) {
    // Rows are written in day order, so each row's prev_* is the row before's; a change reported
    // late (a provider's event) counts from the last day written.
    const last = await repo.lastDay(executor, companyId)
    const day = last !== null && last > utcDay(at) ? last : utcDay(at)
    const target = new Map<string, { currency: string; planId: string; mrr: number; trials: number }>()
    for (const p of await priced(executor, subs ?? (await repo.subscriptionsOf(executor, companyId)))) {
      for (const planId of [ALL_PLANS, p.planId]) {
        const k = `${p.currency}/${planId}`
        const cur = target.get(k) ?? { currency: p.currency, planId, mrr: 0, trials: 0 }
        target.set(k, { ...cur, mrr: cur.mrr + p.mrr, trials: cur.trials + p.trial })
      }
    }
    const held = new Map<string, KeyState>()
    for (const row of await repo.latestByKey(executor, companyId, day))
      held.set(`${row.currency_code}/${row.plan_id}`, row)
    for (const k of new Set([...target.keys(), ...held.keys()])) {
      const row = held.get(k)
      const next = target.get(k)
      const [currency, planId] = next ? [next.currency, next.planId] : [row!.currency_code, row!.plan_id]
      const onDay = row?.day === day
      const before = !row
        ? { mrr: 0, trials: 0, had: false }
        : onDay
          ? { mrr: row.prev_mrr, trials: row.prev_trials, had: row.had_mrr_before }
          : { mrr: row.mrr, trials: row.trials, had: row.had_mrr_before || row.prev_mrr > 0 || row.mrr > 0 }
      const after = { mrr: next?.mrr ?? 0, trials: next?.trials ?? 0 }
      const key = { currency_code: currency, plan_id: planId, day }
      if (after.mrr === before.mrr && after.trials === before.trials) {
        if (onDay) await repo.remove(executor, companyId, key)
        continue
      }
      await repo.put(executor, companyId, {
        ...key,
        mrr: after.mrr,
        prev_mrr: before.mrr,
        trials: after.trials,
        prev_trials: before.trials,
        had_mrr_before: before.had,
      })
    }
  }

  return { record }
}

export type AnalyticsWriter = ReturnType<typeof createAnalyticsWriter>

const TRACKED = ['status', 'plan_sku', 'plan_quantity', 'addons', 'coupon_code', 'current_term_start'] as const
const asDate = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string))

/**
 * A subscription's states after each of its events, oldest first, from its row now: each event's
 * `changes` hold the value before, so the walk goes back from the newest.
 */
export function statesFromHistory(
  now: SubscriptionFacts,
  events: { details: Record<string, unknown> }[],
): SubscriptionFacts[] {
  const states: SubscriptionFacts[] = new Array(events.length)
  let state = now
  for (let i = events.length - 1; i >= 0; i--) {
    states[i] = state
    const changes = (events[i]!.details.changes ?? {}) as Record<string, [unknown, unknown]>
    const prior: SubscriptionFacts = { ...state }
    for (const column of TRACKED) {
      if (!(column in changes)) continue
      const was = changes[column]![0]
      if (column === 'current_term_start') prior.current_term_start = asDate(was)
      else if (column === 'addons') prior.addons = (was ?? []) as SubscriptionAddon[]
      else (prior as unknown as Record<string, unknown>)[column] = was
    }
    if ('coupon_apply_till' in changes) prior.coupon_apply_till = asDate(changes.coupon_apply_till![0])
    state = prior
  }
  return states
}
