import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'

/**
 * The built server (what `npm start` runs) as a process of its own, for what only a real
 * process shows: its exit code and stderr at start-up, signals, its stdout.
 */
const ROOT = path.resolve(import.meta.dirname, '../..')
// Inside the project, so the bundle's imports of npm packages resolve from its node_modules.
const OUT = path.join(ROOT, 'node_modules/.cache/company-admin-api', `server-process-${process.pid}`)
let built = false

export function buildServer(): string {
  if (!built) execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs'), OUT], { stdio: 'pipe' })
  built = true
  return path.join(OUT, 'server.js')
}

export function removeBuild() {
  fs.rmSync(OUT, { recursive: true, force: true })
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net
      .createServer()
      .listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo
        server.close(() => resolve(port))
      })
      .on('error', reject)
  })
}

export interface ServerProcess {
  child: ChildProcess
  url: string
  stdout(): string
  stderr(): string
  /** The exit code, or throws when the process is still running after `ms` (then it is killed). */
  exited(ms: number): Promise<number | null>
  /** Resolves once stdout or stderr matches. */
  waitFor(pattern: RegExp, ms?: number): Promise<void>
  stop(): Promise<void>
}

/** Starts the built server with only these settings (and PATH): nothing leaks in from the test's environment. */
export async function startServer(env: Record<string, string>): Promise<ServerProcess> {
  const port = await freePort()
  const child = spawn(process.execPath, [buildServer()], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  const watchers = new Set<() => void>()
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString()
    for (const w of watchers) w()
  })
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString()
    for (const w of watchers) w()
  })
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    stdout: () => out,
    stderr: () => err,
    async exited(ms) {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          child.kill('SIGKILL')
          reject(new Error(`still running after ${ms} ms; stderr: ${err}; stdout: ${out.slice(-2000)}`))
        }, ms)
      })
      try {
        return await Promise.race([exit, late])
      } finally {
        clearTimeout(timer)
      }
    },
    waitFor(pattern, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(out) || pattern.test(err)) {
            done()
            resolve()
          }
        }
        const timer = setTimeout(() => {
          done()
          reject(new Error(`${pattern} not seen in ${ms} ms; stderr: ${err}; stdout: ${out.slice(-2000)}`))
        }, ms)
        const done = () => {
          clearTimeout(timer)
          watchers.delete(check)
        }
        watchers.add(check)
        exit.then(() => {
          if (watchers.has(check)) {
            done()
            reject(new Error(`exited before ${pattern}; stderr: ${err}; stdout: ${out.slice(-2000)}`))
          }
        })
        check()
      })
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      await exit
    },
  }
}

/** Waits until /ready answers 200. */
export async function ready(server: ServerProcess, ms = 180_000) {
  const deadline = Date.now() + ms
  for (;;) {
    if (server.child.exitCode !== null)
      throw new Error(`the server exited with ${server.child.exitCode}: ${server.stderr()}`)
    if (Date.now() > deadline) throw new Error(`the server was not ready in ${ms} ms: ${server.stderr()}`)
    if (
      await fetch(`${server.url}/ready`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return
    await new Promise((r) => setTimeout(r, 50))
  }
}
