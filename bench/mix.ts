import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { measureRounds, median, type HttpFigure } from './measure.ts'
import {
  CEILING_PATTERNS,
  mixKinds,
  type KindFigure,
  type MixCompany,
  type MixResult,
  type MixSpec,
} from './mix-load.ts'
import { profileArgs, rssMb, runGenerator, sleep, startServer, type Running } from './processes.ts'
import { ADMIN, newCatalogue, newCompany } from './seed.ts'
import { measureFanout, type FanoutFigure } from './fanout.ts'
import { measureOverload, type OverloadFigure } from './overload.ts'
import { measureHostileRss, type HostileFigure } from './hostile-rss.ts'

// The mix workloads on PostgreSQL, in a database of their own: reads, writes and token issues over
// 1,000 companies (read cache on, then off), a 10,000-contract list walked page by page, and RSS over a long run.
export const COMPANIES = 1000
const CONTRACTS_EACH = 50
const TEAMS_EACH = 5
const MEMBERS_EACH = 5
const HOLIDAYS_EACH = 5
export const PAGING_CONTRACTS = 10_000
const PAGE = 100
export const MIX_CONNECTIONS = 32
export const COLD_SECONDS = 5
/**
 * The mix's warm-up, its first COLD_SECONDS included: a fresh server runs its first seconds far
 * below its steady rate (V8 compiling ten kinds of request), so a short warm-up measures the start.
 */
export const MIX_WARMUP_SECONDS = Math.max(COLD_SECONDS + 1, Number(process.env.BENCH_MIX_WARMUP ?? 20) || 20)
export const MIX_PARTS = ['mix', 'paging', 'soak', 'overload', 'fanout', 'hostile']

export interface MixRun {
  figure: HttpFigure
  byKind: Record<string, KindFigure>
  cold?: { rps: number; p99: number; errors: number }
}
export interface PagingFigure {
  pages: number
  walks: number
  firstP50: number
  firstP99: number
  lastP50: number
  lastP99: number
  worstP99: number
  worstPage: number
  p99s: number[]
}
export interface SoakFigure {
  seconds: number
  rssAt60Mb: number
  rssEndMb: number
  peakMb: number
  growth: number
  samples: Array<[number, number]>
  rps: number
  non2xx: number
  errors: number
}
export interface MixFigures {
  cached?: MixRun
  uncached?: MixRun
  paging?: PagingFigure
  soak?: SoakFigure
  overload?: OverloadFigure
  fanout?: FanoutFigure
  hostile?: HostileFigure
}

export interface MixDatabase {
  url: string
  pool: pg.Pool
  env: Record<string, string>
  companies: MixCompany[]
  paging: { id: string; token: string }
  drop(): Promise<void>
}

/**
 * The seeded database as a template no part runs on: each part runs on a copy, so no figure depends
 * on what earlier parts wrote (the soak alone multiplies the teams and holidays every read answers).
 */
export interface MixSeed {
  companies: MixCompany[]
  paging: { id: string; token: string }
  copy(label: string): Promise<MixDatabase>
  drop(): Promise<void>
}

type Log = (s: string) => void

async function inParallel<T, R>(items: T[], width: number, work: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++
        out[i] = await work(items[i]!, i)
      }
    }),
  )
  return out
}

// 1,000 companies made through the API, then in set-based SQL their contracts, teams and holidays;
// and a company of 10,000 contracts for the paging workload.
export async function mixDatabase(adminUrl: string, log: Log): Promise<MixSeed> {
  const name = `bench_${process.pid}_${Date.now()}_mix`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 })
  pool.on('error', () => {})
  const env = {
    ADMIN_CLIENT_ID: ADMIN.client_id,
    ADMIN_CLIENT_SECRET: ADMIN.client_secret,
    DATABASE_URL: url.toString(),
  }
  const dropDatabase = (db: string) =>
    admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).then(
      () => true,
      (err) => {
        log(`could not drop ${db}: ${err.message}`)
        return false
      },
    )
  let poolEnded = false
  const endPool = async () => {
    if (!poolEnded) {
      poolEnded = true
      await pool.end()
    }
  }
  const copies = new Set<string>()
  const drop = async () => {
    await endPool()
    for (const copy of copies) await dropDatabase(copy)
    await dropDatabase(name)
    await admin.end()
  }
  let server: Running | undefined
  try {
    log(`mix: database ${name}, ${COMPANIES} companies through the API`)
    server = await startServer(env)
    const base = server.url
    const { admin: adminToken, planSku, productSku } = await newCatalogue(base)
    const made = await inParallel(
      Array.from({ length: COMPANIES + 1 }, (_, i) => i),
      8,
      (i) => newCompany(base, adminToken, productSku, planSku, i === COMPANIES ? 'Paging S.p.A.' : `Mix ${i}`),
    )
    await server.stop()
    const pagingCompany = made.pop()!
    const ids = made.map((c) => c.id)
    await pool.query(
      `
      INSERT INTO contracts (company_id, id, first_name, last_name, email)
      SELECT c.id, gen_random_uuid(), 'Worker', 'N' || lpad(g::text, 3, '0'), 'w' || g || '@example.com'
      FROM unnest($1::uuid[]) c(id), generate_series(1, ${CONTRACTS_EACH}) g`,
      [ids],
    )
    await pool.query(
      `
      INSERT INTO teams (company_id, id, name, code)
      SELECT c.id, gen_random_uuid(), 'Team ' || g, 'T' || g FROM unnest($1::uuid[]) c(id), generate_series(1, ${TEAMS_EACH}) g`,
      [ids],
    )
    await pool.query(
      `
      INSERT INTO team_members (company_id, team_id, contract_id, is_leader)
      SELECT t.company_id, t.id, k.id, k.n = 1
      FROM teams t, LATERAL (SELECT id, row_number() OVER (ORDER BY random()) AS n FROM contracts WHERE company_id = t.company_id) k
      WHERE t.company_id = ANY($1::uuid[]) AND k.n <= ${MEMBERS_EACH}`,
      [ids],
    )
    await pool.query(
      `
      INSERT INTO holidays (company_id, id, name, day, recurrent)
      SELECT c.id, gen_random_uuid(), 'Closure ' || g, make_date(2026, 2 * g, 10), CASE WHEN g % 2 = 0 THEN 'yearly' ELSE 'none' END
      FROM unnest($1::uuid[]) c(id), generate_series(1, ${HOLIDAYS_EACH}) g`,
      [ids],
    )
    await pool.query(
      `
      INSERT INTO contracts (company_id, id, first_name, last_name, email)
      SELECT $1, gen_random_uuid(), 'Worker', 'P' || lpad(g::text, 5, '0'), 'p' || g || '@example.com' FROM generate_series(1, ${PAGING_CONTRACTS}) g`,
      [pagingCompany.id],
    )
    // Vacuumed too: each copy would otherwise start unvacuumed, its autovacuum running during the part.
    await pool.query('VACUUM (ANALYZE)')
    const { rows } = await pool.query<{ id: string; teams: string[]; contracts: string[] }>(
      `
      SELECT c.id, (SELECT json_agg(id) FROM teams WHERE company_id = c.id) AS teams,
        (SELECT json_agg(id) FROM (SELECT id FROM contracts WHERE company_id = c.id LIMIT 20) x) AS contracts
      FROM unnest($1::uuid[]) c(id)`,
      [ids],
    )
    const byId = new Map(rows.map((r) => [r.id, r]))
    const companies = made.map((c) => ({
      id: c.id,
      token: c.token,
      client_id: c.client_id,
      client_secret: c.client_secret,
      teams: byId.get(c.id)!.teams,
      contracts: byId.get(c.id)!.contracts,
    }))
    const paging = { id: pagingCompany.id, token: pagingCompany.token }
    // A template must have no connection while it is copied.
    await endPool()
    const copy = async (label: string): Promise<MixDatabase> => {
      const copyName = `${name}_${label}`
      copies.add(copyName)
      await admin.query(`CREATE DATABASE ${copyName} TEMPLATE ${name}`)
      const copyUrl = new URL(url)
      copyUrl.pathname = `/${copyName}`
      const copyPool = new pg.Pool({ connectionString: copyUrl.toString(), max: 2 })
      copyPool.on('error', () => {})
      return {
        url: copyUrl.toString(),
        pool: copyPool,
        env: { ...env, DATABASE_URL: copyUrl.toString() },
        companies,
        paging,
        async drop() {
          await copyPool.end()
          if (await dropDatabase(copyName)) copies.delete(copyName)
        },
      }
    }
    return { companies, paging, copy, drop }
  } catch (err) {
    await server?.stop()
    await drop()
    throw err
  }
}

const specFile = path.join(os.tmpdir(), `bench-mix-${process.pid}.json`)
process.on('exit', () => fs.rmSync(specFile, { force: true }))

export function runMix(
  db: Pick<MixDatabase, 'companies'>,
  url: string,
  connections: number,
  seconds: number,
  prefix: string,
  only?: string,
): Promise<MixResult> {
  const spec: MixSpec = {
    url,
    connections,
    seconds,
    companies: db.companies,
    prefix: `${prefix}${Date.now().toString(36)}-`,
    ...(only ? { only } : {}),
  }
  const file = `${specFile}.${prefix}`
  fs.writeFileSync(file, JSON.stringify(spec))
  return runGenerator<MixResult>('bench/mix-load.ts', file).finally(() => fs.rmSync(file, { force: true }))
}

async function teachCeiling(server: Running, baseline: Running, db: MixDatabase) {
  const company = db.companies[0]!
  const answers = []
  for (const [i, kind] of mixKinds(`sample${Date.now().toString(36)}-`).entries()) {
    const req = kind.build(company, i)
    const res = await fetch(`${server.url}${req.path}`, {
      method: req.method,
      headers: req.headers,
      ...(req.body !== undefined ? { body: req.body } : {}),
    })
    const body = await res.text()
    if (res.status >= 300) throw new Error(`mix ${kind.name}: ${res.status} ${body}`)
    const [method, pattern] = CEILING_PATTERNS[i]!
    answers.push({
      method,
      pattern,
      status: res.status,
      contentType: res.headers.get('content-type') ?? 'application/json; charset=utf-8',
      body,
    })
  }
  await fetch(`${baseline.url}/__answers`, { method: 'PUT', body: JSON.stringify(answers) })
}

export async function measureMix(
  server: Running,
  baseline: Running,
  db: MixDatabase,
  name: string,
  log: Log,
): Promise<MixRun> {
  await teachCeiling(server, baseline, db)
  const cacheBefore = await cacheAnswers(server)
  const cold = await runMix(db, server.url, MIX_CONNECTIONS, COLD_SECONDS, 'cold')
  log(`  ${name}, a fresh server's first ${COLD_SECONDS} s: ${cold.rps.toFixed(0)} req/s, p99 ${cold.p99} ms`)
  const { figure, rounds } = await measureRounds(
    server,
    baseline,
    name,
    MIX_CONNECTIONS,
    (url, seconds, prefix) => runMix(db, url, MIX_CONNECTIONS, seconds, prefix),
    log,
    MIX_WARMUP_SECONDS - COLD_SECONDS,
  )
  const byKind: Record<string, KindFigure> = {}
  for (const kind of Object.keys(rounds[0]!.byKind)) {
    const of = rounds.map((r) => r.byKind[kind]!)
    const statuses: Record<string, number> = {}
    for (const k of of) for (const [code, n] of Object.entries(k.statuses)) statuses[code] = (statuses[code] ?? 0) + n
    byKind[kind] = {
      count: of.reduce((s, k) => s + k.count, 0),
      p50: median(of.map((k) => k.p50)),
      p99: median(of.map((k) => k.p99)),
      statuses,
    }
  }
  for (const [kind, k] of Object.entries(byKind))
    log(`    ${kind}: p50 ${k.p50} ms, p99 ${k.p99} ms, ${JSON.stringify(k.statuses)}`)
  const cacheAfter = await cacheAnswers(server)
  const shares = Object.keys(cacheAfter)
    .filter((read) => cacheAfter[read]!.hit + cacheAfter[read]!.miss > 0)
    .map((read) => {
      const hit = cacheAfter[read]!.hit - (cacheBefore[read]?.hit ?? 0)
      const miss = cacheAfter[read]!.miss - (cacheBefore[read]?.miss ?? 0)
      return `${read} ${hit + miss > 0 ? Math.round((100 * hit) / (hit + miss)) : 0} %`
    })
  if (shares.length > 0) log(`    answered from the read cache (warm-up and rounds): ${shares.join(', ')}`)
  return { figure, byKind, cold: { rps: cold.rps, p99: cold.p99, errors: cold.non2xx + cold.errors } }
}

async function cacheAnswers(server: Running): Promise<Record<string, { hit: number; miss: number }>> {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const out: Record<string, { hit: number; miss: number }> = {}
  for (const m of text.matchAll(/^read_cache_answers_total\{read="([^"]+)",outcome="(hit|miss)"\} (\d+)/gm)) {
    ;(out[m[1]!] ??= { hit: 0, miss: 0 })[m[2] as 'hit' | 'miss'] = Number(m[3])
  }
  return out
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })

function getPage(url: URL, headers: Record<string, string>): Promise<{ ms: number; next?: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    http
      .request(url, { agent, headers }, (res) => {
        res.resume()
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`${url.pathname}: ${res.statusCode}`))
          const link = /<([^>]+)>;\s*rel="next"/.exec(String(res.headers.link ?? ''))
          resolve({ ms: performance.now() - started, ...(link ? { next: link[1] } : {}) })
        })
      })
      .on('error', reject)
      .end()
  })
}

/**
 * The 10,000-contract company's pages followed by their Link to the end, one request at a time; the
 * p99 of each page's position. Enough walks that one collector pause cannot decide a page's figure.
 */
export async function measurePaging(server: Running, db: MixDatabase, walks: number): Promise<PagingFigure> {
  const headers = { authorization: `Bearer ${db.paging.token}` }
  const first = new URL(`${server.url}/api/v1/companies/${db.paging.id}/contracts?limit=${PAGE}`)
  const byPage: number[][] = []
  for (let walk = -3; walk < walks; walk++) {
    let url: URL | undefined = first
    for (let page = 0; url; page++) {
      const { ms, next } = await getPage(url, headers)
      if (walk >= 0) (byPage[page] ??= []).push(ms)
      url = next ? new URL(next, server.url) : undefined
    }
  }
  const at = (times: number[], p: number) =>
    [...times].sort((a, b) => a - b)[Math.min(times.length - 1, Math.floor(times.length * p))]!
  const p99s = byPage.map((t) => at(t, 0.99))
  const worst = p99s.indexOf(Math.max(...p99s))
  return {
    pages: byPage.length,
    walks,
    firstP50: at(byPage[0]!, 0.5),
    firstP99: p99s[0]!,
    lastP50: at(byPage.at(-1)!, 0.5),
    lastP99: p99s.at(-1)!,
    worstP99: p99s[worst]!,
    worstPage: worst + 1,
    p99s,
  }
}

/** The mix at 32 connections with RSS sampled; growth after the first minute, median to median. */
export async function measureSoak(server: Running, db: MixDatabase, seconds: number, log: Log): Promise<SoakFigure> {
  const samples: Array<[number, number]> = []
  const started = performance.now()
  const load = runMix(db, server.url, MIX_CONNECTIONS, seconds, 'soak')
  let done = false
  void load.finally(() => {
    done = true
  })
  while (!done) {
    samples.push([Math.round((performance.now() - started) / 1000), rssMb(server.child.pid!)])
    await Promise.race([sleep(5000), load.catch(() => {})])
  }
  const result = await load
  samples.push([Math.round((performance.now() - started) / 1000), rssMb(server.child.pid!)])
  // Medians of a minute's samples: RSS follows the heap's reserved size, which swings between
  // collections, so single samples would compare phases of that sawtooth.
  const last = samples.at(-1)![0]
  const firstMinute = samples.filter(([t]) => t >= 60 && t < 120).map(([, r]) => r)
  const lastMinute = samples.filter(([t]) => t > last - 60).map(([, r]) => r)
  const at60 = median(firstMinute.length ? firstMinute : [samples[0]![1]])
  const end = median(lastMinute)
  const after = samples.filter(([t]) => t >= 60).map(([, r]) => r)
  const figure = {
    seconds,
    rssAt60Mb: at60,
    rssEndMb: end,
    peakMb: Math.max(...after, at60),
    growth: end / at60 - 1,
    samples,
    rps: result.rps,
    non2xx: result.non2xx,
    errors: result.errors,
  }
  log(
    `  soak ${seconds} s: RSS median ${at60.toFixed(0)} MB over 60-120 s → ${end.toFixed(0)} MB over the last minute (${(100 * figure.growth).toFixed(1)} %, peak ${figure.peakMb.toFixed(0)} MB); ${result.rps.toFixed(0)} req/s, non-2xx ${result.non2xx}`,
  )
  return figure
}

/** Every part that runs on the mix database, as `want` selects; a failing part is logged and left out. */
export async function runMixWorkloads(
  adminUrl: string,
  baseline: Running,
  want: (part: string) => boolean,
  log: Log,
): Promise<MixFigures> {
  const figures: MixFigures = {}
  const hostile = async () => {
    if (want('hostile'))
      figures.hostile = await measureHostileRss(log).catch((err) => {
        log(`  hostile failed, left out: ${err.message}`)
        return undefined
      })
  }
  if (!MIX_PARTS.filter((p) => p !== 'hostile').some(want)) {
    await hostile()
    return figures
  }
  const seed = await mixDatabase(adminUrl, log)
  /** One part on a copy of the seeded database and a fresh server, both gone after it. */
  const part = async <K extends keyof MixFigures>(
    name: string,
    key: K,
    env: Record<string, string>,
    work: (s: Running, db: MixDatabase) => Promise<MixFigures[K]>,
  ) => {
    if (!want(name)) return
    let server: Running | undefined
    let db: MixDatabase | undefined
    try {
      db = await seed.copy(String(key))
      // Only the mix's rounds are profiled: profile samples stay in memory and would count in RSS figures.
      server = await startServer({ ...db.env, ...env }, name === 'mix' ? profileArgs() : [])
      figures[key] = await work(server, db)
      await db.pool
        .query<{ teams: number; holidays: number }>(
          'SELECT (SELECT count(*) FROM teams)::int AS teams, (SELECT count(*) FROM holidays)::int AS holidays',
        )
        .then(
          ({ rows: [grown] }) =>
            log(
              `  ${String(key)}: its copy ended with ${grown!.teams} teams and ${grown!.holidays} holidays (seeded: ${COMPANIES * TEAMS_EACH} and ${COMPANIES * HOLIDAYS_EACH})`,
            ),
          (err) => log(`  ${String(key)}: its copy's teams and holidays could not be counted: ${err.message}`),
        )
    } catch (err) {
      log(`  ${name} failed, left out: ${err instanceof Error ? err.message : String(err)}`)
    } finally {
      try {
        await server?.stop()
      } catch (err) {
        log(`  ${name}: its server did not stop cleanly: ${err instanceof Error ? err.message : String(err)}`)
      } finally {
        await db?.drop()
      }
    }
  }
  try {
    await part('mix', 'cached', {}, (s, db) => measureMix(s, baseline, db, 'mix (read cache on)', log))
    await part('mix', 'uncached', { READ_CACHE_MAX_BYTES: '0' }, (s, db) =>
      measureMix(s, baseline, db, 'mix (read cache off)', log),
    )
    // The read cache off: a walk repeated hundreds of times would time the cache, not the keyset query.
    await part('paging', 'paging', { READ_CACHE_MAX_BYTES: '0' }, async (s, db) => {
      const p = await measurePaging(s, db, Number(process.env.BENCH_PAGING_WALKS ?? 300))
      log(
        `  contracts paging: ${p.pages} pages; first p50 ${p.firstP50.toFixed(2)} p99 ${p.firstP99.toFixed(2)} ms, last p50 ${p.lastP50.toFixed(2)} p99 ${p.lastP99.toFixed(2)} ms, worst p99 ${p.worstP99.toFixed(2)} ms (page ${p.worstPage})`,
      )
      return p
    })
    await part('soak', 'soak', {}, (s, db) => measureSoak(s, db, Number(process.env.BENCH_SOAK_SECONDS ?? 600), log))
    await part('overload', 'overload', {}, (s, db) => measureOverload(s, db, log))
    await part('fanout', 'fanout', {}, (s, db) => measureFanout(s, db, log))
    await hostile()
    return figures
  } finally {
    await seed.drop()
  }
}
