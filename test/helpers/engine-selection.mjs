// Plain JavaScript: the summary reporter (loaded before tsx's hooks apply) and the test helpers
// read the same selection of engines.

/**
 * The skip reason of a test that needs PostgreSQL when the run chose other engines on purpose
 * (TEST_ENGINES=pglite): not a missing requirement, and a file of such tests alone ran nothing
 * the run asked for.
 */
export const LEFT_OUT = 'PostgreSQL left out of this run by TEST_ENGINES'

/** Every engine the suites run on. */
export const ALL_ENGINES = ['pglite', 'postgres']

/**
 * The engines this run was asked for: TEST_ENGINES (`pglite`, `postgres`, or both, comma
 * separated), or both when it is unset. A name that is not an engine is refused, not ignored: a
 * typo must not leave a run with fewer engines than it says.
 * @param {NodeJS.ProcessEnv} env
 * @returns {string[]}
 */
export function selectedEngines(env = process.env) {
  if (env.TEST_ENGINES === undefined || env.TEST_ENGINES.trim() === '') return [...ALL_ENGINES]
  const names = env.TEST_ENGINES.split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  const unknown = names.filter((n) => !ALL_ENGINES.includes(n))
  if (unknown.length)
    throw new Error(`TEST_ENGINES names no engine: ${unknown.join(', ')} (engines: ${ALL_ENGINES.join(', ')})`)
  return ALL_ENGINES.filter((e) => names.includes(e))
}
