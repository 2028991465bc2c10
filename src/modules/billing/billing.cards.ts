import type { CardTestBehaviour } from '../../db/tables.ts'

/**
 * Test mode with Stripe's test numbers; only the behaviour is kept, never the number.
 * 4000 0000 0000 0002 is declined on entry; 4000 0000 0000 0341 is stored but every charge fails
 * (to exercise dunning); any other valid number charges.
 */
export const DECLINED_ON_ENTRY = '4000000000000002'
export const CHARGES_FAIL = '4000000000000341'

/** The behaviour of a card number (digits only), or 'declined' when it is refused on entry. */
export function testBehaviourOf(digits: string): CardTestBehaviour | 'declined' {
  if (digits === DECLINED_ON_ENTRY) return 'declined'
  if (digits === CHARGES_FAIL) return 'charge_fails'
  return 'succeeds'
}

/** Whether a charge on the stored card goes through (a card without a recorded behaviour succeeds). */
export function chargeSucceeds(card: { test_behaviour?: CardTestBehaviour } | null): boolean {
  return card !== null && card.test_behaviour !== 'charge_fails'
}

/** The Luhn checksum of a card number (digits only). */
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
