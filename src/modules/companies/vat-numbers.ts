/**
 * The shape of a VAT number per country (VIES formats for the EU, the tax administrations' for CH,
 * NO and GB; elsewhere the country prefix and 2 to 13 letters or digits). Only the shape: whether it
 * is real is what `vat_number_status` records.
 */
const PATTERNS: Readonly<Record<string, RegExp>> = {
  AT: /^ATU\d{8}$/,
  BE: /^BE[01]\d{9}$/,
  BG: /^BG\d{9,10}$/,
  CY: /^CY\d{8}[A-Z]$/,
  CZ: /^CZ\d{8,10}$/,
  DE: /^DE\d{9}$/,
  DK: /^DK\d{8}$/,
  EE: /^EE\d{9}$/,
  ES: /^ES[A-Z0-9]\d{7}[A-Z0-9]$/,
  FI: /^FI\d{8}$/,
  FR: /^FR[A-HJ-NP-Z0-9]{2}\d{9}$/,
  GR: /^EL\d{9}$/,
  HR: /^HR\d{11}$/,
  HU: /^HU\d{8}$/,
  IE: /^IE(\d{7}[A-Z]{1,2}|\d[A-Z0-9+*]\d{5}[A-Z])$/,
  IT: /^IT\d{11}$/,
  LT: /^LT(\d{9}|\d{12})$/,
  LU: /^LU\d{8}$/,
  LV: /^LV\d{11}$/,
  MT: /^MT\d{8}$/,
  NL: /^NL\d{9}B\d{2}$/,
  PL: /^PL\d{10}$/,
  PT: /^PT\d{9}$/,
  RO: /^RO\d{2,10}$/,
  SE: /^SE\d{12}$/,
  SI: /^SI\d{8}$/,
  SK: /^SK\d{10}$/,
  CH: /^CHE\d{9}(MWST|TVA|IVA|TPV)?$/,
  NO: /^NO\d{9}(MVA)?$/,
  GB: /^(GB|XI)(\d{9}|\d{12}|GD\d{3}|HA\d{3})$/,
}

/** How each pattern reads in an error sentence. */
const EXAMPLES: Readonly<Record<string, string>> = {
  AT: 'ATU and 8 digits',
  BE: 'BE and 10 digits starting with 0 or 1',
  BG: 'BG and 9 or 10 digits',
  CY: 'CY, 8 digits and a letter',
  CZ: 'CZ and 8 to 10 digits',
  DE: 'DE and 9 digits',
  DK: 'DK and 8 digits',
  EE: 'EE and 9 digits',
  ES: 'ES, a letter or digit, 7 digits, a letter or digit',
  FI: 'FI and 8 digits',
  FR: 'FR, 2 letters (not I or O) or digits, 9 digits',
  GR: 'EL and 9 digits',
  HR: 'HR and 11 digits',
  HU: 'HU and 8 digits',
  IE: 'IE and 7 digits with 1 or 2 letters, or IE, a digit, a letter or digit, 5 digits and a letter',
  IT: 'IT and 11 digits',
  LT: 'LT and 9 or 12 digits',
  LU: 'LU and 8 digits',
  LV: 'LV and 11 digits',
  MT: 'MT and 8 digits',
  NL: 'NL, 9 digits, B and 2 digits',
  PL: 'PL and 10 digits',
  PT: 'PT and 9 digits',
  RO: 'RO and 2 to 10 digits',
  SE: 'SE and 12 digits',
  SI: 'SI and 8 digits',
  SK: 'SK and 10 digits',
  CH: 'CHE and 9 digits, then MWST, TVA, IVA or TPV or nothing',
  NO: 'NO and 9 digits, then MVA or nothing',
  GB: 'GB or XI, then 9 or 12 digits, GD and 3 digits or HA and 3 digits',
}

/** A VAT number as stored: spaces, dots and hyphens dropped, upper case. */
export function compactVatNumber(input: string): string {
  return input.replace(/[\s.-]/g, '').toUpperCase()
}

/** Null when `vatNumber` (compact) has the shape of a VAT number of `country`; else what it should look like. */
export function vatNumberShapeProblem(country: string, vatNumber: string): string | null {
  if (!/^[A-Z]{2}$/.test(country)) return 'the company needs an ISO 3166-1 alpha-2 country first'
  const pattern = PATTERNS[country] ?? new RegExp(`^${country}[A-Z0-9]{2,13}$`)
  if (pattern.test(vatNumber)) return null
  return `a VAT number of ${country} is ${EXAMPLES[country] ?? `${country} and 2 to 13 letters or digits`}`
}
