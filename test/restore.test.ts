import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { buildApp } from '../src/app.ts'
import { loadConfig, type Config } from '../src/config.ts'
import { withDatabase } from './helpers/databases.ts'
import { requires } from './helpers/requires.ts'

/**
 * The restore procedures of docs/operations.md ("Backups and restore"), followed step by step:
 * data written, backed up, the database lost, restored, and the same requests answer the same.
 */
const ADMIN = { client_id: 'restore-admin', client_secret: 'restore-admin-secret-0123456789' }

async function service(settings: Partial<Config>) {
  const config = loadConfig(
    {},
    {
      LOG_LEVEL: 'silent',
      SCHEDULER_ENABLED: false,
      RATE_LIMIT_MAX: 0,
      SHED_EVENT_LOOP_DELAY_MS: 0,
      ADMIN_CLIENT_ID: ADMIN.client_id,
      ADMIN_CLIENT_SECRET: ADMIN.client_secret,
      ...settings,
    },
  )
  const app = await buildApp({ config, logger: false })
  await app.services.oauth.ensureAdminClient({ id: ADMIN.client_id, secret: ADMIN.client_secret })
  await app.ready()
  const token = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    payload: { grant_type: 'client_credentials', ...ADMIN },
  })
  assert.equal(token.statusCode, 200, token.body)
  const headers = { authorization: `Bearer ${token.json().access_token}` }
  return {
    app,
    async write() {
      const plan = {
        sku: 'restore-pro',
        name: 'Pro',
        price: 29.9,
        plan_family: 'core',
        period_unit: 'month',
        features: ['stamping'],
      }
      const res = await app.inject({ method: 'POST', url: '/api/v1/subscription/plans', headers, payload: { plan } })
      assert.equal(res.statusCode, 202, res.body)
    },
    /** What the data answers: the plans, and the token endpoint with the stored secret. */
    async read() {
      const plans = await app.inject({ url: '/api/v1/subscription/plans', headers })
      assert.equal(plans.statusCode, 200)
      return plans.json()
    },
  }
}

describe('restore on pglite', () => {
  it('a copy of the data directory taken while stopped brings back the same data', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cai-restore-'))
    const backup = fs.mkdtempSync(path.join(os.tmpdir(), 'cai-backup-'))
    try {
      const first = await service({ DATA_DIR: dataDir })
      await first.write()
      const before = await first.read()
      assert.equal(before.length, 1)
      await first.app.close()
      // Backup (stopped), loss, restore: the commands of docs/operations.md.
      execFileSync('tar', ['-C', dataDir, '-czf', path.join(backup, 'backup.tgz'), 'pgdata'])
      fs.rmSync(path.join(dataDir, 'pgdata'), { recursive: true })
      execFileSync('tar', ['-C', dataDir, '-xzf', path.join(backup, 'backup.tgz')])
      const restored = await service({ DATA_DIR: dataDir })
      try {
        assert.deepEqual(await restored.read(), before)
      } finally {
        await restored.app.close()
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true })
      fs.rmSync(backup, { recursive: true, force: true })
    }
  })
})

describe('restore on postgres', () => {
  it('pg_dump, the database dropped, pg_restore into a new one: the same data', requires('postgres'), async () => {
    const admin = process.env.TEST_DATABASE_URL!
    const name = `cai_restore_${process.pid}`
    const dumpFile = path.join(os.tmpdir(), `cai-restore-${process.pid}.dump`)
    const sql = async (text: string) => {
      const client = new pg.Client({ connectionString: admin })
      await client.connect()
      try {
        await client.query(text)
      } finally {
        await client.end()
      }
    }
    await sql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await sql(`CREATE DATABASE ${name}`)
    const url = withDatabase(admin, name)
    try {
      const first = await service({ DATABASE_URL: url })
      await first.write()
      const before = await first.read()
      await first.app.close()
      execFileSync('pg_dump', ['--format=custom', '--no-owner', `--file=${dumpFile}`, url])
      await sql(`DROP DATABASE ${name} WITH (FORCE)`)
      await sql(`CREATE DATABASE ${name}`)
      execFileSync('pg_restore', ['--no-owner', '--exit-on-error', `--dbname=${url}`, dumpFile])
      const restored = await service({ DATABASE_URL: url })
      try {
        assert.deepEqual(await restored.read(), before)
      } finally {
        await restored.app.close()
      }
    } finally {
      fs.rmSync(dumpFile, { force: true })
      await sql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    }
  })
})
