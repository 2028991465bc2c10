import fs from 'node:fs'
import path from 'node:path'
import { createHash, randomBytes } from 'node:crypto'
import pg from 'pg'
import { PGlite } from '@electric-sql/pglite'
import { Kysely, PostgresDialect } from 'kysely'
import { createDatabase, type Database, type Engine } from '../../src/db/database.ts'
import { createPgConfig } from '@electric-sql/pglite/node-postgres'
import { migrate, readMigrations } from '../../src/db/migrate.ts'
import { selectedEngines } from './engine-selection.mjs'

/**
 * Test databases start from a migrated template, so a test file pays neither initdb nor the
 * migrations: PGlite loads a dumped data directory, PostgreSQL copies a template database.
 * Both templates are keyed by the migrations' content and rebuilt when they change.
 */

/**
 * PGlite always; PostgreSQL too when TEST_DATABASE_URL is set. TEST_ENGINES narrows it
 * (`pglite`, `postgres`): CI runs the other Node lines on one engine each (.ci/run).
 */
export const engines: Engine[] = selectedEngines().filter((e) => e === 'pglite' || process.env.TEST_DATABASE_URL)

const migrationsHash = createHash('sha256')
  .update(
    readMigrations()
      .map((m) => m.version + m.sql)
      .join('\n'),
  )
  .digest('hex')
  .slice(0, 12)
const cacheDir = path.resolve('node_modules/.cache/company-admin-api')

export async function openTestDatabase(engine: Engine, poolSize = 10): Promise<Database & { drop(): Promise<void> }> {
  if (engine === 'pglite') {
    const database = await createDatabase({ pgliteDump: await pgliteTemplate() })
    return { ...database, drop: async () => {} }
  }
  const url = process.env.TEST_DATABASE_URL
  if (!url) throw new Error('TEST_DATABASE_URL is not set')
  let template = await postgresTemplate(url)
  const name = `cai_t_${process.pid}_${randomBytes(4).toString('hex')}`
  await withAdmin(url, async (admin) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`)
        return
      } catch (err) {
        const message = (err as Error).message
        // Two files copying the template at the same instant: one waits and tries again. A run of
        // other migrations on the same server (another checkout) dropped it as stale: built again.
        const busy = /being accessed by other users/.test(message)
        const dropped = /template database .* does not exist/.test(message)
        if (attempt >= 20 || !(busy || dropped)) throw err
        if (dropped) template = await postgresTemplate(url)
        else await new Promise((r) => setTimeout(r, 100 + Math.random() * 200))
      }
    }
  })
  const database = await createDatabase({ databaseUrl: withDatabase(url, name), poolSize })
  return {
    ...database,
    async drop() {
      await withAdmin(url, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
    },
  }
}

export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

async function withAdmin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

async function pgliteTemplate(): Promise<Blob> {
  const file = path.join(cacheDir, `pglite-${migrationsHash}.tar.gz`)
  if (!fs.existsSync(file)) {
    const pglite = new PGlite()
    await pglite.waitReady
    // The way the service reaches PGlite (src/db/database.ts): node-postgres over PGlite's adapter.
    const db = new Kysely<any>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ ...createPgConfig(pglite), max: 1 }) }),
    })
    await migrate(db)
    await db.destroy()
    const dump = await pglite.dumpDataDir('gzip')
    await pglite.close()
    fs.mkdirSync(cacheDir, { recursive: true })
    // Written aside then renamed: a file running at the same time never reads half a template.
    const partial = `${file}.${process.pid}.partial`
    fs.writeFileSync(partial, Buffer.from(await dump.arrayBuffer()))
    fs.renameSync(partial, file)
  }
  return new Blob([fs.readFileSync(file)])
}

/** Every PostgreSQL server has it; the templates' lock is taken there (postgresTemplate). */
const MAINTENANCE_DATABASE = 'postgres'

/**
 * The migrated template on the server of `url`, built once. `family` is its name's prefix: only
 * templates of that family are dropped as stale (a test builds a fresh family of its own).
 */
export async function postgresTemplate(url: string, family = 'cai_tpl'): Promise<string> {
  const name = `${family}_${migrationsHash}`
  // Advisory locks are per database: taken on TEST_DATABASE_URL's, two checkouts (or two runs)
  // with different databases on one server would both build `<name>_build` at once and drop or
  // collide with each other's. Every checkout locks, and administers the templates, on the
  // server's maintenance database, so the lock is effectively server-wide.
  await withAdmin(withDatabase(url, MAINTENANCE_DATABASE), async (admin) => {
    await admin.query('SELECT pg_advisory_lock(72410002)')
    try {
      const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
      if (exists.rowCount) return
      const building = `${name}_build`
      await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`)
      await admin.query(`CREATE DATABASE ${building}`)
      const database = await createDatabase({ databaseUrl: withDatabase(url, building), poolSize: 1 })
      await migrate(database.db)
      await database.close()
      await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`)
      // Templates of older migrations are no use any more; one still being copied stays.
      const stale = await admin.query(
        `SELECT datname FROM pg_database WHERE datname LIKE $2 AND datname NOT LIKE '%\\_build' AND datname <> $1`,
        [name, `${family.replaceAll('_', '\\_')}\\_%`],
      )
      for (const row of stale.rows) await admin.query(`DROP DATABASE IF EXISTS ${row.datname}`).catch(() => {})
    } finally {
      await admin.query('SELECT pg_advisory_unlock(72410002)')
    }
  })
  return name
}
