import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

/**
 * The modules' boundaries (docs/architecture.md, "Boundaries"): a module with an index.ts is
 * imported only through it, never through another's repository; the billing engine imports no
 * other module; no import circle between files or between modules.
 */
const SRC = path.resolve(import.meta.dirname, '../src')
const MODULES = path.join(SRC, 'modules')

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? filesUnder(full) : full.endsWith('.ts') ? [full] : []
  })
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g
const imports = new Map(
  filesUnder(SRC).map((file) => {
    const specifiers = [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((m) => m[1] ?? m[2]!)
    const targets = specifiers.map((specifier) => path.resolve(path.dirname(file), specifier))
    return [file, targets] as const
  }),
)

const moduleOf = (file: string) =>
  file.startsWith(MODULES + path.sep) ? path.relative(MODULES, file).split(path.sep)[0]! : null
const shown = (file: string) => path.relative(SRC, file)
const crossings = [...imports].flatMap(([file, targets]) =>
  targets
    .filter((target) => moduleOf(file) !== null && moduleOf(target) !== null && moduleOf(target) !== moduleOf(file))
    .map((target) => ({ file, target, from: moduleOf(file)!, to: moduleOf(target)! })),
)

function cycles(graph: Map<string, Iterable<string>>): string[][] {
  const found: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const visit = (node: string, trail: string[]) => {
    state.set(node, 'open')
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...trail.slice(trail.indexOf(next)), next])
      else if (!state.has(next)) visit(next, [...trail, next])
    }
    state.set(node, 'done')
  }
  for (const node of graph.keys()) if (!state.has(node)) visit(node, [node])
  return found
}

describe('module boundaries', () => {
  it('imports a module that has an index.ts only through it', () => {
    const bypassing = crossings
      .filter(({ to }) => existsSync(path.join(MODULES, to, 'index.ts')))
      .filter(({ target }) => path.basename(target) !== 'index.ts')
      .map(({ file, target }) => `${shown(file)} imports ${shown(target)}`)
    assert.deepEqual(bypassing, [])
  })

  it("never imports another module's repository", () => {
    const reaching = crossings
      .filter(({ target }) => target.endsWith('.repository.ts'))
      .map(({ file, target }) => `${shown(file)} imports ${shown(target)}`)
    assert.deepEqual(reaching, [])
  })

  it('keeps the billing engine free of the lifecycle, Chargebee and every other module', () => {
    const leaving = crossings
      .filter(({ from }) => from === 'billing')
      .map(({ file, target }) => `${shown(file)} imports ${shown(target)}`)
    assert.deepEqual(leaving, [])
  })

  it('has no import circle between files', () => {
    assert.deepEqual(
      cycles(imports).map((cycle) => cycle.map(shown).join(' → ')),
      [],
    )
  })

  it('has no import circle between modules', () => {
    const graph = new Map<string, Set<string>>()
    for (const { from, to } of crossings) graph.set(from, (graph.get(from) ?? new Set()).add(to))
    assert.deepEqual(
      cycles(graph).map((cycle) => cycle.join(' → ')),
      [],
    )
  })
})
