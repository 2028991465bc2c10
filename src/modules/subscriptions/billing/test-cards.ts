import type { CardTestBehaviour } from '../../../db/tables.ts'

/**
 * Test mode of the local engine, with Stripe's test card numbers: the number decides how the
 * card behaves, and only that decision (`test_behaviour`) is kept, never the number.
 * - 4000 0000 0000 0002: declined when entered (Stripe's `card_declined`); nothing is stored.
 * - 4000 0000 0000 0341: accepted and stored, but every charge fails (Stripe's
 *   "attaching this card succeeds, charges fail"): the way to exercise dunning.
 * - any other valid number: charges succeed.
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
