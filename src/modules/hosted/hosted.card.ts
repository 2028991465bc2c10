import type { PaymentSource } from '../../db/tables.ts'
import { testBehaviourOf } from '../subscriptions/billing/test-cards.ts'

// The payment page's test card: checked (digits, length, Luhn); only brand, last four and expiry are kept.
export type CardProblem = 'number' | 'expiry' | 'declined'

export function luhnValid(digits: string): boolean {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/** The card network by its leading digits (IIN ranges); "card" when not one of the common ones. */
export function brandOf(digits: string): string {
  if (/^4/.test(digits)) return 'visa'
  if (/^(5[1-5]|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720)/.test(digits)) return 'mastercard'
  if (/^3[47]/.test(digits)) return 'american_express'
  if (/^(6011|65|64[4-9])/.test(digits)) return 'discover'
  if (/^35(2[89]|[3-8]\d)/.test(digits)) return 'jcb'
  return 'card'
}

/**
 * Reads the form's number ("4242 4242 4242 4242", spaces and dashes allowed) and expiry; answers
 * the card to keep, or which field is wrong. `now` decides whether the card has expired. The
 * number's test behaviour (billing/test-cards.ts) is kept with the card; the number is not.
 */
export function readCard(
  form: { number?: string; expiry_month?: string; expiry_year?: string },
  now: Date,
): { card: PaymentSource } | { problem: CardProblem } {
  const digits = (form.number ?? '').replace(/[\s-]/g, '')
  if (!/^\d{12,19}$/.test(digits) || !luhnValid(digits)) return { problem: 'number' }
  const month = Number(form.expiry_month)
  let year = Number(form.expiry_year)
  if (!Number.isInteger(month) || month < 1 || month > 12 || !Number.isInteger(year)) return { problem: 'expiry' }
  if (year < 100) year += 2000
  if (year > 2100 || year * 12 + month < now.getUTCFullYear() * 12 + now.getUTCMonth() + 1) return { problem: 'expiry' }
  const behaviour = testBehaviourOf(digits)
  if (behaviour === 'declined') return { problem: 'declined' }
  return {
    card: {
      brand: brandOf(digits),
      last4: digits.slice(-4),
      expiry_month: month,
      expiry_year: year,
      test_behaviour: behaviour,
    },
  }
}
