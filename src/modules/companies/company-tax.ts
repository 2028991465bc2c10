import type { VatNumberStatus } from '../../db/tables.ts'
import { Forbidden, ValidationError, type ErrorDetail } from '../../core/errors.ts'
import { compactVatNumber, vatNumberShapeProblem } from './vat-numbers.ts'
import { PLATFORM_ONLY, type CompanyPatchBody } from './company-patch.ts'

// A company's tax identity (country, VAT number and its status): the rules on creation and on PATCH.

export interface TaxIdentity {
  country: string
  vat_number: string | null
  vat_number_status: VatNumberStatus | null
}
export type TaxInput = { country?: string; vat_number?: string | null; vat_number_status?: VatNumberStatus | null }

function compactOrNull(input: string | null | undefined): string | null {
  return input === undefined || input === null || input.trim() === '' ? null : compactVatNumber(input)
}

/**
 * Country, VAT number and status once `input` applies: a number is checked against the country it
 * will have; a new or changed number is not_validated unless its status comes with it.
 */
export function taxIdentity(current: TaxIdentity, input: TaxInput): TaxIdentity {
  const country = input.country ?? current.country
  const vatNumber = 'vat_number' in input ? compactOrNull(input.vat_number) : current.vat_number
  const numberChanged = vatNumber !== current.vat_number
  if (vatNumber !== null && (numberChanged || country !== current.country)) {
    const problem = vatNumberShapeProblem(country, vatNumber)
    if (problem) {
      const sent = 'vat_number' in input ? '' : " (send the company's vat_number, or null, with its new country)"
      throw new ValidationError(`body/vat_number ${vatNumber} is not a VAT number of ${country}: ${problem}${sent}`)
    }
  }
  if (input.vat_number_status != null && vatNumber === null) {
    throw new ValidationError('body/vat_number_status can only be given with a vat_number: the company has none')
  }
  if (input.vat_number_status === null && vatNumber !== null) {
    throw new ValidationError(
      'body/vat_number_status is null only without a vat_number: send vat_number null to clear both',
    )
  }
  if (vatNumber === null) return { country, vat_number: null, vat_number_status: null }
  const status =
    input.vat_number_status ?? (numberChanged ? 'not_validated' : (current.vat_number_status ?? 'not_validated'))
  return { country, vat_number: vatNumber, vat_number_status: status }
}

/** A company token sends its tax fields back as they are, or gets a 403 naming each it would change. */
export function refuseTaxChanges(patch: CompanyPatchBody, current: TaxIdentity) {
  const input = patch as TaxInput
  const changed = PLATFORM_ONLY.filter((key) => {
    if (!(key in patch)) return false
    if (key === 'vat_number') return compactOrNull(input.vat_number) !== current.vat_number
    return patch[key] !== current[key as keyof TaxIdentity]
  })
  if (changed.length === 0) return
  const details: ErrorDetail[] = changed.map((key) => ({
    field: `body/${key}`,
    message:
      `body/${key} is set by a platform client only: a company token may send back the value the company has, ` +
      `${JSON.stringify(current[key as keyof TaxIdentity])}`,
  }))
  throw new Forbidden(details.map((d) => d.message).join('; '), details)
}
