// `npm run lint:openapi`: the OpenAPI document, built in-process, through Redocly CLI
// (recommended rules, redocly.yaml) and Spectral (spectral:oas, .spectral.yaml). Exits 1 on any
// error; prints every warning (the ones that stay are listed in docs/api-contract.md).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { buildOpenApiDocument } from './openapi-document.ts'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

export interface LintProblem {
  linter: 'redocly' | 'spectral'
  severity: 'error' | 'warning'
  rule: string
  message: string
  where: string
}

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // No telemetry or update check from Redocly: the lint runs offline, in tests too.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' }
    execFile(process.execPath, args, { cwd: root, env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr })
    })
  })
}

/** Both linters over the document; throws when a linter itself fails to run. */
export async function lintOpenApi(doc: unknown): Promise<LintProblem[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'))
  const file = path.join(dir, 'openapi.json')
  try {
    fs.writeFileSync(file, JSON.stringify(doc, null, 2))
    const [redocly, spectral] = await Promise.all([
      run([
        path.join(root, 'node_modules/@redocly/cli/bin/cli.js'),
        'lint',
        file,
        '--config',
        path.join(root, 'redocly.yaml'),
        '--format=json',
      ]),
      run([
        path.join(root, 'node_modules/@stoplight/spectral-cli/dist/index.js'),
        'lint',
        file,
        '--ruleset',
        path.join(root, '.spectral.yaml'),
        '--format',
        'json',
        '--quiet',
      ]),
    ])
    const problems: LintProblem[] = []
    const redoclyJson = parse(redocly, 'redocly') as {
      problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }>
    }
    for (const p of redoclyJson.problems) {
      problems.push({
        linter: 'redocly',
        severity: p.severity === 'error' ? 'error' : 'warning',
        rule: p.ruleId,
        message: p.message,
        where: p.location[0]?.pointer ?? '',
      })
    }
    // Spectral's severities: 0 error, 1 warning, 2 info, 3 hint.
    const spectralJson = parse(spectral, 'spectral') as Array<{
      code: string
      severity: number
      message: string
      path: string[]
    }>
    for (const p of spectralJson) {
      if (p.severity > 1) continue
      problems.push({
        linter: 'spectral',
        severity: p.severity === 0 ? 'error' : 'warning',
        rule: p.code,
        message: p.message,
        where: p.path.join('.'),
      })
    }
    return problems
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

function parse(result: { code: number; stdout: string; stderr: string }, linter: string): unknown {
  // Spectral prints "No results..." instead of JSON when there is nothing to say.
  const text = result.stdout.trim()
  const start = text.search(/[[{]/)
  if (start < 0) {
    if (result.code === 0) return linter === 'spectral' ? [] : { problems: [] }
    throw new Error(`${linter} did not run (exit ${result.code}): ${result.stderr || result.stdout}`)
  }
  try {
    return JSON.parse(text.slice(start))
  } catch {
    throw new Error(`${linter} answered no JSON (exit ${result.code}): ${result.stderr || result.stdout}`)
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = await lintOpenApi(await buildOpenApiDocument())
  for (const p of problems)
    process.stdout.write(`${p.severity.padEnd(7)} ${p.linter.padEnd(8)} ${p.rule}: ${p.message} (${p.where})\n`)
  const errors = problems.filter((p) => p.severity === 'error').length
  process.stdout.write(`${errors} errors, ${problems.length - errors} warnings\n`)
  process.exit(errors > 0 ? 1 : 0)
}
