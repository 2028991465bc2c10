import { Type } from 'typebox'

/** The seller's settings: the data printed on the documents, and what the FatturaPA documents need. */
export const SELLER_SETTINGS = {
  SELLER_COUNTRY: Type.String({
    default: 'IT',
    pattern: '^[A-Z]{2}$',
    description:
      'Where the seller is established (ISO 3166-1 alpha-2): valid VAT numbers elsewhere are reverse-charged',
  }),
  SELLER_NAME: Type.String({
    default: '',
    maxLength: 200,
    description: "The seller's name on the invoices and credit notes (the portal's printable page and the PDFs)",
  }),
  SELLER_ADDRESS: Type.String({
    default: '',
    maxLength: 500,
    description: "The seller's address on the invoices and credit notes, lines separated by |",
  }),
  SELLER_VAT_NUMBER: Type.String({
    default: '',
    pattern: '^([A-Z]{2}[0-9A-Z]{2,13})?$',
    description:
      "The seller's VAT number with its country prefix (IT01234567890), printed on every invoice and credit note",
  }),
  SELLER_TAX_CODE: Type.String({
    default: '',
    pattern: '^([A-Z0-9]{11,16})?$',
    description: "The seller's codice fiscale (FatturaPA); with SELLER_COUNTRY=IT, required once one of them is set",
  }),
  SELLER_STREET: Type.String({
    default: '',
    maxLength: 60,
    description:
      "The seller's street and number (FatturaPA Indirizzo); with SELLER_COUNTRY=IT, required once one of them is set",
  }),
  SELLER_ZIP: Type.String({
    default: '',
    pattern: '^([0-9]{5})?$',
    description: "The seller's CAP, 5 digits (FatturaPA); with SELLER_COUNTRY=IT, required once one of them is set",
  }),
  SELLER_CITY: Type.String({
    default: '',
    maxLength: 60,
    description: "The seller's comune (FatturaPA); with SELLER_COUNTRY=IT, required once one of them is set",
  }),
  SELLER_PROVINCE: Type.String({
    default: '',
    pattern: '^([A-Z]{2})?$',
    description:
      "The seller's province, 2 letters like MI (FatturaPA); with SELLER_COUNTRY=IT, required once one of them is set",
  }),
  SELLER_TAX_REGIME: Type.String({
    default: 'RF01',
    pattern: '^RF(0[1-9]|1[0-9])$',
    description: "The seller's regime fiscale in FatturaPA, RF01 (ordinary) to RF19",
  }),
}

/** The settings only the FatturaPA documents read: giving any of them asks for the rest. */
const FATTURAPA_ONLY = ['SELLER_TAX_CODE', 'SELLER_STREET', 'SELLER_ZIP', 'SELLER_CITY', 'SELLER_PROVINCE'] as const

/** What the FatturaPA documents need of the seller and the settings leave empty. */
export function missingSellerSettings(config: Readonly<Record<string, unknown>>): string[] {
  const needed = ['SELLER_NAME', 'SELLER_VAT_NUMBER', ...FATTURAPA_ONLY] as const
  return needed.filter((key) => config[key] === '')
}

// With none of them given (the PDFs need only the name, address and VAT number), the service
// starts with SELLER_COUNTRY's default IT, and the FatturaPA routes answer 409.
export const partlyGiven = (config: Readonly<Record<string, unknown>>, missing: string[]) =>
  config.SELLER_COUNTRY === 'IT' && missing.length > 0 && FATTURAPA_ONLY.some((key) => config[key] !== '')

/** The seller as the FatturaPA documents read it, or null with the sentence a request is answered with. */
export function fatturapaSeller(config: Readonly<Record<string, unknown>>) {
  const missing = missingSellerSettings(config)
  const text = (key: string) => String(config[key])
  if (config.SELLER_COUNTRY !== 'IT')
    return { seller: null, unavailable: 'FatturaPA documents are made only when SELLER_COUNTRY is IT' }
  if (missing.length > 0)
    return { seller: null, unavailable: `FatturaPA documents need the seller's settings ${missing.join(', ')}` }
  return {
    unavailable: '',
    seller: {
      name: text('SELLER_NAME'),
      vatNumber: text('SELLER_VAT_NUMBER'),
      taxCode: text('SELLER_TAX_CODE'),
      street: text('SELLER_STREET'),
      zip: text('SELLER_ZIP'),
      city: text('SELLER_CITY'),
      province: text('SELLER_PROVINCE'),
      taxRegime: text('SELLER_TAX_REGIME'),
    },
  }
}
