import type { ColumnType } from 'kysely'

/** A company's MRR and trials on a currency and plan ('*': all plans) from the end of `day` (migration 0056). */
export interface AnalyticsMrrDaysTable {
  company_id: string
  currency_code: string
  plan_id: string
  /** YYYY-MM-DD (UTC). */
  day: ColumnType<string, string, string>
  mrr: ColumnType<number, number, number>
  prev_mrr: ColumnType<number, number, number>
  trials: number
  prev_trials: number
  had_mrr_before: boolean
}
