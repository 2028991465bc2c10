import type { Transaction } from 'kysely'
import type { DB } from '../db/tables.ts'
import type { Executor } from '../db/executor.ts'

export type { Executor }

export interface JobContext {
  /** The transaction the job runs in: its writes commit together with the job's completion. */
  trx: Transaction<DB>
  /** When the job was due (not when it runs). */
  runAt: Date
  now: Date
  payload: Record<string, unknown>
  key: string
  /** What the kind's `prepare` returned (registered with one), read before this transaction began. */
  prepared?: unknown
}

export type JobHandler = (ctx: JobContext) => Promise<void>

/**
 * Slow reads a job needs before it writes (a provider's API): run after the claim, outside any
 * transaction, so that they hold no connection and no lock; the handler then gets their result.
 * Thrown errors fail the job as the handler's do (retried with backoff).
 */
export type JobPreparer = (job: { payload: Record<string, unknown>; key: string }) => Promise<unknown>

export interface NewJob {
  kind: string
  key: string
  runAt: Date
  payload?: Record<string, unknown>
  /** The company whose work it is; left out for the platform's own work. Companies are served in turn. */
  companyId?: string | null
}

/** Who a job is for: a company's id, or null for the platform's own work. */
export type Lane = string | null
