import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'

/**
 * The summary reporter's verdict under CI=true, on small test files of a scratch directory: a
 * file whose tests were all left out because TEST_ENGINES chose other engines passes; a file that
 * ran nothing, or skipped a test for a missing requirement, fails the run.
 */

const REPORTER = path.resolve('test/helpers/summary-reporter.mjs')

function runReporter(files: Record<string, string>, env: Record<string, string>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'summary-reporter-'))
  try {
    fs.mkdirSync(path.join(dir, 'test'))
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, 'test', name), text)
    const result = spawnSync(
      process.execPath,
      [
        '--test',
        `--test-reporter=${REPORTER}`,
        '--test-reporter-destination=stdout',
        ...Object.keys(files).map((name) => path.join('test', name)),
      ],
      { cwd: dir, encoding: 'utf8', env: childEnv(env) },
    )
    return { status: result.status, output: result.stdout + result.stderr }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** This process's environment without the test runner's own marker, which would make the child skip its files. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const { NODE_TEST_CONTEXT: _, ...rest } = process.env
  return { ...rest, CI: 'true', TEST_ENGINES: '', ...env }
}

const LEFT_OUT = "'PostgreSQL left out of this run by TEST_ENGINES'"

describe('the summary reporter under CI=true', () => {
  it('passes a file whose every test needs an engine the run left out', () => {
    const { status, output } = runReporter(
      {
        'postgres-only.test.mjs': `import { it } from 'node:test'\nit('talks to a server', { skip: ${LEFT_OUT} }, () => {})\n`,
        'plain.test.mjs': `import { it } from 'node:test'\nit('adds', () => {})\n`,
      },
      { TEST_ENGINES: 'pglite' },
    )
    assert.equal(status, 0, output)
    assert.match(output, /Every test file of the run ran tests/)
  })

  it('fails a file that ran no test', () => {
    const { status, output } = runReporter(
      {
        'empty.test.mjs': `import { it } from 'node:test'\nit('is skipped', { skip: 'nothing to do' }, () => {})\n`,
      },
      {},
    )
    assert.equal(status, 1, output)
    assert.match(output, /empty\.test\.mjs ran no test/)
  })

  it('fails a test skipped for a missing requirement', () => {
    const { status, output } = runReporter(
      {
        'needs.test.mjs': `import { it } from 'node:test'\nit('opens a page', { skip: 'needs Chromium: none here' }, () => {})\nit('adds', () => {})\n`,
      },
      {},
    )
    assert.equal(status, 1, output)
    assert.match(output, /skipped for a missing requirement/)
  })

  it('fails a file with engine suites that ran nothing on an engine of the run', () => {
    const { status, output } = runReporter(
      {
        'engines.test.mjs': `import { describe, it } from 'node:test'\ndescribe('x on pglite', () => { it('a', () => {}) })\ndescribe('x on postgres', () => { it('b', { skip: 'broken' }, () => {}) })\n`,
      },
      { TEST_ENGINES: 'pglite,postgres' },
    )
    assert.equal(status, 1, output)
    assert.match(output, /engines\.test\.mjs ran no test on postgres/)
  })
})
