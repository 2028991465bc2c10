import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * What a new integrator runs first, against the real server (src/server.ts, listening on port 0
 * on a new PGlite directory): the README's quick start, extracted from the README itself (the
 * ```sh quickstart blocks, in order; not a copy), run by bash under `set -euo pipefail`; and the
 * typed client's example program (clients/typescript/example.ts).
 */
const ROOT = path.resolve(import.meta.dirname, '../..')
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')

/** The shell lines of the README's quick start, and the settings its server is started with. */
export function quickStart(readme: string): { script: string; serverEnv: Record<string, string> } {
  const blocks = [...readme.matchAll(/^```sh quickstart\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
  const server = /^```sh quickstart-server\n([\s\S]*?)^```$/m.exec(readme)?.[1] ?? ''
  const serverEnv = Object.fromEntries([...server.matchAll(/\b([A-Z_]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]))
  return { script: blocks.join(''), serverEnv }
}

function run(
  file: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: ROOT, env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr })
    })
  })
}

/** The server as `npm start` runs it (from the sources), on port 0: its address read from its log. */
async function startServer(
  env: Record<string, string>,
  dataDir: string,
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/server.ts')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: os.tmpdir(),
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not listen within 120 s: ${output}`)), 120_000)
    const read = (d: Buffer) => {
      output += d.toString()
      const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (listening) {
        clearTimeout(timer)
        resolve({ url: listening[1]!, child })
      }
    }
    child.stdout!.on('data', read)
    child.stderr!.on('data', read)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`the server exited with ${code}: ${output}`))
    })
  })
}

describe('the README quick start and the typed client against a started server', () => {
  const { script, serverEnv } = quickStart(README)
  let server: { url: string; child: ChildProcess } | undefined
  let dataDir: string | undefined
  let token: string

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cai-quickstart-'))
    server = await startServer(serverEnv, dataDir)
    const res = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'client_credentials',
        client_id: serverEnv.ADMIN_CLIENT_ID,
        client_secret: serverEnv.ADMIN_CLIENT_SECRET,
      }),
    })
    assert.equal(res.status, 200, "the quick start's platform client works")
    token = ((await res.json()) as { access_token: string }).access_token
  })
  after(async () => {
    if (server && server.child.exitCode === null) {
      const exited = new Promise((resolve) => server!.child.once('exit', resolve))
      server.child.kill('SIGTERM')
      await exited
    }
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it("finds the quick start in the README: the server's settings and the shell blocks", () => {
    assert.ok(serverEnv.ADMIN_CLIENT_ID && serverEnv.ADMIN_CLIENT_SECRET, 'the server block sets the platform client')
    assert.match(script, /^BASE=\$\{BASE:-/, 'the first line sets BASE, so a test can point it elsewhere')
    for (const name of ['COMPANY_ID', 'HR_TOKEN', 'TEAM_ID', 'COMMUNICATION_ID'])
      assert.match(script, new RegExp(`^${name}=`, 'm'), `the quick start sets ${name}`)
    // The README still opens with the two commands.
    assert.ok(README.indexOf('npm install && npm start') < README.indexOf('## Quick start'))
    assert.ok(README.indexOf('npm install && npm test') < README.indexOf('## Quick start'))
  })

  it('runs every line of the quick start, and makes a company, a client, a team and a communication', async () => {
    const printed = 'printf "%s %s %s %s\\n" "$COMPANY_ID" "$HR_ID" "$TEAM_ID" "$COMMUNICATION_ID" >&3'
    const result = await run('bash', ['-c', `set -euo pipefail\nexec 3>&1 1>&2\n${script}${printed}\n`], {
      PATH: process.env.PATH ?? '',
      HOME: os.tmpdir(),
      BASE: server!.url,
    })
    assert.equal(result.code, 0, `the quick start failed (exit ${result.code}):\n${result.stderr}`)
    const [companyId, clientId, teamId, communicationId] = result.stdout.trim().split(' ')
    const get = async (url: string) =>
      (await fetch(`${server!.url}${url}`, { headers: { authorization: `Bearer ${token}` } })).json() as Promise<
        Record<string, unknown>
      >
    assert.equal((await get(`/api/v1/companies/${companyId}`)).name, 'Acme Srl')
    assert.equal((await get(`/api/v1/companies/${companyId}/clients/${clientId}`)).name, 'hr app')
    assert.equal((await get(`/api/v1/companies/${companyId}/teams/${teamId}`)).code, 'WH')
    const communication = await get(`/api/v1/companies/${companyId}/communications/${communicationId}`)
    assert.equal(communication.subject, 'Welcome')
    assert.deepEqual(communication.destination_team_ids, [teamId])
  })

  it("runs the typed client's example program", async () => {
    const result = await run(process.execPath, ['--import', 'tsx', path.join(ROOT, 'clients/typescript/example.ts')], {
      PATH: process.env.PATH ?? '',
      HOME: os.tmpdir(),
      BASE_URL: server!.url,
      CLIENT_ID: serverEnv.ADMIN_CLIENT_ID!,
      CLIENT_SECRET: serverEnv.ADMIN_CLIENT_SECRET!,
    })
    assert.equal(result.code, 0, `example.ts failed:\n${result.stderr}`)
    const shown = JSON.parse(result.stdout) as {
      company: { id: string; name: string; subscription_status: string }
      team: { id: string; code: string }
    }
    assert.equal(shown.company.name, 'Acme Srl')
    assert.equal(shown.company.subscription_status, 'in_trial')
    assert.equal(shown.team.code, 'WH')
  })
})
