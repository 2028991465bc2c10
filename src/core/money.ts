import { ValidationError } from './errors.ts'

/**
 * Money crosses the API in major units (29.90 EUR, 1000 JPY) and is kept and computed in integer
 * minor units (2990, 1000). The number of decimals between the two is the currency's ISO 4217
 * exponent, and every conversion goes through `toMinor`/`fromMinor` with the currency named:
 * nothing else in the service multiplies or divides an amount by 100.
 *
 * Exponents other than 2, from ISO 4217 list one (the "minor unit" column), as published by
 * SIX Group, the maintenance agency; the codes of funds and precious metals (no minor unit) are
 * left out. Every other active code has 2.
 */
const EXPONENTS: Readonly<Record<string, number>> = {
  // 0: no minor unit in use.
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0,
  VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  // 3: a thousandth (fils, baisa, millime, dirham).
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  // 4: units of account.
  CLF: 4, UYW: 4,
}

const KNOWN = new Set([...Intl.supportedValuesOf('currency'), ...Object.keys(EXPONENTS)])

/** True for an ISO 4217 code this service can price in (ICU's list, plus the exponent table's). */
export function isCurrency(code: string): boolean {
  return /^[A-Z]{3}$/.test(code) && KNOWN.has(code)
}

/** The ISO 4217 exponent: 2 for EUR, 0 for JPY, 3 for KWD. */
export function currencyExponent(currency: string): number {
  return EXPONENTS[currency] ?? 2
}

/**
 * A decimal amount in major units as integer minor units of `currency` (29.9 EUR → 2990,
 * 1000 JPY → 1000); more decimals than the currency has is a 400 naming `field`.
 */
export function toMinor(amount: number, field: string, currency: string): number {
  const exponent = currencyExponent(currency)
  // The shortest text of a number that has at most n decimals has at most n decimals, and JSON's
  // 29.999999999 keeps its 9: exact, where a float tolerance would round it to 30.00.
  if (!Number.isFinite(amount) || !decimalsAtMost(amount, exponent)) {
    throw new ValidationError(exponent === 0
      ? `${field} must be a whole number: ${currency} has no decimals`
      : `${field} must have at most ${exponent} decimals (${currency})`)
  }
  return Math.round(amount * 10 ** exponent)
}

/** Integer minor units of `currency` as a decimal amount in major units (2990 EUR → 29.9). */
export function fromMinor(minor: number, currency: string): number {
  const exponent = currencyExponent(currency)
  // Dividing by a power of ten gives the nearest double of the decimal, which prints as it.
  return exponent === 0 ? minor : minor / 10 ** exponent
}

/** A percentage with at most 2 decimals (12.5 %) in basis points (1250): not money, whatever the currency. */
export function percentToBasisPoints(percent: number, field: string): number {
  if (!Number.isFinite(percent) || !decimalsAtMost(percent, 2)) throw new ValidationError(`${field} must have at most 2 decimals`)
  return Math.round(percent * 100)
}

export function basisPointsToPercent(bp: number): number {
  return bp / 100
}

function decimalsAtMost(value: number, decimals: number): boolean {
  return new RegExp(decimals === 0 ? '^-?\\d+$' : `^-?\\d+(\\.\\d{1,${decimals}})?$`).test(String(value))
}
