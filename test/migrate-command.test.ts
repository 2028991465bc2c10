import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { readMigrations } from '../src/db/migrate.ts'
import { withDatabase } from './helpers/databases.ts'
import { requires } from './helpers/requires.ts'
import { freePort } from './helpers/server-process.ts'

/** `npm run migrate` (scripts/migrate.ts): the deploy step that migrates and exits (docs/operations.md). */
const ROOT = path.resolve(import.meta.dirname, '..')
const total = readMigrations().length

async function migrateCommand(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/migrate.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const { code, stdout, stderr } = err as { code: number; stdout: string; stderr: string }
    return { code, stdout, stderr }
  }
}

describe('npm run migrate on pglite', () => {
  it('applies every migration to a new data directory and exits; a second run finds nothing to do', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cai-migrate-'))
    try {
      const first = await migrateCommand({ DATA_DIR: dataDir })
      assert.equal(first.code, 0, first.stderr)
      assert.match(first.stdout, new RegExp(`^Applied ${total} migration\\(s\\): 0001_`))
      const second = await migrateCommand({ DATA_DIR: dataDir })
      assert.equal(second.code, 0, second.stderr)
      assert.equal(second.stdout, `Nothing to apply: the database is current (${total} migrations).\n`)
      // The lock is released: the service may start on the directory now.
      assert.equal(fs.existsSync(path.join(dataDir, '.lock')), false)
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('npm run migrate on postgres', () => {
  it(
    'applies every migration to a new database and exits; a second run finds nothing to do',
    requires('postgres'),
    async () => {
      const admin = process.env.TEST_DATABASE_URL!
      const name = `cai_migrate_${process.pid}`
      const client = new pg.Client({ connectionString: admin })
      await client.connect()
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name}`)
        await client.query(`CREATE DATABASE ${name}`)
        const url = withDatabase(admin, name)
        const first = await migrateCommand({ DATABASE_URL: url })
        assert.equal(first.code, 0, first.stderr)
        assert.match(first.stdout, new RegExp(`^Applied ${total} migration\\(s\\)`))
        const check = new pg.Client({ connectionString: url })
        await check.connect()
        const { rows } = await check.query('SELECT count(*)::int AS n FROM schema_migrations')
        await check.end()
        assert.equal(rows[0].n, total)
        const second = await migrateCommand({ DATABASE_URL: url })
        assert.equal(second.code, 0, second.stderr)
        assert.match(second.stdout, /^Nothing to apply/)
      } finally {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        await client.end()
      }
    },
  )
})

describe('npm run migrate, refused', () => {
  it('an unreachable server exits 1 with a sentence naming DATABASE_URL', async () => {
    const port = await freePort()
    const run = await migrateCommand({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x` })
    assert.equal(run.code, 1)
    assert.match(run.stderr, /^Could not connect to the PostgreSQL server of DATABASE_URL/)
  })
})
