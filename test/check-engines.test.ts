import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'

/** scripts/check-engines.mjs, which CI runs after npm ci: the oldest release of each promised Node line must be accepted by every package. */

const SCRIPT = path.resolve('scripts/check-engines.mjs')

function check(lockPackages: Record<string, unknown>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'check-engines-'))
  try {
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ engines: { node: '^22.12.0 || >=24.0.0' } }))
    fs.writeFileSync(path.join(dir, 'package-lock.json'), JSON.stringify({ packages: { '': {}, ...lockPackages } }))
    const result = spawnSync(process.execPath, [SCRIPT, dir], { encoding: 'utf8' })
    return { status: result.status, output: result.stdout + result.stderr }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

describe('the engines check', () => {
  it("passes this repository's lockfile", () => {
    const result = spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8' })
    assert.equal(result.status, 0, result.stdout + result.stderr)
  })

  it('refuses a package that wants a later Node 22 than the oldest promised, naming it', () => {
    const { status, output } = check({
      'node_modules/late': { version: '1.2.3', engines: { node: '>=22.19.0' } },
      'node_modules/fine': { version: '1.0.0', engines: { node: '>=18' } },
    })
    assert.equal(status, 1)
    assert.match(output, /late 1\.2\.3 wants Node >=22\.19\.0, refusing 22\.12\.0/)
    assert.doesNotMatch(output, /fine/)
  })

  it('ignores engines given in the old array form, and packages without engines', () => {
    assert.equal(
      check({
        'node_modules/old': { version: '0.1.0', engines: ['node >= 0.8'] },
        'node_modules/none': { version: '1.0.0' },
      }).status,
      0,
    )
  })
})
