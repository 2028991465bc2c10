import fs from 'node:fs'
import type { Engine } from '../../src/db/database.ts'
import { engines } from './databases.ts'
// PostgreSQL is there but the run chose other engines: not a missing requirement, so CI=true
// neither throws nor fails the run for it (its reason does not start with "needs ").
import { LEFT_OUT } from './engine-selection.mjs'

/**
 * Tests that need something the machine may lack (a PostgreSQL server, Chromium, pdftotext) are
 * always registered: where it is missing they show as skipped with the reason, never vanish. A
 * suite-level skip would not do: node counts a skipped suite as 0 tests, so these options go on
 * each test.
 *
 * A skip is legitimate only outside CI (on a developer's machine without TEST_DATABASE_URL,
 * /usr/bin/chromium or /usr/bin/pdftotext), or when TEST_ENGINES leaves PostgreSQL out on purpose.
 * Under CI=true a missing requirement throws where the test is registered, so its file fails and
 * the run with it (test/helpers/summary-reporter.ts also fails the run on any such skip, and on a
 * file that ran no test on an engine).
 */

export const CHROMIUM = '/usr/bin/chromium'
/** Poppler's, which reads the text of the PDF documents the way a PDF reader's search does. */
export const PDFTOTEXT = '/usr/bin/pdftotext'

/** libxml2's, which validates the FatturaPA documents against the official XSD. */
export const XMLLINT = '/usr/bin/xmllint'

type Need = 'postgres' | 'chromium' | 'pdftotext' | 'xmllint'

const NAMES: Record<Need, string> = {
  postgres: 'PostgreSQL',
  chromium: 'Chromium',
  pdftotext: 'pdftotext',
  xmllint: 'xmllint',
}

function missing(need: Need): string | null {
  if (need === 'chromium')
    return fs.existsSync(CHROMIUM) ? null : `no Chromium at ${CHROMIUM} (apt-get install chromium)`
  if (need === 'pdftotext') {
    return fs.existsSync(PDFTOTEXT) ? null : `no pdftotext at ${PDFTOTEXT} (apt-get install poppler-utils)`
  }
  if (need === 'xmllint') {
    return fs.existsSync(XMLLINT) ? null : `no xmllint at ${XMLLINT} (apt-get install libxml2-utils)`
  }
  if (engines.includes('postgres')) return null
  return process.env.TEST_DATABASE_URL ? LEFT_OUT : 'TEST_DATABASE_URL is not set'
}

/** True when the need is met; for hooks, which run even when every test of their suite is skipped. */
export const has = (need: Need) => missing(need) === null

/** The options of a test that needs PostgreSQL, Chromium or pdftotext: `it(name, requires('postgres'), fn)`. */
export function requires(need: Need): { skip?: string } {
  const why = missing(need)
  if (why === null) return {}
  if (why === LEFT_OUT) return { skip: LEFT_OUT }
  const reason = `needs ${NAMES[need]}: ${why}`
  if (process.env.CI === 'true') throw new Error(`CI=true and a test would be skipped: ${reason}`)
  return { skip: reason }
}

/**
 * The options of a test, inside a suite run once per engine, that means something on PostgreSQL
 * only (several sessions, a killed backend): on PGlite it shows as skipped, and runs in the
 * suite on postgres.
 */
export function postgresOnly(engine: Engine): { skip?: string } {
  if (engine === 'postgres') return {}
  return has('postgres') ? { skip: 'PostgreSQL only: it runs in the suite on postgres' } : requires('postgres')
}
