import { ValidationError } from './errors.ts'

/**
 * Money crosses the API in major units and is kept in integer minor units; every conversion goes
 * through `toMinor`/`fromMinor` with the currency named. Exponents other than 2, from ISO 4217
 * (funds and precious metals left out).
 */
const EXPONENTS: Readonly<Record<string, number>> = {
  BIF: 0,
  CLP: 0,
  DJF: 0,
  GNF: 0,
  ISK: 0,
  JPY: 0,
  KMF: 0,
  KRW: 0,
  PYG: 0,
  RWF: 0,
  UGX: 0,
  UYI: 0,
  VND: 0,
  VUV: 0,
  XAF: 0,
  XOF: 0,
  XPF: 0,
  BHD: 3,
  IQD: 3,
  JOD: 3,
  KWD: 3,
  LYD: 3,
  OMR: 3,
  TND: 3,
  CLF: 4,
  UYW: 4,
}

const KNOWN = new Set([...Intl.supportedValuesOf('currency'), ...Object.keys(EXPONENTS)])

/** ICU's list, plus the exponent table's. */
export function isCurrency(code: string): boolean {
  return /^[A-Z]{3}$/.test(code) && KNOWN.has(code)
}

export function currencyExponent(currency: string): number {
  return EXPONENTS[currency] ?? 2
}

/** More decimals than the currency has is a 400 naming `field`. */
export function toMinor(amount: number, field: string, currency: string): number {
  const exponent = currencyExponent(currency)
  // Exact, where a float tolerance would round 29.999999999 to 30.00.
  if (!Number.isFinite(amount) || !decimalsAtMost(amount, exponent)) {
    throw new ValidationError(
      exponent === 0
        ? `${field} must be a whole number: ${currency} has no decimals`
        : `${field} must have at most ${exponent} decimals (${currency})`,
    )
  }
  return Math.round(amount * 10 ** exponent)
}

export function fromMinor(minor: number, currency: string): number {
  const exponent = currencyExponent(currency)
  return exponent === 0 ? minor : minor / 10 ** exponent
}

/** At most 2 decimals (12.5 % → 1250): not money. */
export function percentToBasisPoints(percent: number, field: string): number {
  if (!Number.isFinite(percent) || !decimalsAtMost(percent, 2))
    throw new ValidationError(`${field} must have at most 2 decimals`)
  return Math.round(percent * 100)
}

export function basisPointsToPercent(bp: number): number {
  return bp / 100
}

function decimalsAtMost(value: number, decimals: number): boolean {
  return new RegExp(decimals === 0 ? '^-?\\d+$' : `^-?\\d+(\\.\\d{1,${decimals}})?$`).test(String(value))
}
