/** Revenue analytics: the MRR arithmetic, the derived table's writer and its rebuild. */
export { subscriptionMrr, type MrrInput, type MrrLine, type MrrCoupon, type MrrPeriod } from './analytics.mrr.ts'
export { createAnalyticsWriter, type AnalyticsWriter } from './analytics.writer.ts'
export { rebuildAnalytics } from './analytics.rebuild.ts'
