import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql, type Kysely } from 'kysely'
import { withStatementTimeout } from './database.ts'

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations')
// Any constant: it only keeps two starting instances from migrating at the same time.
const MIGRATION_LOCK = 72_410_001

export interface Migration {
  version: string
  sql: string
}

let cached: Migration[] | undefined

export function readMigrations(): Migration[] {
  return (cached ??= fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: f.replace(/\.sql$/, ''), sql: fs.readFileSync(path.join(MIGRATIONS_DIR, f), 'utf8') })))
}

/**
 * Applies pending migrations in order, each in its own transaction, with no statement bound.
 * `currencyCode` is the currency of prices stored without one (`company_admin.currency_code`).
 */
export function migrate(db: Kysely<any>, options: { currencyCode?: string } = {}): Promise<string[]> {
  return withStatementTimeout(0, () => migrateUnbounded(db, options))
}

async function migrateUnbounded(db: Kysely<any>, options: { currencyCode?: string }): Promise<string[]> {
  const applied: string[] = []
  const { currencyCode } = options
  // Inlined into the migration's text, so it must be the three letters a code is, nothing else.
  if (currencyCode !== undefined && !/^[A-Z]{3}$/.test(currencyCode))
    throw new Error(`migrate: currencyCode must be an ISO 4217 code, not ${JSON.stringify(currencyCode)}`)
  const settings =
    currencyCode === undefined ? '' : `SELECT set_config('company_admin.currency_code', '${currencyCode}', true);\n`
  await db.connection().execute(async (conn) => {
    await sql`SET statement_timeout = 0`.execute(conn)
    await sql`SELECT pg_advisory_lock(${MIGRATION_LOCK})`.execute(conn)
    try {
      await sql`CREATE TABLE IF NOT EXISTS schema_migrations (
        version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`.execute(conn)
      const done = new Set(
        (await sql<{ version: string }>`SELECT version FROM schema_migrations`.execute(conn)).rows.map(
          (r) => r.version,
        ),
      )
      for (const migration of readMigrations()) {
        if (done.has(migration.version)) continue
        await sql
          .raw(
            `BEGIN;\n${settings}${migration.sql}\n;INSERT INTO schema_migrations (version) VALUES ` +
              `('${migration.version}');\nCOMMIT;`,
          )
          .execute(conn)
          .catch(async (err) => {
            await sql
              .raw('ROLLBACK')
              .execute(conn)
              .catch(() => {})
            throw new Error(`Migration ${migration.version} failed: ${(err as Error).message}`)
          })
        applied.push(migration.version)
      }
    } finally {
      await sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.execute(conn)
      // Back to the pool's bound, for whoever has the connection next.
      await sql`RESET statement_timeout`.execute(conn)
    }
  })
  return applied
}

/** True when every migration in the repository has been applied (readiness). */
export async function migrationsApplied(db: Kysely<any>): Promise<boolean> {
  const rows = (await sql<{ version: string }>`SELECT version FROM schema_migrations`.execute(db)).rows
  const done = new Set(rows.map((r) => r.version))
  return readMigrations().every((m) => done.has(m.version))
}
