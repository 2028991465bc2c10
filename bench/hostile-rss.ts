import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ROOT } from './processes.ts'

// The peak RSS of a PGlite server under the reliability suite's hostile input (scenario 5), as that
// scenario samples it; the suite's report goes to a temporary file.
export interface HostileFigure {
  peakMb?: number
  warmMb?: number
  endMb?: number
  passed: boolean
  detail: string
}

export async function measureHostileRss(log: (s: string) => void): Promise<HostileFigure> {
  const report = path.join(os.tmpdir(), `bench-hostile-${process.pid}.md`)
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'reliability/run.ts'], {
      cwd: ROOT,
      stdio: 'ignore',
      // The suite starts its private PostgreSQL cluster even for PGlite alone: a port of its own, so
      // that another run of the suite on the machine (on 55432) does not stop this one.
      env: {
        ...process.env,
        RELIABILITY_ONLY: '5',
        RELIABILITY_ENGINES: 'pglite',
        RELIABILITY_REPORT: report,
        RELIABILITY_PG_PORT: String(55_000 + (process.pid % 400)),
      },
    })
    child.on('exit', (c) => resolve(c))
  })
  const text = fs.existsSync(report) ? fs.readFileSync(report, 'utf8') : ''
  fs.rmSync(report, { force: true })
  const line = text.split('\n').find((l) => l.startsWith('| 5 |') && l.includes('pglite')) ?? ''
  const rss = /RSS median at 10-30 % → last 20 %: (\d+) → (\d+) MB \([^;]*; peak (\d+) MB\)/.exec(line)
  const figure: HostileFigure = {
    passed: code === 0,
    detail: rss ? rss[0] : `no RSS line in the suite's report (exit ${code})`,
  }
  if (rss) Object.assign(figure, { warmMb: Number(rss[1]), endMb: Number(rss[2]), peakMb: Number(rss[3]) })
  log(`  hostile input on PGlite: ${figure.detail}; scenario ${figure.passed ? 'passed' : 'failed'}`)
  return figure
}
