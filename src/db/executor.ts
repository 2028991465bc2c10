import type { Kysely, Transaction } from 'kysely'
import type { DB } from './tables.ts'

/** Where a repository's statement runs: the pool, or a transaction it is part of (a job's, a request's). */
export type Executor = Kysely<DB> | Transaction<DB>
