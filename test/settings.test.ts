import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { loadConfig } from '../src/config.ts'
import { freePort, ready, removeBuild, startServer } from './helpers/server-process.ts'

/**
 * A bad setting stops the start of the built server with exit code 1 and a sentence naming the
 * setting on stderr (issue 18). The issue asks for a stop within 5 s; the process is given 60 s
 * before it counts as hung (a machine with a load of 40 took over 20 s to start node), while the hangs it
 * guards against (DATA_DIR=/proc/nope spun for 90 s) and a start that succeeds still do.
 */
const HUNG_AFTER_MS = 60_000

after(removeBuild)

async function refused(env: Record<string, string>, setting: RegExp) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cai-settings-'))
  try {
    const server = await startServer({ DATA_DIR: dataDir, ...env })
    const code = await server.exited(HUNG_AFTER_MS)
    assert.equal(code, 1, `exit code; stderr: ${server.stderr()}`)
    assert.match(server.stderr(), setting)
    // One sentence, not a stack trace.
    assert.doesNotMatch(server.stderr(), /^\s+at /m)
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

describe('a bad setting stops the start with a sentence naming it', () => {
  it('PUBLIC_BASE_URL that is not a URL (it used to start, then /openapi.json was a 500)', async () => {
    await refused({ PUBLIC_BASE_URL: 'not a url' }, /PUBLIC_BASE_URL "not a url" must be an absolute http\(s\) URL/)
  })

  it('DATABASE_URL that is not a URL (it used to stop with a bare getaddrinfo error)', async () => {
    await refused({ DATABASE_URL: 'notaurl' }, /DATABASE_URL must be a PostgreSQL URL/)
  })

  it('DATABASE_URL whose port is closed (it used to stop with a bare ECONNREFUSED)', async () => {
    const port = await freePort()
    await refused(
      { DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/nothing` },
      new RegExp(
        `Could not connect to the PostgreSQL server of DATABASE_URL \\(127\\.0\\.0\\.1:${port}/nothing\\): .*ECONNREFUSED`,
      ),
    )
  })

  it('DATA_DIR that cannot be created (it used to hang for 90 s, silently)', async () => {
    await refused({ DATA_DIR: '/proc/nope' }, /DATA_DIR \/proc\/nope cannot be used for the embedded database/)
  })

  it('DATA_DIR that is a file', async () => {
    const file = path.join(os.tmpdir(), `cai-settings-file-${process.pid}`)
    fs.writeFileSync(file, '')
    try {
      await refused({ DATA_DIR: file }, /DATA_DIR .* cannot be used for the embedded database: it is not a directory/)
    } finally {
      fs.rmSync(file, { force: true })
    }
  })

  it('DATA_DIR whose database folder (pgdata) is a file', async () => {
    // A new directory's database is created in a process of its own (src/db/pglite-initdb.ts).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cai-settings-pgdata-'))
    fs.writeFileSync(path.join(dir, 'pgdata'), '')
    try {
      await refused({ DATA_DIR: dir }, /DATA_DIR .* cannot be used for the embedded database: EEXIST/)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('HEADERS_TIMEOUT_MS above REQUEST_TIMEOUT_MS (it used to be accepted)', async () => {
    await refused(
      { HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' },
      /HEADERS_TIMEOUT_MS \(20000\) must not exceed REQUEST_TIMEOUT_MS \(10000\)/,
    )
  })

  it('SCHEDULER_CONCURRENCY above half of DB_POOL_SIZE on PostgreSQL (it used to be accepted up to 64)', async () => {
    const postgres = { DATABASE_URL: 'postgres://app@db.internal:5432/app' }
    await refused(
      { ...postgres, SCHEDULER_CONCURRENCY: '6' },
      /SCHEDULER_CONCURRENCY \(6\) must be at most half of DB_POOL_SIZE \(10\)/,
    )
    assert.throws(
      () => loadConfig({ ...postgres, SCHEDULER_CONCURRENCY: '7', DB_POOL_SIZE: '12' }),
      /SCHEDULER_CONCURRENCY \(7\) must be at most half of DB_POOL_SIZE \(12\)/,
    )
    assert.equal(loadConfig({ ...postgres, SCHEDULER_CONCURRENCY: '5' }).SCHEDULER_CONCURRENCY, 5)
    // PGlite runs one job at a time whatever the setting; a disabled scheduler holds no connection.
    assert.equal(loadConfig({ SCHEDULER_CONCURRENCY: '8' }).SCHEDULER_CONCURRENCY, 8)
    assert.equal(
      loadConfig({ ...postgres, SCHEDULER_CONCURRENCY: '8', SCHEDULER_ENABLED: 'false' }).SCHEDULER_CONCURRENCY,
      8,
    )
  })

  it('TRUST_PROXY that is neither a hop count nor addresses', async () => {
    await refused(
      { TRUST_PROXY: '10.0.0.0/8,proxy.local' },
      /TRUST_PROXY entry "proxy.local" must be a hop count, or addresses or CIDRs/,
    )
  })

  it('the database bounds: a few seconds for requests and a minute for jobs by default, never none', () => {
    const defaults = loadConfig({})
    assert.deepEqual(
      [defaults.DATABASE_STATEMENT_TIMEOUT_MS, defaults.DATABASE_JOB_STATEMENT_TIMEOUT_MS],
      [5000, 60_000],
    )
    assert.equal(loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '800' }).DATABASE_STATEMENT_TIMEOUT_MS, 800)
    assert.throws(
      () => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '0' }),
      /Invalid configuration: DATABASE_STATEMENT_TIMEOUT_MS /,
    )
    assert.throws(
      () => loadConfig({ DATABASE_JOB_STATEMENT_TIMEOUT_MS: 'soon' }),
      /Invalid configuration: DATABASE_JOB_STATEMENT_TIMEOUT_MS /,
    )
  })

  it('a number out of range names the setting', async () => {
    await refused({ PORT: '70000' }, /Invalid configuration: PORT /)
  })
})

describe('the first-run secret', () => {
  it('goes to stderr as plain text, never to the log stream of stdout, whatever LOG_LEVEL', async () => {
    for (const level of ['silent', 'info']) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cai-secret-'))
      const server = await startServer({ DATA_DIR: dataDir, LOG_LEVEL: level })
      try {
        await ready(server)
        const id = /^ {2}client_id: {5}(\S+)$/m.exec(server.stderr())?.[1]
        const secret = /^ {2}client_secret: (\S+)$/m.exec(server.stderr())?.[1]
        assert.ok(id && secret, `LOG_LEVEL=${level}: no credentials on stderr: ${server.stderr()}`)
        assert.ok(!server.stdout().includes(secret), `LOG_LEVEL=${level}: the secret is on stdout`)
        if (level === 'info') for (const line of server.stdout().trim().split('\n')) JSON.parse(line)
        // The credentials printed work.
        const token = await fetch(`${server.url}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ grant_type: 'client_credentials', client_id: id, client_secret: secret }),
        })
        assert.equal(token.status, 200)
      } finally {
        await server.stop()
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    }
  })
})

describe('a first start on a new DATA_DIR', () => {
  it("creates the database aside and renames it into place: a killed start's leftover is removed, an empty pgdata replaced", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cai-initdb-'))
    // As a start killed during initdb leaves them (src/db/pglite-initdb.ts), and an empty pgdata made by hand.
    fs.mkdirSync(path.join(dataDir, 'pgdata.init-999999'))
    fs.writeFileSync(path.join(dataDir, 'pgdata.init-999999', 'PG_VERSION'), '18\n')
    fs.mkdirSync(path.join(dataDir, 'pgdata'))
    const server = await startServer({ DATA_DIR: dataDir })
    try {
      await ready(server)
      assert.deepEqual(
        fs.readdirSync(dataDir).filter((entry) => entry.startsWith('pgdata')),
        ['pgdata'],
      )
      assert.ok(fs.existsSync(path.join(dataDir, 'pgdata', 'PG_VERSION')))
    } finally {
      await server.stop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
