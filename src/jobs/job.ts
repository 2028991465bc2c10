import type { Kysely, Transaction } from 'kysely'
import type { DB } from '../db/tables.ts'

export type Executor = Kysely<DB> | Transaction<DB>

export interface JobContext {
  /** The transaction the job runs in: its writes commit together with the job's completion. */
  trx: Transaction<DB>
  /** When the job was due (not when it runs). */
  runAt: Date
  now: Date
  payload: Record<string, unknown>
  key: string
  /**
   * Runs `work` once the job's transaction has committed, outside it and outside the pass: for
   * what must not hold a transaction or delay the next job (an HTTP call to a webhook receiver).
   * Dropped if the job fails. Its outcome is the work's own to record.
   */
  afterCommit(work: () => Promise<unknown>): void
  /**
   * Runs `undo` if the job's writes do not commit (the handler threw, or the commit failed): to
   * give back what the handler took in this process's memory for its afterCommit work.
   */
  onAbort(undo: () => void): void
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
