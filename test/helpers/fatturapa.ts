import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { XMLLINT } from './requires.ts'

/** The seller's settings the FatturaPA tests run with. */
export const FATTURAPA_SELLER = {
  SELLER_COUNTRY: 'IT',
  SELLER_NAME: 'Rossi S.r.l.',
  SELLER_ADDRESS: 'Via Roma 1|20121 Milano MI',
  SELLER_VAT_NUMBER: 'IT01234567890',
  SELLER_TAX_CODE: '01234567890',
  SELLER_STREET: 'Via Roma 1',
  SELLER_ZIP: '20121',
  SELLER_CITY: 'Milano',
  SELLER_PROVINCE: 'MI',
}

const XSD = path.resolve(import.meta.dirname, '../fixtures/fatturapa/Schema_del_file_xml_FatturaPA_v1.2.2.xsd')

/** Fails with xmllint's report unless the document is valid against the official FatturaPA 1.2.2 schema. */
export function assertValidFatturapa(xml: string | Buffer) {
  const dir = mkdtempSync(path.join(tmpdir(), 'fatturapa-'))
  try {
    const file = path.join(dir, 'document.xml')
    writeFileSync(file, xml)
    try {
      execFileSync(XMLLINT, ['--noout', '--nonet', '--schema', XSD, file], { stdio: 'pipe' })
    } catch (err) {
      assert.fail(`not valid FatturaPA 1.2.2: ${String((err as { stderr?: Buffer }).stderr ?? err)}\n${xml}`)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The text of each element named `tag`, in document order. */
export const values = (xml: string, tag: string) =>
  [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g'))].map((m) => m[1]!)
