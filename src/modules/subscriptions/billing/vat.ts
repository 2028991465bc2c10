import type { VatNumberStatus } from '../../../db/tables.ts'
import type { TaxRate } from './estimate.ts'

/**
 * Standard VAT rates in basis points (22 % = 2200), the default table of the local engine.
 *
 * Source: the European Commission's Taxes in Europe Database (TEDB), standard rates in force in
 * 2026, as republished on 2026-03-30 (vatnode.dev, "EU VAT Rates 2026", sourced daily from TEDB);
 * checked on 2026-11-26. Changes of the last two years it includes: FI 24 → 25.5 (September
 * 2024), SK 20 → 23 (January 2025), EE 22 → 24 (July 2025), RO 19 → 21 (August 2025).
 * Outside the EU: CH 8.1 (since January 2024, Swiss Federal Tax Administration), NO 25, GB 20.
 * VAT_RATES overrides or adds countries (`IT:22,DE:19`) without a release when a rate changes.
 */
export const STANDARD_VAT_BP: Readonly<Record<string, number>> = {
  AT: 2000, BE: 2100, BG: 2000, HR: 2500, CY: 1900, CZ: 2100, DK: 2500, EE: 2400, FI: 2550,
  FR: 2000, DE: 1900, GR: 2400, HU: 2700, IE: 2300, IT: 2200, LV: 2100, LT: 2100, LU: 1700,
  MT: 1800, NL: 2100, PL: 2300, PT: 2300, RO: 2100, SK: 2300, SI: 2200, ES: 2100, SE: 2500,
  CH: 810, NO: 2500, GB: 2000,
}

/** The 27 member states (ISO 3166-1 codes: Greece is GR here, EL only in VAT numbers). */
export const EU_MEMBER_STATES: ReadonlySet<string> = new Set([
  'AT', 'BE', 'BG', 'HR', 'CY', 'CZ', 'DK', 'EE', 'FI', 'FR', 'DE', 'GR', 'HU', 'IE', 'IT', 'LV', 'LT',
  'LU', 'MT', 'NL', 'PL', 'PT', 'RO', 'SK', 'SI', 'ES', 'SE',
])

/** The name of a reverse-charged tax line: the words the VAT Directive (art. 226 (11a)) requires on the invoice. */
export const REVERSE_CHARGE = 'Reverse charge'

/** `IT:22,DE:19,CH:8.1` → country → rate in basis points. */
export function parseVatRates(setting: string): Map<string, number> {
  const rates = new Map<string, number>()
  for (const entry of setting.split(',').map((s) => s.trim()).filter(Boolean)) {
    const match = /^([A-Z]{2}):(\d{1,2}(?:\.\d{1,2})?)$/.exec(entry)
    if (!match) throw new Error(`Invalid configuration: VAT_RATES entry "${entry}" must look like IT:22 (a country and a percent below 100)`)
    rates.set(match[1]!, Math.round(Number(match[2]) * 100))
  }
  return rates
}

/** The table with VAT_RATES' entries over it. */
export function vatTable(overrides: string): Map<string, number> {
  return new Map([...Object.entries(STANDARD_VAT_BP), ...parseVatRates(overrides)])
}

/** What decides a customer's tax. */
export interface TaxCustomer { country: string; vat_number: string | null; vat_number_status: VatNumberStatus | null }

/**
 * The tax of a customer, as Chargebee decides it with the EU VAT configuration and reverse
 * charge enabled for CH, NO and GB (docs/billing.md, "Taxes and currencies"):
 * - in the seller's country: that country's rate, VAT number or not (a domestic sale);
 * - in another country of the table with a VAT number a platform client marked `valid`:
 *   reverse-charged, rate 0, the line named "Reverse charge" and the lines' exempt reason
 *   `reverse_charge` (the buyer accounts for it);
 * - in another country of the table without one, or with one not marked valid (a number nobody
 *   checked is no proof of a business): the customer country's rate
 *   (destination principle of the EU's One-Stop Shop; CH, NO and GB likewise tax consumers);
 * - elsewhere: no tax line, the lines' exempt reason `export` (`tax_not_configured` in the
 *   seller's own country when the table has no rate for it, a seller outside Europe).
 */
export function taxFor(customer: TaxCustomer, seller: string, table: ReadonlyMap<string, number>): TaxRate {
  const rate = table.get(customer.country)
  if (rate === undefined) return { name: null, rate_bp: 0, exempt_reason: customer.country === seller ? 'tax_not_configured' : 'export' }
  if (customer.country !== seller && customer.vat_number && customer.vat_number_status === 'valid') return { name: REVERSE_CHARGE, rate_bp: 0, exempt_reason: 'reverse_charge' }
  return { name: `${customer.country} VAT`, rate_bp: rate, exempt_reason: null }
}
