import type { ColumnType } from 'kysely'

/** Column types shared by the tables: what a select returns, and what an insert and an update accept. */
export type Timestamp = ColumnType<Date, Date | string, Date | string>
export type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>
export type Json<T> = ColumnType<T, string, string>
export type JsonWithDefault<T> = ColumnType<T, string | undefined, string>
export type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>
