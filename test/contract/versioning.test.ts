import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

/** The version integrators read in /openapi.json is the package's, and CHANGELOG.md says what each one changed. */
const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string
  engines: { node: string }
}
const changelog = fs.readFileSync(new URL('../../CHANGELOG.md', import.meta.url), 'utf8')
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?$/

describe('the version', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp('pglite')
  })
  after(async () => {
    await t?.close()
  })

  it("is a semantic version, and /openapi.json info.version is package.json's", async () => {
    assert.match(pkg.version, SEMVER)
    const doc = await t.json(200, { url: '/openapi.json', token: null })
    assert.equal(doc.info.version, pkg.version)
  })

  it('has its section in CHANGELOG.md (Keep a Changelog), newest first, each version once', () => {
    assert.match(changelog, /^# Changelog\n/)
    assert.match(changelog, /keepachangelog\.com/)
    assert.match(changelog, /semver\.org/)
    const sections = [...changelog.matchAll(/^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}|Unreleased))?$/gm)].map((m) => ({
      version: m[1]!,
      date: m[2],
    }))
    const versions = sections.map((s) => s.version)
    assert.ok(versions.includes(pkg.version), `CHANGELOG.md has a section for ${pkg.version}`)
    assert.deepEqual(versions.at(-1), '1.0.0', 'the first released version is 1.0.0')
    assert.equal(new Set(versions).size, versions.length)
    for (const { version, date } of sections) {
      assert.match(version, SEMVER, `## [${version}] is a semantic version`)
      assert.ok(date, `## [${version}] says its date, or Unreleased`)
    }
    const order = versions.map((v) => v.split(/[.-]/).slice(0, 3).map(Number))
    for (let i = 1; i < order.length; i++) {
      const [a, b] = [order[i - 1]!, order[i]!]
      assert.ok(
        a[0]! > b[0]! || (a[0] === b[0] && (a[1]! > b[1]! || (a[1] === b[1] && a[2]! > b[2]!))),
        `${versions[i - 1]} comes before ${versions[i]}`,
      )
    }
    // A version that drops a Node line or changes a shape is a new major.
    assert.match(
      changelog,
      new RegExp(`## \\[${pkg.version.replace(/\./g, '\\.')}\\][^]*?### Removed[^]*?Node\\.js 20`),
    )
  })

  it('supports Node.js 22 and 24 only', () => {
    assert.equal(pkg.engines.node, '^22.12.0 || >=24.0.0')
  })
})
