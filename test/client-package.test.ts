import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { ADMIN, buildTestApp, type TestApp } from './helpers/app.ts'

/**
 * clients/typescript as its users get it: `npm pack` (which runs the package's `prepare`, the
 * build), the tarball unpacked into a consumer project's node_modules, and test/client-consumer
 * type-checked and run there against the service listening on a port.
 *
 * The consumer project lies outside the repository, so nothing resolves from the root's
 * node_modules by accident: its node_modules holds the package and links to the root's copies of
 * the dependencies the package declares, and nothing else (what `npm install` of the tarball
 * would fetch from the registry; here it needs no network).
 */
const ROOT = path.resolve(import.meta.dirname, '..')
const PACKAGE = path.join(ROOT, 'clients/typescript')
const CONSUMER = path.join(ROOT, 'test/client-consumer')
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc')

interface PackageJson {
  name: string
  version: string
  dependencies?: Record<string, string>
  devDependencies?: Record<string, string>
}
const readJson = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as PackageJson

/** npm as the test runner was started by it (`npm test`), else the one on PATH. */
function npm(args: string[], cwd: string): string {
  const cli = process.env.npm_execpath
  const [command, argv] = cli && /\.c?js$/.test(cli) ? [process.execPath, [cli, ...args]] : ['npm', args]
  return execFileSync(command, argv, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_update_notifier: 'false' },
  })
}

/** consumer.ts's `session`, as the test reads its result. */
type Session = (
  baseUrl: string,
  clientId: string,
  clientSecret: string,
  suffix: string,
) => Promise<{
  company: { name: string; plan_quantity: number | null }
  productVisible: boolean
  missing: { status: number; error?: { code: string; errors: string } }
}>

describe('the client package (clients/typescript)', () => {
  const pkg = readJson(path.join(PACKAGE, 'package.json'))
  let work: string
  let consumer: string
  let packed: string[]

  before(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'client-package-'))
    // --offline: packing needs nothing from the registry (the build's tsc is the root's).
    const out = npm(['pack', '--json', '--offline', '--pack-destination', work], PACKAGE)
    // The JSON report follows whatever the build printed.
    const [result] = JSON.parse(out.slice(out.search(/^\[/m))) as { filename: string; files: { path: string }[] }[]
    packed = result!.files.map((f) => f.path).sort()
    consumer = path.join(work, 'consumer')
    fs.cpSync(CONSUMER, consumer, { recursive: true })
    const installed = path.join(consumer, 'node_modules', ...pkg.name.split('/'))
    fs.mkdirSync(installed, { recursive: true })
    execFileSync('tar', ['-xzf', path.join(work, result!.filename), '-C', installed, '--strip-components=1'])
    for (const name of Object.keys(pkg.dependencies ?? {})) {
      const link = path.join(consumer, 'node_modules', ...name.split('/'))
      fs.mkdirSync(path.dirname(link), { recursive: true })
      fs.symlinkSync(path.join(ROOT, 'node_modules', name), link, 'junction')
    }
  })
  after(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true })
  })

  it("carries the service's version and the openapi-fetch the service is tested with", () => {
    const root = readJson(path.join(ROOT, 'package.json'))
    assert.equal(
      pkg.version,
      root.version,
      'clients/typescript/package.json has the version of the service whose document it was generated from',
    )
    // The consumer below runs on the root's copy: the range the package declares must allow it.
    assert.equal(pkg.dependencies?.['openapi-fetch'], `^${root.devDependencies?.['openapi-fetch']}`)
  })

  it('packs the built JavaScript and declarations, not the sources', () => {
    assert.deepEqual(packed, ['README.md', 'dist/index.d.ts', 'dist/index.js', 'dist/schema.d.ts', 'package.json'])
  })

  it('type-checks in a consumer project: defaulted body fields optional, wrong bodies refused', () => {
    try {
      execFileSync(process.execPath, [TSC, '-p', consumer], {
        cwd: consumer,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string }
      assert.fail(`tsc on the consumer project failed:\n${stdout ?? ''}${stderr ?? ''}`)
    }
  })

  describe('against the service', () => {
    let t: TestApp
    let baseUrl: string
    before(async () => {
      t = await buildTestApp('pglite')
      baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' })
    })
    after(async () => {
      await t?.close()
    })

    it('takes a token, writes leaving defaulted fields out, reads back, and types an error answer', async () => {
      // Typed here by hand: the root's typecheck cannot resolve the consumer's import of the package.
      const { session } = (await import(pathToFileURL(path.join(consumer, 'consumer.ts')).href)) as { session: Session }
      const result = await session(baseUrl, ADMIN.client_id, ADMIN.client_secret, 'pkg')
      assert.equal(result.company.name, 'Acme Srl')
      assert.equal(result.company.plan_quantity, 1)
      assert.equal(result.productVisible, true)
      assert.equal(result.missing.status, 404)
      assert.equal(result.missing.error?.code, 'not_found')
    })
  })
})
