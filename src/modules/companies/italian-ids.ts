import { ValidationError, type ErrorDetail } from '../../core/errors.ts'

/**
 * A company's Italian identifiers for electronic invoices (decisions §9.7): its codice fiscale and
 * codice destinatario. Only their shape is checked, as VAT numbers' is; any client may write them.
 */
export const ITALIAN_ID_FIELDS = ['tax_code', 'sdi_code'] as const
type Field = (typeof ITALIAN_ID_FIELDS)[number]

// A person's 16 characters (with the letters that replace digits of a duplicate), or a business's 11 digits.
const TAX_CODE = /^([A-Z]{6}[0-9LMNP-V]{2}[ABCDEHLMPRST][0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{3}[A-Z]|\d{11})$/
const SDI_CODE = /^[A-Z0-9]{7}$/

const RULES: Record<Field, { pattern: RegExp; reads: string }> = {
  tax_code: {
    pattern: TAX_CODE,
    reads: "a codice fiscale: a person's 16 letters and digits (RSSMRA85T10A562S) or a business's 11 digits",
  },
  sdi_code: {
    pattern: SDI_CODE,
    reads: 'a codice destinatario: 7 letters or digits, 0000000 when the documents go to the pec address',
  },
}

const compact = (value: string) => value.replace(/[\s.-]/g, '').toUpperCase()

/** The fields of `input` as stored (compact, upper case; empty is null), or a 400 naming each malformed one. */
export function italianIds(input: Record<string, unknown>): Partial<Record<Field, string | null>> {
  const out: Partial<Record<Field, string | null>> = {}
  const details: ErrorDetail[] = []
  for (const field of ITALIAN_ID_FIELDS) {
    if (!(field in input) || input[field] === undefined) continue
    const raw = input[field]
    const value = typeof raw === 'string' && raw.trim() !== '' ? compact(raw) : null
    if (value !== null && !RULES[field].pattern.test(value))
      details.push({ field: `body/${field}`, message: `body/${field} ${value} is not ${RULES[field].reads}` })
    out[field] = value
  }
  if (details.length > 0) throw new ValidationError(details.map((d) => d.message).join('; '), details)
  return out
}
