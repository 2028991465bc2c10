import { it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'

/**
 * Suites declared through test/helpers/engine-suites.ts belong to the test file that declares
 * them, so the summary reporter counts their tests per file and engine (not under the helper).
 */
it('counts the tests of forEachEngine suites under their own file, per engine', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-suites-'))
  try {
    fs.mkdirSync(path.join(dir, 'test'))
    const helper = path.resolve('test/helpers/engine-suites.ts')
    fs.writeFileSync(
      path.join(dir, 'test', 'sums.test.ts'),
      `import { it } from 'node:test'\nimport { forEachEngine } from ${JSON.stringify(helper)}\n` +
        `forEachEngine('sums', () => { it('adds', () => {}) })\n`,
    )
    const { NODE_TEST_CONTEXT: _, ...env } = process.env
    const result = spawnSync(
      process.execPath,
      [
        '--import',
        import.meta.resolve('tsx'),
        '--test',
        `--test-reporter=${path.resolve('test/helpers/summary-reporter.mjs')}`,
        '--test-reporter-destination=stdout',
        path.join('test', 'sums.test.ts'),
      ],
      { cwd: dir, encoding: 'utf8', env: { ...env, CI: 'true', TEST_ENGINES: 'pglite' } },
    )
    const output = result.stdout + result.stderr
    assert.equal(result.status, 0, output)
    assert.match(output, /test\/sums\.test\.ts: pglite 1\n/)
    assert.doesNotMatch(output, /engine-suites/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
