import type { Schemas } from '../api.ts'
import { decimals } from '../i18n.ts'

export const SUB = '/api/v1/subscription/{company_id}'

export const REASONS = [
  'order_change',
  'order_cancellation',
  'product_unsatisfactory',
  'service_unsatisfactory',
  'waiver',
  'other',
] as const satisfies readonly Schemas['RefundInvoice']['reason_code'][]

/** A typed amount in major units as minor units of the currency (null when not a positive amount). */
export function toMinor(text: string, currency: string): number | null {
  const digits = decimals(currency)
  const n = Number(text.replace(',', '.'))
  return Number.isFinite(n) && n > 0 ? Math.round(n * 10 ** digits) : null
}
