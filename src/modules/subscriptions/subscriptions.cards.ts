import type { PaymentSource } from '../../db/tables.ts'
import { ValidationError } from '../../core/errors.ts'
import { brandOf, luhnValid, testBehaviourOf } from '../billing/index.ts'
import type { PaymentSourceInput } from './subscriptions.schemas.ts'

/**
 * The payment_source body as the card to keep: brand, last 4 and expiry, or in test mode a number
 * whose brand, last 4 and behaviour are kept while the number itself goes no further.
 */
export function cardFromBody(body: PaymentSourceInput): PaymentSource {
  const expiry = { expiry_month: body.expiry_month, expiry_year: body.expiry_year }
  if (body.number === undefined) {
    if (body.brand === undefined)
      throw new ValidationError('body/brand is required (or body/number, a test card number)')
    if (body.last4 === undefined)
      throw new ValidationError('body/last4 is required (or body/number, a test card number)')
    return { brand: body.brand, last4: body.last4, ...expiry }
  }
  if (body.brand !== undefined || body.last4 !== undefined) {
    throw new ValidationError(
      `body/${body.brand !== undefined ? 'brand' : 'last4'} comes from body/number: send either the number or ` +
        `brand and last4`,
    )
  }
  const digits = body.number.replace(/[\s-]/g, '')
  if (!/^\d{12,19}$/.test(digits) || !luhnValid(digits))
    throw new ValidationError('body/number is not a valid card number (12 to 19 digits passing the Luhn check)')
  const behaviour = testBehaviourOf(digits)
  if (behaviour === 'declined')
    throw new ValidationError('body/number: the card was declined (test card 4000 0000 0000 0002 is refused on entry)')
  return { brand: brandOf(digits), last4: digits.slice(-4), ...expiry, test_behaviour: behaviour }
}
