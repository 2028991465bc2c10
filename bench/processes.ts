import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { LoadResult, LoadSpec } from './load.ts'
import { builtServer } from '../scripts/built-server.ts'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const CORES = os.availableParallelism()
/** The server (and the ceiling) on one core, the load generator and this harness on another. */
export const SERVER_CORE = 0
export const LOAD_CORE = CORES > 1 ? 1 : 0

function pinned(core: number, command: string[]): string[] {
  return CORES > 1 ? ['taskset', '-c', String(core), ...command] : command
}

// Every thread of this process, V8's and libuv's included (started before this call), moves to the load core.
export function pinSelf() {
  if (CORES > 1) spawnSyncQuiet('taskset', ['-a', '-p', '-c', String(LOAD_CORE), String(process.pid)])
}

function spawnSyncQuiet(cmd: string, args: string[]) {
  return new Promise<void>((resolve) => spawn(cmd, args, { stdio: 'ignore' }).on('exit', () => resolve()))
}

export interface Running {
  child: ChildProcess
  port: number
  url: string
  startMs: number
  stderr: () => string
  stop(): Promise<void>
}

const children = new Set<ChildProcess>()

export function killAll() {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
}
process.on('exit', killAll)

// A port the kernel hands out: a fixed range met other services of the machine at random.
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

/** BENCH_PROFILE=1: the servers of the HTTP, events and mix workloads run with --cpu-prof (see bench/profile.ts). */
export function profileArgs(): string[] {
  return process.env.BENCH_PROFILE === '1'
    ? ['--cpu-prof', '--cpu-prof-dir', path.join(os.tmpdir(), 'company-admin-api-profiles')]
    : []
}

/** Node options for every server started here (experiments). */
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)

/** Starts the real server as a user would (`npm start`), pinned to the server core, and waits for /ready. */
export async function startServer(env: Record<string, string>, extraNodeArgs: string[] = []): Promise<Running> {
  const port = await freePort()
  const command = pinned(SERVER_CORE, [process.execPath, ...SERVER_NODE_ARGS, ...extraNodeArgs, builtServer()])
  const started = performance.now()
  const child = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      RATE_LIMIT_MAX: '0',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  children.add(child)
  let err = ''
  child.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-4000)
  })
  const url = `http://127.0.0.1:${port}`
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}: ${err}`)
    if (performance.now() - started > 120_000) throw new Error(`server not ready after 120 s: ${err}`)
    const ok = await fetch(`${url}/ready`).then(
      (r) => r.ok,
      () => false,
    )
    if (ok) break
    await sleep(20)
  }
  const startMs = performance.now() - started
  return {
    child,
    port,
    url,
    startMs,
    stderr: () => err,
    async stop() {
      // Exited or killed by a signal: no 'exit' is coming.
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
      children.delete(child)
    },
  }
}

export function startBaseline(): Promise<Running> {
  return startCeiling('bench/baseline.ts')
}

/** It prints a line once it listens on PORT. */
export async function startCeiling(script: string, env: Record<string, string> = {}): Promise<Running> {
  const port = await freePort()
  const command = pinned(SERVER_CORE, [process.execPath, '--import', 'tsx', script])
  const started = performance.now()
  const child = spawn(command[0]!, command.slice(1), {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.add(child)
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve())
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)))
  })
  return {
    child,
    port,
    url: `http://127.0.0.1:${port}`,
    startMs: performance.now() - started,
    stderr: () => '',
    async stop() {
      // Exited or killed by a signal: no 'exit' is coming.
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.kill('SIGTERM')
      // A ceiling that hangs at its exit must not hang the bench.
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
      children.delete(child)
    },
  }
}

export function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return kb / 1024
}

/** User and system, in ms (fields 14 and 15 of /proc/<pid>/stat). */
export function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/**
 * CPU time of every `postgres` process, in ms, including the postmaster's reaped children (fields 16
 * and 17), so a backend that exits during a round does not make the sum fall.
 */
export function postgresCpuMs(): number {
  let total = 0
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      total += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10
    } catch {
      /* the process ended while we looked */
    }
  }
  return total
}

/** Busy and total CPU time of a /proc/stat line (`cpu`: the machine; `cpu<N>`: one core), in ms. */
function statCpuMs(name: string): { busy: number; total: number } {
  const line = fs
    .readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name} `))
  // Unknown, not idle: a share computed from it reads NaN.
  if (line === undefined) return { busy: NaN, total: NaN }
  const fields = line.trim().split(/\s+/).slice(1, 9).map(Number)
  const total = fields.reduce((a, b) => a + b, 0) * 10
  const idle = (fields[3]! + fields[4]!) * 10
  return { busy: total - idle, total }
}

export function machineCpuMs(): { busy: number; total: number } {
  return statCpuMs('cpu')
}

/** Shows which core was the full one, where the machine's figure averages them. */
export function coreCpuMs(core: number): { busy: number; total: number } {
  return statCpuMs(`cpu${core}`)
}

export function coreOf(pid: number): string {
  try {
    const allowed = /Cpus_allowed_list:\s+(\S+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
    return allowed ?? '?'
  } catch {
    return '?'
  }
}

export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  return runGenerator<LoadResult>('bench/load.ts', JSON.stringify(spec))
}

/** Its last line of output is its JSON result. */
export function runGenerator<T>(script: string, arg: string): Promise<T> {
  const command = pinned(LOAD_CORE, [process.execPath, '--import', 'tsx', script, arg])
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    children.add(child)
    let out = ''
    let err = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString()
    })
    child.on('exit', (code) => {
      children.delete(child)
      if (code !== 0) return reject(new Error(`load generator failed (${code}): ${err}`))
      resolve(JSON.parse(out.trim().split('\n').pop()!) as T)
    })
  })
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
