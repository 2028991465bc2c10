/**
 * ISO 3166-1 alpha-2 codes, as ICU knows them. The schema only checks the shape (`^[A-Z]{2}$`);
 * "XX" has that shape and names no country. ICU also names some codes that are not countries
 * (regions, groupings, withdrawn codes): those are refused.
 */
const regionNames = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' })
const NOT_COUNTRIES = new Set([
  'EU',
  'EZ',
  'UN',
  'ZZ',
  'QO',
  'UK',
  'AN',
  'YU',
  'CS',
  'DD',
  'FX',
  'TP',
  'ZR',
  'BU',
  'SU',
])

export function isCountry(code: string): boolean {
  return /^[A-Z]{2}$/.test(code) && !NOT_COUNTRIES.has(code) && regionNames.of(code) !== undefined
}
