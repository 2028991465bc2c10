import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { PGlite } from '@electric-sql/pglite'
import {
  measureHttp,
  measureLatency,
  measureLatencyPair,
  SECONDS,
  WARMUP_SECONDS,
  type HttpFigure,
  type LatencyFigure,
  type Workload,
} from './measure.ts'
import {
  CORES,
  LOAD_CORE,
  ROOT,
  SERVER_CORE,
  coreOf,
  killAll,
  pinSelf,
  profileArgs,
  rssMb,
  sleep,
  startBaseline,
  startServer,
  type Running,
} from './processes.ts'
import { ADMIN, growCompanies, seedThroughApi, type Seeded } from './seed.ts'
import { measureCommunications, type CommunicationFigures } from './communications.ts'
import { writeResults } from './report.ts'
import { measureEvents, type EventFigures } from './events.ts'
import { MIX_PARTS, runMixWorkloads, type MixFigures } from './mix.ts'
import { measureAnalytics, type AnalyticsFigures } from './analytics.ts'

// `npm run bench`: every workload of bench/README.md on PostgreSQL then PGlite, each HTTP figure a
// ratio to a raw node:http ceiling measured in the same run. Loopback only; drops what it created.
const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
// Parts chosen by BENCH_ONLY or on the command line (`npm run bench -- mix paging`).
const ONLY = new Set([...(process.env.BENCH_ONLY ?? '').split(','), ...process.argv.slice(2)].filter(Boolean))
const want = (part: string) => ONLY.size === 0 || ONLY.has(part)
const WORKLOADS = (process.env.BENCH_WORKLOADS ?? '').split(',').filter(Boolean)
const chosen = (w: Workload) => WORKLOADS.length === 0 || WORKLOADS.some((name) => w.name.includes(name))

export interface EngineFigures {
  engine: 'postgres' | 'pglite'
  version: string
  startMs: number
  idleRssMb: number
  serverCores: string
  http: HttpFigure[]
  holidays?: LatencyFigure
  growth?: { at100: LatencyFigure; at100k: LatencyFigure }
  communications?: CommunicationFigures | { skipped: string }
  events?: EventFigures
  analytics?: AnalyticsFigures
}

const log = (line: string) => process.stdout.write(`${line}\n`)

function serverEnv(extra: Record<string, string>) {
  return { ADMIN_CLIENT_ID: ADMIN.client_id, ADMIN_CLIENT_SECRET: ADMIN.client_secret, ...extra }
}

function httpWorkloads(seeded: Seeded, adminToken: string): Workload[] {
  const { reader, writer } = seeded
  const auth = (t: string) => ({ authorization: `Bearer ${t}` })
  void adminToken
  return [
    {
      name: 'GET teams',
      method: 'GET',
      path: `/api/v1/companies/${reader.id}/teams`,
      headers: auth(reader.token),
      connections: 32,
    },
    {
      name: 'GET company',
      method: 'GET',
      path: `/api/v1/companies/${reader.id}`,
      headers: auth(reader.token),
      connections: 32,
    },
    {
      name: 'POST teams',
      method: 'POST',
      path: `/api/v1/companies/${writer.id}/teams`,
      headers: { ...auth(writer.token), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Night shift', code: 'x', team_leader_ids: writer.leaders }),
      uniqueCode: `c${Date.now()}-`,
      connections: 32,
    },
    {
      name: 'POST /oauth/token',
      method: 'POST',
      path: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: reader.client_id,
        client_secret: reader.client_secret,
      }).toString(),
      connections: 32,
    },
  ]
}

async function afterStart(server: Running) {
  await sleep(2000)
  return { startMs: server.startMs, idleRssMb: rssMb(server.child.pid!), serverCores: coreOf(server.child.pid!) }
}

async function runPostgres(baseline: Running): Promise<EngineFigures> {
  const name = `bench_${process.pid}_${Date.now()}`
  const admin = new pg.Client({ connectionString: ADMIN_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  const db = new pg.Pool({ connectionString: url.toString(), max: 2 })
  db.on('error', () => {})
  const exec = (text: string) => db.query(text)
  const count = async (text: string) => Number((await db.query(text)).rows[0].n)
  const env = serverEnv({ DATABASE_URL: url.toString() })
  let server: Running | undefined
  try {
    log(`PostgreSQL: database ${name}`)
    server = await startServer(env)
    const seeded = await seedThroughApi(server.url)
    const version = (await db.query('SHOW server_version')).rows[0].server_version as string
    const figures: EngineFigures = { engine: 'postgres', version, startMs: 0, idleRssMb: 0, serverCores: '', http: [] }

    const teamsUrl = () => `${server!.url}/api/v1/companies/${seeded.reader.id}/teams`
    const auth = { authorization: `Bearer ${seeded.reader.token}` }
    if (want('growth')) {
      // Growth: this database with 100 companies against a second one, seeded the same way, with
      // 100,000; both servers freshly started, rounds alternated (measureLatencyPair). The read
      // cache is off in both: what grows with the data is the query, which a cached read skips.
      await growCompanies(exec, count, 100)
      const big = await bigDatabase(admin, url, name)
      try {
        await server.stop()
        server = await startServer({ ...env, ...UNCACHED })
        const [at100, at100k] = await measureLatencyPair({ url: teamsUrl(), headers: auth }, big.teams)
        figures.growth = { at100, at100k }
        log(
          `  growth: teams read p50 ${at100.p50.toFixed(2)} ms with 100 companies, ${at100k.p50.toFixed(2)} ms with 100,000`,
        )
      } finally {
        await big.drop()
      }
    }
    await growCompanies(exec, count, 1000)
    await server.stop()
    server = await startServer(env, profileArgs())
    Object.assign(figures, await afterStart(server))
    log(`  start to /ready ${figures.startMs.toFixed(0)} ms, idle RSS ${figures.idleRssMb.toFixed(0)} MB`)

    if (want('http'))
      for (const w of httpWorkloads(seeded, '').filter(chosen))
        figures.http.push(await measureHttp(server, baseline, w, log))
    if (want('holidays')) {
      figures.holidays = await measureLatency(
        `${server.url}/api/v1/companies/${seeded.reader.id}/all_holidays?year=2027`,
        auth,
        500,
      )
      log(`  all_holidays p50 ${figures.holidays.p50.toFixed(2)} ms`)
    }
    if (want('communications'))
      figures.communications = await measureCommunications(
        server,
        seeded,
        { exec, count, query: (t) => db.query(t).then((r) => r.rows) },
        log,
      )
    if (want('analytics')) figures.analytics = await measureAnalytics(server.url, url.toString(), log)
    // Last: it starts a server of its own (private targets allowed), so this one stops first.
    if (want('events')) {
      await server.stop()
      figures.events = await measureEvents(
        env,
        seeded,
        { query: (t, p) => db.query(t, p).then((r) => r.rows) },
        log,
        profileArgs(),
      )
    }
    return figures
  } finally {
    // Exit code 0: stopped on purpose (the events part stops it); anything else is a crash worth its stderr.
    if (server && server.child.exitCode !== null && server.child.exitCode !== 0)
      log(`the server had exited (${server.child.exitCode}, ${server.child.signalCode}): ${server.stderr()}`)
    await server?.stop()
    await db.end()
    await admin
      .query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      .catch((err) => log(`could not drop ${name}: ${err.message}`))
    await admin.end()
  }
}

/** The growth workload times the query, not the read cache (src/cache/read-cache.ts). */
const UNCACHED = { READ_CACHE_MAX_BYTES: '0' }

/** The second database of the growth workload: the same API seed, then 100,000 companies; started fresh. */
async function bigDatabase(admin: pg.Client, url: URL, name: string) {
  const bigName = `${name}_big`
  await admin.query(`CREATE DATABASE ${bigName}`)
  const bigUrl = new URL(url)
  bigUrl.pathname = `/${bigName}`
  const pool = new pg.Pool({ connectionString: bigUrl.toString(), max: 2 })
  pool.on('error', () => {})
  const env = serverEnv({ DATABASE_URL: bigUrl.toString() })
  let server: Running | undefined
  const drop = async () => {
    await server?.stop()
    await pool.end()
    await admin
      .query(`DROP DATABASE IF EXISTS ${bigName} WITH (FORCE)`)
      .catch((err) => log(`could not drop ${bigName}: ${err.message}`))
  }
  try {
    server = await startServer(env)
    const seeded = await seedThroughApi(server.url)
    await growCompanies(
      (t) => pool.query(t),
      async (t) => Number((await pool.query(t)).rows[0].n),
      100_000,
    )
    await server.stop()
    server = await startServer({ ...env, ...UNCACHED })
    return {
      teams: {
        url: `${server.url}/api/v1/companies/${seeded.reader.id}/teams`,
        headers: { authorization: `Bearer ${seeded.reader.token}` },
      },
      drop,
    }
  } catch (err) {
    await drop()
    throw err
  }
}

async function runPglite(baseline: Running): Promise<EngineFigures> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pglite-'))
  const env = serverEnv({ DATA_DIR: dir })
  let server: Running | undefined
  try {
    log(`PGlite: data directory ${dir}`)
    server = await startServer(env)
    const seeded = await seedThroughApi(server.url)
    await server.stop()
    // PGlite is one process: the bulk rows go in while the server is stopped.
    const pglite = new PGlite({ dataDir: path.join(dir, 'pgdata') })
    await pglite.waitReady
    const version = (await pglite.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version
    await growCompanies(
      (t) => pglite.exec(t),
      async (t) => Number((await pglite.query<{ n: number }>(t)).rows[0]!.n),
      1000,
    )
    await pglite.close()
    server = await startServer(env)
    const figures: EngineFigures = {
      engine: 'pglite',
      version: `PGlite (PostgreSQL ${version})`,
      ...(await afterStart(server)),
      http: [],
    }
    log(`  start to /ready ${figures.startMs.toFixed(0)} ms, idle RSS ${figures.idleRssMb.toFixed(0)} MB`)
    if (want('http'))
      for (const w of httpWorkloads(seeded, '').slice(0, 2).filter(chosen))
        figures.http.push(await measureHttp(server, baseline, w, log))
    return figures
  } finally {
    await server?.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

async function main() {
  pinSelf()
  const started = new Date()
  const loadAtStart = os.loadavg()[0]!
  const busy = othersRunning()
  log(
    `bench: ${CORES} cores; server on core ${SERVER_CORE}, load generator on core ${LOAD_CORE}; ${SECONDS} s rounds, ${WARMUP_SECONDS} s warm-up`,
  )
  if (busy.length > 0) log(`warning: other test processes are running (${busy.length}); figures will be noisy`)
  const baseline = await startBaseline()
  try {
    const engines: EngineFigures[] = []
    if (want('postgres')) engines.push(await runPostgres(baseline))
    if (want('pglite')) engines.push(await runPglite(baseline))
    const mix: MixFigures | undefined = MIX_PARTS.some(want)
      ? await runMixWorkloads(ADMIN_URL, baseline, want, log)
      : undefined
    // Test runs of other engineers seen at the start or at the end of the run.
    busy.push(...othersRunning().filter((cmd) => !busy.includes(cmd)))
    const file = writeResults({
      started,
      finished: new Date(),
      load: [loadAtStart, os.loadavg()[0]!],
      cores: CORES,
      serverCore: SERVER_CORE,
      loadCore: LOAD_CORE,
      baselineCores: coreOf(baseline.child.pid!),
      busy,
      seconds: SECONDS,
      warmup: WARMUP_SECONDS,
      engines,
      mix,
      partial: ONLY.size > 0,
    })
    log(`results written to ${path.relative(ROOT, file)}`)
  } finally {
    await baseline.stop()
  }
}

/** Other engineers' test runs share the cores: say so in the results. */
function othersRunning(): string[] {
  const found: string[] = []
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')
      if (cmd.includes('--test') && cmd.includes('node')) found.push(cmd.trim())
    } catch {
      /* gone */
    }
  }
  return found
}

const stop = () => {
  killAll()
  process.exit(130)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`)
    killAll()
    process.exit(1)
  },
)
