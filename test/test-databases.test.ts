import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { sql } from 'kysely'
import { readMigrations } from '../src/db/migrate.ts'
import { openTestDatabase, postgresTemplate, withDatabase } from './helpers/databases.ts'
import { requires } from './helpers/requires.ts'

/**
 * The test helpers' PostgreSQL template (test/helpers/databases.ts). Two checkouts, or two runs,
 * share one server with a TEST_DATABASE_URL each: they must not build the same template at once.
 */

async function onServer<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/** What every test file starts from: a database with every migration applied. */
async function appliedVersions(engine: 'pglite' | 'postgres'): Promise<string[]> {
  const database = await openTestDatabase(engine)
  try {
    return (
      await sql<{ version: string }>`SELECT version FROM schema_migrations ORDER BY version`.execute(database.db)
    ).rows.map((r) => r.version)
  } finally {
    await database.close()
    await database.drop()
  }
}

describe('the test template on pglite', () => {
  it('opens a database with every migration applied', async () => {
    assert.deepEqual(
      await appliedVersions('pglite'),
      readMigrations().map((m) => m.version),
    )
  })
})

describe('the test template on postgres', () => {
  it('opens a database with every migration applied', requires('postgres'), async () => {
    assert.deepEqual(
      await appliedVersions('postgres'),
      readMigrations().map((m) => m.version),
    )
  })

  it(
    'is built once when two checkouts with different databases ask for it at the same time',
    requires('postgres'),
    async () => {
      const url = process.env.TEST_DATABASE_URL!
      // A family of its own: a fresh template (not built yet), and the real ones are not its stale ones.
      const family = `cai_race_${randomBytes(4).toString('hex')}`
      // The other checkout's TEST_DATABASE_URL: another database on the same server.
      const other = `cai_raceother_${randomBytes(4).toString('hex')}`
      await onServer(url, (c) => c.query(`CREATE DATABASE ${other}`))
      try {
        const results = await Promise.allSettled([
          postgresTemplate(url, family),
          postgresTemplate(withDatabase(url, other), family),
        ])
        const failures = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : []))
        assert.deepEqual(failures, [])
        const names = results.map((r) => (r as PromiseFulfilledResult<string>).value)
        assert.equal(names[0], names[1])
        const found = await onServer(url, (c) =>
          c.query('SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY 1', [`${family}%`]),
        )
        assert.deepEqual(
          found.rows.map((r) => r.datname),
          [names[0]],
        )
      } finally {
        await onServer(url, async (c) => {
          const left = await c.query('SELECT datname FROM pg_database WHERE datname LIKE $1 OR datname = $2', [
            `${family}%`,
            other,
          ])
          for (const row of left.rows) await c.query(`DROP DATABASE IF EXISTS ${row.datname} WITH (FORCE)`)
        })
      }
    },
  )
})
