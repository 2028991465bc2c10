import type { Transaction } from 'kysely'
import type { DB } from '../db/tables.ts'
import type { Executor } from '../db/executor.ts'

export type { Executor }

export interface JobContext {
  /** Its writes commit together with the job's completion. */
  trx: Transaction<DB>
  /** When the job was due, not when it runs. */
  runAt: Date
  now: Date
  payload: Record<string, unknown>
  key: string
  prepared?: unknown
}

export type JobHandler = (ctx: JobContext) => Promise<void>

/**
 * Slow reads (a provider's API) run after the claim, outside any transaction, so they hold no
 * connection or lock. Errors fail the job as the handler's do.
 */
export type JobPreparer = (job: { payload: Record<string, unknown>; key: string }) => Promise<unknown>

export interface NewJob {
  kind: string
  key: string
  runAt: Date
  payload?: Record<string, unknown>
  /** Left out for the platform's own work. */
  companyId?: string | null
}

export type Lane = string | null
