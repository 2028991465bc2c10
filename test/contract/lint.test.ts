import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { lintOpenApi, type LintProblem } from '../../scripts/lint-openapi.ts'

/**
 * The warnings that stay, each with its reason in docs/api-contract.md ("Lint"). A new kind of
 * warning fails this test until it is fixed or documented there and added here.
 */
const ACCEPTED_WARNINGS = new Set(['redocly no-ambiguous-paths'])

describe('OpenAPI document under Redocly (recommended) and Spectral (spectral:oas)', () => {
  let t: TestApp
  let problems: LintProblem[]
  before(async () => {
    t = await buildTestApp('pglite')
    problems = await lintOpenApi(await t.json(200, { url: '/openapi.json', token: null }))
  })
  after(async () => {
    await t?.close()
  })

  it('has no error', () => {
    assert.deepEqual(
      problems.filter((p) => p.severity === 'error').map((p) => `${p.linter} ${p.rule}: ${p.message} at ${p.where}`),
      [],
    )
  })

  it('has only the warnings documented in docs/api-contract.md', () => {
    assert.deepEqual(
      problems
        .filter((p) => p.severity === 'warning' && !ACCEPTED_WARNINGS.has(`${p.linter} ${p.rule}`))
        .map((p) => `${p.linter} ${p.rule}: ${p.message} at ${p.where}`),
      [],
    )
  })

  it('runs both linters on the document (a broken document is reported)', async () => {
    // Guards against a linter that silently checks nothing: one operationId twice is an error to both.
    const op = { operationId: 'twice', responses: { 200: { description: 'OK' } } }
    const broken = await lintOpenApi({
      openapi: '3.1.0',
      info: { title: 'x', version: '1' },
      paths: { '/x': { get: op }, '/y': { get: op } },
    })
    assert.ok(
      broken.some((p) => p.linter === 'redocly' && p.severity === 'error'),
      'redocly reports an error',
    )
    assert.ok(
      broken.some((p) => p.linter === 'spectral' && p.severity === 'error'),
      'spectral reports an error',
    )
  })
})
