import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * A throwaway PostgreSQL 15 cluster of the suite's own (port 55432, socket in its directory):
 * scenarios stop it with `-m immediate`, which must never happen to a server someone else uses.
 */
const BIN = process.env.RELIABILITY_PG_BIN ?? '/usr/lib/postgresql/15/bin'
export const PG_PORT = Number(process.env.RELIABILITY_PG_PORT ?? 55432)

function asPostgres(args: string[]) {
  // initdb refuses to run as root: run the binaries as the postgres user when we are root.
  const root = process.getuid?.() === 0
  const [cmd, ...rest] = root ? ['runuser', '-u', 'postgres', '--', ...args] : args
  const out = spawnSync(cmd!, rest, { encoding: 'utf8', timeout: 60_000 })
  if (out.status !== 0) throw new Error(`${args.join(' ')} failed: ${out.stderr || out.stdout}`)
  return out.stdout
}

export interface Cluster {
  dir: string
  url(database?: string): string
  start(): void
  /** `pg_ctl stop -m immediate`: a crash as far as the database files are concerned. */
  crash(): void
  psql(sql: string, database?: string): string
  createDatabase(name: string): string
  destroy(): void
}

export function createCluster(): Cluster {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reliability-pg-'))
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir])
  asPostgres([`${BIN}/initdb`, '-D', `${dir}/data`, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
  fs.appendFileSync(
    `${dir}/data/postgresql.conf`,
    `\nmax_connections = 200\nfsync = on\nlisten_addresses = '127.0.0.1'\n`,
  )
  let running = false
  const cluster: Cluster = {
    dir,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${PG_PORT}/${database}`,
    start() {
      asPostgres([
        `${BIN}/pg_ctl`,
        '-D',
        `${dir}/data`,
        '-o',
        `-p ${PG_PORT} -k ${dir}`,
        '-l',
        `${dir}/log`,
        '-w',
        'start',
      ])
      running = true
    },
    crash() {
      asPostgres([`${BIN}/pg_ctl`, '-D', `${dir}/data`, '-m', 'immediate', '-w', 'stop'])
      running = false
    },
    psql(sql, database = 'postgres') {
      return execFileSync(
        'psql',
        ['-h', '127.0.0.1', '-p', String(PG_PORT), '-U', 'postgres', '-d', database, '-XAtqc', sql],
        { encoding: 'utf8' },
      ).trim()
    },
    createDatabase(name) {
      cluster.psql(`CREATE DATABASE ${name}`)
      return cluster.url(name)
    },
    destroy() {
      if (running) {
        try {
          cluster.crash()
        } catch {
          /* already down */
        }
      }
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
  return cluster
}
