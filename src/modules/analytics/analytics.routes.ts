import type { App } from '../../http/app-types.ts'
import type { AnalyticsService } from './analytics.service.ts'
import { MrrQuery, MrrSeries, RevenueSummary, SummaryQuery } from './analytics.schemas.ts'

const WHO = 'Platform tokens only (a company token is 403).'

const MRR = [
  'MRR, ARR, customers, ARPA and the five movements at each point from `from` to `to`: a point is the state at the',
  'end of its date (UTC) by the business clock, so a past point is what was true then and, on a test clock, a later',
  "one is what the engine did. A subscription's MRR: what it recurs at while active or non_renewing (trials, paused",
  'and cancelled count 0), plan and addons less a recurring coupon (one_time coupons and tax not counted), yearly ÷',
  '12, rounded half-up per subscription. Movements are per company between a point and the one before (the first',
  'point against the day before `from`), and reconcile: mrr − previous mrr = net_new_mrr. 400 for a malformed date,',
  '`from` after `to`, more than 1,000 points, or a plan_id naming no plan.',
  WHO,
].join(' ')

const SUMMARY = [
  'MRR, ARR, customers, ARPA and trials at the end of `date`, with customer churn, revenue churn and net revenue',
  'retention against the point 30 days before (fractions with 4 decimals, null where the base is 0). 400 for a',
  'malformed date or a plan_id naming no plan.',
  WHO,
].join(' ')

/** Revenue analytics (decisions §9.4): platform clients only. */
export async function analyticsRoutes(app: App, { service }: { service: AnalyticsService }) {
  const tags = ['Analytics']
  const config = { access: 'platform' } as const

  app.get(
    '/api/v1/analytics/mrr',
    {
      config,
      schema: {
        operationId: 'getMrrSeries',
        tags,
        summary: 'MRR and its movements over time',
        description: MRR,
        querystring: MrrQuery,
        response: { 200: MrrSeries },
      },
    },
    async (request) => service.mrr(request.query),
  )

  app.get(
    '/api/v1/analytics/summary',
    {
      config,
      schema: {
        operationId: 'getRevenueSummary',
        tags,
        summary: 'MRR, churn and net revenue retention at a day',
        description: SUMMARY,
        querystring: SummaryQuery,
        response: { 200: RevenueSummary },
      },
    },
    async (request) => service.summary(request.query),
  )
}
