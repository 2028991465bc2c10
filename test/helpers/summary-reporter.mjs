import fs from 'node:fs'
import path from 'node:path'

/**
 * A second reporter of `npm test` (after spec): counts the tests that really ran in each file on
 * each engine, and lists every skip with its reason. Node's own summary cannot show what vanished:
 * a file that registered nothing, an engine whose suites were never registered, a skipped suite
 * (counted as 0 tests). Under CI=true the run fails when:
 * - a test file of test/ did not run, or ran no test (a file whose every test needs an engine
 *   that TEST_ENGINES left out ran all the run asked of it);
 * - a file with suites per engine (named `... on pglite` / `... on postgres`, the convention of
 *   every such suite) ran no test on one of the engines of the run (both, or TEST_ENGINES's);
 * - a test was skipped for a missing requirement (reasons starting "needs ", test/helpers/requires.ts).
 * Outside CI the same findings are printed, as notes.
 */

// Plain JavaScript: node loads reporters before tsx's --import hooks apply.

import { ALL_ENGINES, LEFT_OUT, selectedEngines } from './engine-selection.mjs'

/** The engines every file with engine suites must have run tests on: TEST_ENGINES's, or both. */
const ENGINES = selectedEngines()
const TAG = new RegExp(`\\bon (${ALL_ENGINES.join('|')})\\b`)

/** @param {string} dir @returns {string[]} */
function testFiles(dir) {
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : testFiles(full)
    return entry.name.endsWith('.test.ts') ? [full] : []
  })
}

export default async function* summaryReporter(source) {
  const files = new Map()
  const names = new Map() // per file: the names of the tests under way, by nesting
  const skips = []
  const count = (file) => {
    let c = files.get(file)
    if (!c)
      files.set(file, (c = { ran: { pglite: 0, postgres: 0, none: 0 }, engineSuites: false, skipped: 0, leftOut: 0 }))
    return c
  }

  for await (const { type, data } of source) {
    const file = data.file
    if (!file) continue
    if (type === 'test:enqueue') count(file)
    if (data.name === undefined || data.name === file || data.nesting === undefined) continue
    const stack = names.get(file) ?? []
    names.set(file, stack)
    if (type === 'test:start') stack.splice(data.nesting, Infinity, data.name)
    if (type !== 'test:pass' && type !== 'test:fail') continue
    const trail = [...stack.slice(0, data.nesting), data.name]
    const engine = trail.map((n) => TAG.exec(n)?.[1]).find(Boolean)
    const c = count(file)
    if (engine) c.engineSuites = true
    if (data.details?.type === 'suite') continue
    if (data.skip !== undefined && data.skip !== false) {
      c.skipped++
      if (data.skip === LEFT_OUT) c.leftOut++
      skips.push({
        file,
        name: trail.join(' > '),
        reason: typeof data.skip === 'string' ? data.skip : '(no reason given)',
      })
    } else if (type === 'test:pass' && !data.todo) {
      c.ran[engine ?? 'none']++
    }
  }

  const ci = process.env.CI === 'true'
  const problems = []
  const rel = (file) => path.relative(process.cwd(), file)
  const lines = [
    '',
    `Tests that ran (passed), per file and engine (engines of this run: ${ENGINES.join(', ')}${process.env.TEST_ENGINES ? ', from TEST_ENGINES' : ''}):`,
  ]
  for (const [file, c] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    const parts = c.engineSuites
      ? ENGINES.map((e) => `${e} ${c.ran[e]}`).concat(c.ran.none ? [`other ${c.ran.none}`] : [])
      : [`${c.ran.none + c.ran.pglite + c.ran.postgres}`]
    lines.push(`  ${rel(file)}: ${parts.join(', ')}${c.skipped ? `, skipped ${c.skipped}` : ''}`)
    const total = c.ran.none + c.ran.pglite + c.ran.postgres
    if (total === 0 && !(c.leftOut > 0 && c.leftOut === c.skipped)) problems.push(`${rel(file)} ran no test`)
    else if (c.engineSuites)
      for (const e of ENGINES) if (c.ran[e] === 0) problems.push(`${rel(file)} ran no test on ${e}`)
  }
  const seen = new Set(files.keys())
  const notRun = testFiles(path.resolve('test')).filter((file) => !seen.has(file))
  // Outside CI a run of a few files is normal: one line says how many were left out.
  if (ci) for (const file of notRun) problems.push(`${rel(file)} did not run`)
  else if (notRun.length) lines.push(`  (${notRun.length} test file(s) of test/ were not part of this run)`)
  if (skips.length) {
    lines.push('Skipped:')
    for (const s of skips) lines.push(`  ${rel(s.file)}: ${s.name}: ${s.reason}`)
  }
  const unmet = skips.filter((s) => s.reason.startsWith('needs '))
  if (unmet.length) problems.push(`${unmet.length} test(s) skipped for a missing requirement (listed above)`)

  if (problems.length === 0) {
    lines.push('Every test file of the run ran tests, on every engine it has suites for.')
  } else if (ci) {
    lines.push(
      `CI=true: the run fails, ${problems.length} test(s) or file(s) did not run:`,
      ...problems.map((p) => `  ${p}`),
    )
    process.exitCode = 1
  } else {
    lines.push(`Not run here (CI=true would fail on these):`, ...problems.map((p) => `  ${p}`))
  }
  yield `${lines.join('\n')}\n`
}
