import type { Kysely } from 'kysely'
import { ValidationError } from '../../core/errors.ts'
import type { DB } from '../../db/tables.ts'
import type { AnalyticsRepository, DayRow } from './analytics.repository.ts'
import { ALL_PLANS } from './analytics.writer.ts'

/**
 * MRR series and the summary (decisions §9.4) from analytics_mrr_days: the totals at the day
 * before the range in one aggregate, then only the rows of the range, netted per company between
 * consecutive points, so every point reconciles with the one before.
 */

export type Interval = 'day' | 'week' | 'month'
export const MAX_POINTS = 1000
const DAY_MS = 86_400_000

export interface Movements {
  new: number
  expansion: number
  contraction: number
  churn: number
  reactivation: number
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
function parseDay(value: string, field: string): number {
  const m = DATE.exec(value)
  const t = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : Number.NaN
  if (!m || Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== value)
    throw new ValidationError(`${field} must be a date YYYY-MM-DD, got ${value}`)
  return t
}
const dayOf = (t: number) => new Date(t).toISOString().slice(0, 10)

/** The points' days from `from` to `to`: each day, each Sunday or each month's last day; `to` last. */
export function pointsOf(from: number, to: number, interval: Interval): string[] {
  const points: string[] = []
  let t = from
  if (interval === 'week') t = from + ((7 - new Date(from).getUTCDay()) % 7) * DAY_MS
  if (interval === 'month') t = Date.UTC(new Date(from).getUTCFullYear(), new Date(from).getUTCMonth() + 1, 0)
  while (t < to && points.length <= MAX_POINTS) {
    points.push(dayOf(t))
    if (interval === 'month') {
      const d = new Date(t)
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 2, 0)
    } else t += (interval === 'week' ? 7 : 1) * DAY_MS
  }
  points.push(dayOf(to))
  return points
}

const halfUp = (num: number, den: number) => (den === 0 ? 0 : Math.floor((2 * num + den) / (2 * den)))
const rate = (num: number, den: number) => (den === 0 ? null : Math.round((num / den) * 10_000) / 10_000)

/** A company's MRR a before the first of `rows` and b after the last: its movement. */
function movementOf(first: DayRow, last: DayRow): { kind: keyof Movements; amount: number } | null {
  const [a, b] = [first.prev_mrr, last.mrr]
  if (a === b) return null
  if (a === 0) return { kind: first.had_mrr_before ? 'reactivation' : 'new', amount: b }
  if (b === 0) return { kind: 'churn', amount: a }
  return b > a ? { kind: 'expansion', amount: b - a } : { kind: 'contraction', amount: a - b }
}

function byCompany(rows: DayRow[]): DayRow[][] {
  const groups: DayRow[][] = []
  for (const row of rows) {
    const group = groups.at(-1)
    if (group && group[0]!.company_id === row.company_id) group.push(row)
    else groups.push([row])
  }
  return groups
}

export function createAnalyticsService(deps: {
  db: Kysely<DB>
  repo: Pick<AnalyticsRepository, 'totalsAt' | 'rowsBetween' | 'planExists'>
  currency: string
}) {
  const { db, repo } = deps

  async function keyOf(query: { currency_code?: string; plan_id?: string }) {
    if (query.plan_id !== undefined && !(await repo.planExists(db, query.plan_id)))
      throw new ValidationError(`plan_id names no plan: ${query.plan_id}`)
    return { currency: query.currency_code ?? deps.currency, planId: query.plan_id ?? ALL_PLANS }
  }

  return {
    /** GET /api/v1/analytics/mrr */
    async mrr(query: { from: string; to: string; interval?: Interval; currency_code?: string; plan_id?: string }) {
      const interval = query.interval ?? 'day'
      const [from, to] = [parseDay(query.from, 'from'), parseDay(query.to, 'to')]
      if (from > to) throw new ValidationError(`from (${query.from}) must not be after to (${query.to})`)
      const points = pointsOf(from, to, interval)
      if (points.length > MAX_POINTS)
        throw new ValidationError(`from and to span more than ${MAX_POINTS} points by ${interval}`)
      const key = await keyOf(query)
      const before = dayOf(from - DAY_MS)
      const [start, rows] = await Promise.all([
        repo.totalsAt(db, key, before),
        repo.rowsBetween(db, key, before, query.to),
      ])
      const zero = (): Movements => ({ new: 0, expansion: 0, contraction: 0, churn: 0, reactivation: 0 })
      const moves = points.map(zero)
      const customers = points.map(() => 0)
      for (const group of byCompany(rows)) {
        let i = 0
        while (i < group.length) {
          // The point whose bucket holds this row: the first on or after its day.
          let lo = 0
          let hi = points.length - 1
          while (lo < hi) {
            const mid = (lo + hi) >> 1
            if (points[mid]! < group[i]!.day) lo = mid + 1
            else hi = mid
          }
          let j = i
          while (j + 1 < group.length && group[j + 1]!.day <= points[lo]!) j++
          const move = movementOf(group[i]!, group[j]!)
          if (move) moves[lo]![move.kind] += move.amount
          customers[lo]! += Number(group[j]!.mrr > 0) - Number(group[i]!.prev_mrr > 0)
          i = j + 1
        }
      }
      let mrr = start.mrr
      let count = start.customers
      return {
        currency_code: key.currency,
        interval,
        points: points.map((date, i) => {
          const m = moves[i]!
          const net = m.new + m.expansion + m.reactivation - m.contraction - m.churn
          mrr += net
          count += customers[i]!
          return {
            date,
            mrr,
            arr: 12 * mrr,
            customers: count,
            arpa: halfUp(mrr, count),
            movements: m,
            net_new_mrr: net,
          }
        }),
      }
    },

    /** GET /api/v1/analytics/summary */
    async summary(query: { date: string; currency_code?: string; plan_id?: string }) {
      const at = parseDay(query.date, 'date')
      const key = await keyOf(query)
      const then = dayOf(at - 30 * DAY_MS)
      const [base, now, rows] = await Promise.all([
        repo.totalsAt(db, key, then),
        repo.totalsAt(db, key, query.date),
        repo.rowsBetween(db, key, then, query.date),
      ])
      let churned = 0
      let lost = 0
      let kept = base.mrr
      for (const group of byCompany(rows)) {
        const [a, b] = [group[0]!.prev_mrr, group.at(-1)!.mrr]
        if (a > 0 && b === 0) churned++
        if (b < a) lost += a - b
        if (a > 0) kept += b - a
      }
      return {
        date: query.date,
        currency_code: key.currency,
        mrr: now.mrr,
        arr: 12 * now.mrr,
        customers: now.customers,
        arpa: halfUp(now.mrr, now.customers),
        trials: now.trials,
        customer_churn_rate: rate(churned, base.customers),
        revenue_churn_rate: rate(lost, base.mrr),
        net_revenue_retention: rate(kept, base.mrr),
      }
    },
  }
}

export type AnalyticsService = ReturnType<typeof createAnalyticsService>
