import type { PaymentSource } from '../../db/tables.ts'
import { brandOf, luhnValid, testBehaviourOf } from '../billing/index.ts'

// The payment page's test card: checked (digits, length, Luhn); only brand, last four and expiry are kept.
export type CardProblem = 'number' | 'expiry' | 'declined'

/**
 * Reads the form's number ("4242 4242 4242 4242", spaces and dashes allowed) and expiry; answers
 * the card to keep, or which field is wrong. `now` decides whether the card has expired. The
 * number's test behaviour (billing.cards.ts) is kept with the card; the number is not.
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
