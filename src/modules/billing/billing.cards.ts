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
