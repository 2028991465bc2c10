import { allocate, roundHalfUp, type ChargedInvoice, type CreditFigures } from './billing.estimate.ts'

/**
 * A credit of `total` (tax included) on a charged invoice, as Chargebee makes a credit note of an
 * amount: its tax is the invoice's tax prorated by total / invoice total (half-up), the rest is
 * shared over the invoice's lines in proportion to what each charged. The parts add up to `total`.
 */
export function creditShare(
  invoice: Pick<ChargedInvoice, 'line_items' | 'taxes' | 'currency_code'> & { total: number },
  total: number,
): CreditFigures {
  const share = (amount: number) => roundHalfUp(BigInt(amount), BigInt(total), BigInt(invoice.total))
  const taxes = invoice.taxes.map((t) => ({ ...t, amount: share(t.amount) }))
  const net = total - taxes.reduce((sum, t) => sum + t.amount, 0)
  const charged = invoice.line_items.map((l) => l.amount - (l.discount_amount ?? 0))
  const amounts = allocate(net, charged)
  const line_items = invoice.line_items.map((l, i) => {
    const { discount_amount: _, ...line } = l
    return { ...line, amount: amounts[i]! }
  })
  return { line_items, discounts: [], sub_total: net, taxes, total, currency_code: invoice.currency_code }
}
