import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { http } from './http.ts'
import { builtServer } from '../../scripts/built-server.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
export const ADMIN = { id: 'reliability-admin', secret: 'reliability-admin-secret-0123456789' }

export type EngineName = 'postgres' | 'pglite'

/** Where a server keeps its data: a database of the private cluster, or a PGlite directory. */
export type Store = { engine: 'postgres'; url: string } | { engine: 'pglite'; dataDir: string }

export interface Server {
  port: number
  base: string
  child: ChildProcess
  pid: number
  /** Resolves with the exit code (or the signal's name) when the process ends. */
  exited: Promise<number | string>
  log(): string
  kill(signal: NodeJS.Signals): void
  stop(): Promise<void>
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo
      s.close(() => resolve(port))
    })
    s.on('error', reject)
  })
}

/** The service as a user starts it (`npm start`: the build, then `node dist/server.js`), configured by its environment. */
export async function startServer(
  store: Store,
  env: Record<string, string> = {},
  readyWithinMs = 60_000,
): Promise<Server> {
  const port = await freePort()
  const output: string[] = []
  const child = spawn(process.execPath, [builtServer()], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ADMIN_CLIENT_ID: ADMIN.id,
      ADMIN_CLIENT_SECRET: ADMIN.secret,
      RATE_LIMIT_MAX: '0',
      SCHEDULER_POLL_MS: '200',
      ...(store.engine === 'postgres' ? { DATABASE_URL: store.url } : { DATA_DIR: store.dataDir }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString())
    if (output.length > 2000) output.splice(0, 1000)
  }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  )
  const base = `http://127.0.0.1:${port}`
  const server: Server = {
    port,
    base,
    child,
    pid: child.pid!,
    exited,
    log: () => output.join(''),
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    },
    async stop() {
      server.kill('SIGTERM')
      const timer = setTimeout(() => server.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
    },
  }
  const deadline = Date.now() + readyWithinMs
  let exitedEarly: number | string | undefined
  void exited.then((code) => {
    exitedEarly = code
  })
  while (Date.now() < deadline) {
    if (exitedEarly !== undefined)
      throw new Error(`the server exited (${exitedEarly}) before it was ready:\n${server.log().slice(-3000)}`)
    const res = await http(base, { url: '/ready', timeoutMs: 2000 }).catch(() => undefined)
    if (res?.status === 200) return server
    await sleep(100)
  }
  server.kill('SIGKILL')
  throw new Error(`the server was not ready within ${readyWithinMs} ms:\n${server.log().slice(-3000)}`)
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Resident memory of a process in bytes (Linux). */
export function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return kb * 1024
}
