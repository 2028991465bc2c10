import type { VatNumberStatus } from '../../db/tables.ts'
import type { TaxRate } from './billing.estimate.ts'

/**
 * Standard VAT rates in basis points (22 % = 2200), the local engine's default table, from the
 * European Commission's TEDB. VAT_RATES overrides or adds countries (`IT:22,DE:19`) without a release.
 */
export const STANDARD_VAT_BP: Readonly<Record<string, number>> = {
  AT: 2000,
  BE: 2100,
  BG: 2000,
  HR: 2500,
  CY: 1900,
  CZ: 2100,
  DK: 2500,
  EE: 2400,
  FI: 2550,
  FR: 2000,
  DE: 1900,
  GR: 2400,
  HU: 2700,
  IE: 2300,
  IT: 2200,
  LV: 2100,
  LT: 2100,
  LU: 1700,
  MT: 1800,
  NL: 2100,
  PL: 2300,
  PT: 2300,
  RO: 2100,
  SK: 2300,
  SI: 2200,
  ES: 2100,
  SE: 2500,
  CH: 810,
  NO: 2500,
  GB: 2000,
}

/** ISO 3166-1 codes: Greece is GR here, EL only in VAT numbers. */
export const EU_MEMBER_STATES: ReadonlySet<string> = new Set([
  'AT',
  'BE',
  'BG',
  'HR',
  'CY',
  'CZ',
  'DK',
  'EE',
  'FI',
  'FR',
  'DE',
  'GR',
  'HU',
  'IE',
  'IT',
  'LV',
  'LT',
  'LU',
  'MT',
  'NL',
  'PL',
  'PT',
  'RO',
  'SK',
  'SI',
  'ES',
  'SE',
])

/** The words the VAT Directive (art. 226 (11a)) requires on the invoice. */
export const REVERSE_CHARGE = 'Reverse charge'

export function parseVatRates(setting: string): Map<string, number> {
  const rates = new Map<string, number>()
  for (const entry of setting
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const match = /^([A-Z]{2}):(\d{1,2}(?:\.\d{1,2})?)$/.exec(entry)
    if (!match)
      throw new Error(
        `Invalid configuration: VAT_RATES entry "${entry}" must look like IT:22 (a country and a percent below 100)`,
      )
    rates.set(match[1]!, Math.round(Number(match[2]) * 100))
  }
  return rates
}

export function vatTable(overrides: string): Map<string, number> {
  return new Map([...Object.entries(STANDARD_VAT_BP), ...parseVatRates(overrides)])
}

export interface TaxCustomer {
  country: string
  vat_number: string | null
  vat_number_status: VatNumberStatus | null
}

/**
 * The tax of a customer, as Chargebee decides it with EU VAT and reverse charge for CH, NO and GB:
 * the seller's own country: its rate; another country of the table with a `valid` VAT number:
 * reverse charge; without one: that country's rate; elsewhere: no tax line (`export`).
 */
export function taxFor(customer: TaxCustomer, seller: string, table: ReadonlyMap<string, number>): TaxRate {
  const rate = table.get(customer.country)
  if (rate === undefined)
    return { name: null, rate_bp: 0, exempt_reason: customer.country === seller ? 'tax_not_configured' : 'export' }
  if (customer.country !== seller && customer.vat_number && customer.vat_number_status === 'valid')
    return { name: REVERSE_CHARGE, rate_bp: 0, exempt_reason: 'reverse_charge' }
  return { name: `${customer.country} VAT`, rate_bp: rate, exempt_reason: null }
}
