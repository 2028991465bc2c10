import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createCluster } from './lib/cluster.ts'
import { makeContext, scratchDir, type Result, type Scenario } from './lib/context.ts'
import { agent } from './lib/http.ts'
import type { EngineName } from './lib/server.ts'
import { scenarios } from './scenarios/index.ts'

// The reliability and security suite: every scenario against the real server started as a user
// starts it, on PostgreSQL and on PGlite, with a report under results/. RELIABILITY_SCALE shrinks
// durations and counts; RELIABILITY_ONLY=1,5 and RELIABILITY_ENGINES=postgres pick a subset.
const HERE = path.dirname(fileURLToPath(import.meta.url))
const scale = Number(process.env.RELIABILITY_SCALE ?? 1)
const only = process.env.RELIABILITY_ONLY?.split(',').map(Number)
const engines = (process.env.RELIABILITY_ENGINES?.split(',') ?? ['postgres', 'pglite']) as EngineName[]
const BUDGET_MS = 15 * 60_000

async function main() {
  const started = Date.now()
  const cluster = createCluster()
  cluster.start()
  const scratch = scratchDir()
  const rows: Array<{ scenario: Scenario; engine: EngineName; result: Result; ms: number }> = []
  try {
    for (const scenario of scenarios) {
      if (only && !only.includes(scenario.id)) continue
      for (const engine of scenario.engines.filter((e) => engines.includes(e))) {
        if (Date.now() - started > BUDGET_MS) {
          rows.push({
            scenario,
            engine,
            ms: 0,
            result: { pass: false, figures: {}, notes: ['not run: the 15-minute budget was spent'] },
          })
          continue
        }
        const t0 = Date.now()
        process.stdout.write(`# ${scenario.id}. ${scenario.title} on ${engine} ... `)
        let result: Result
        try {
          result = await scenario.run(makeContext(engine, scale, cluster, scratch))
        } catch (err) {
          result = {
            pass: false,
            figures: {},
            notes: [`FAILED: the scenario threw: ${(err as Error).stack ?? err}`.slice(0, 2000)],
          }
        }
        const ms = Date.now() - t0
        rows.push({ scenario, engine, result, ms })
        process.stdout.write(`${result.pass ? 'ok' : 'FAILED'} (${(ms / 1000).toFixed(1)} s)\n`)
        for (const [k, v] of Object.entries(result.figures)) process.stdout.write(`    ${k}: ${v}\n`)
        for (const n of result.notes) process.stdout.write(`    ${n.replace(/\n/g, '\n    ')}\n`)
      }
    }
  } finally {
    agent.destroy()
    cluster.destroy()
    fs.rmSync(scratch, { recursive: true, force: true })
  }
  const passed = rows.filter((r) => r.result.pass).length
  const failed = rows.length - passed
  writeReport(rows, Date.now() - started)
  process.stdout.write(`\nreliability: ${passed} passed, ${failed} failed\n`)
  process.exitCode = failed === 0 ? 0 : 1
}

function writeReport(
  rows: Array<{ scenario: Scenario; engine: EngineName; result: Result; ms: number }>,
  totalMs: number,
) {
  const out = process.env.RELIABILITY_REPORT ?? path.join(HERE, 'results', 'reliability-report.md')
  const lines = [
    '# Reliability report',
    '',
    `Run of \`npm run test:reliability\` finished ${new Date().toISOString()}: scale ${scale}` +
      `${scale === 1 ? ' (the documented durations and counts)' : ' (durations and counts reduced)'}, ` +
      `${os.cpus().length} cores, Node ${process.version}, total ${(totalMs / 1000).toFixed(0)} s.`,
    'The service was started as a user starts it (`npm start`: the bundle of scripts/build.mjs, `node dist/server.js`), on a private PostgreSQL 15 cluster and on PGlite.',
    '',
    '| # | scenario | engine | result | time | figures |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      ({ scenario, engine, result, ms }) =>
        `| ${scenario.id} | ${scenario.title} | ${engine} | ${result.pass ? 'pass' : '**FAIL**'} | ${(ms / 1000).toFixed(1)} s | ${Object.entries(
          result.figures,
        )
          .map(([k, v]) => `${k}: ${v}`)
          .join('; ')
          .replace(/\|/g, '\\|')} |`,
    ),
    '',
    '## Notes',
    '',
    ...rows.flatMap(({ scenario, engine, result }) =>
      result.notes.length === 0
        ? []
        : [
            `### ${scenario.id}. ${scenario.title} (${engine})`,
            '',
            ...result.notes.map((n) => `- ${n.replace(/\n/g, ' ').slice(0, 600)}`),
            '',
          ],
    ),
  ]
  fs.mkdirSync(path.dirname(out), { recursive: true })
  fs.writeFileSync(out, `${lines.join('\n')}\n`)
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`)
  process.exit(1)
})
