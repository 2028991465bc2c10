import type { FakeCoupon, FakeItemPrice } from './fake-chargebee.ts'

type Obj = Record<string, any>

/** Chargebee's error (status, api_error_code, message, type, param), thrown by a route and answered as Chargebee's error JSON. */
export class CbError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly type = 'invalid_request',
    readonly param?: string,
  ) {
    super(message)
  }
}

/** Chargebee's times: Unix seconds. */
export const seconds = (d: Date) => Math.floor(d.getTime() / 1000)

/** `from` (Unix seconds) plus `count` billing periods of `unit`. */
export function addPeriod(from: number, unit: 'month' | 'year', count = 1): number {
  const d = new Date(from * 1000)
  d.setUTCMonth(d.getUTCMonth() + (unit === 'year' ? 12 : 1) * count)
  return seconds(d)
}

/** An item price's amount for a term at `quantity`, by its pricing model (per_unit by default). */
function termAmount(price: FakeItemPrice, quantity: number): number {
  const tiers = price.tiers ?? []
  const holding = tiers.find((t) => t.ending_unit === undefined || quantity <= t.ending_unit) ?? tiers.at(-1)
  switch (price.pricing_model ?? 'per_unit') {
    case 'flat_fee':
      return price.price
    case 'per_unit':
      return price.price * quantity
    case 'tiered':
      return tiers.reduce((sum, t) => {
        const last = Math.min(quantity, t.ending_unit ?? quantity)
        return sum + Math.max(0, last - t.starting_unit + 1) * t.price
      }, 0)
    case 'volume':
      return (holding?.price ?? 0) * quantity
    case 'stairstep':
      return holding?.price ?? 0
  }
}

/**
 * The billing half of the fake Chargebee (fake-chargebee.ts): a subscription's items and coupons
 * as the requests set them, and the invoices and estimates a change makes.
 */
export function fakeChargebeeBilling(deps: {
  itemPrices: Map<string, FakeItemPrice>
  coupons: Map<string, FakeCoupon>
  customers: Map<string, Obj>
  now: () => number
}) {
  const { itemPrices, coupons, customers, now } = deps

  function itemsFrom(params: Obj, field = 'subscription_items'): Obj[] {
    const items = (params[field] ?? []) as Obj[]
    return items.map((item, i) => {
      const price = itemPrices.get(item.item_price_id)
      if (!price)
        throw new CbError(
          404,
          'resource_not_found',
          `${field}[item_price_id][${i}] : The Item Price referenced by this parameter is not present`,
          'invalid_request',
          `${field}[item_price_id][${i}]`,
        )
      const quantity = Number(item.quantity ?? 1)
      const amount = termAmount(price, quantity)
      return {
        item_price_id: price.id,
        item_type: price.item_type,
        quantity,
        unit_price: price.price,
        amount,
        object: 'subscription_item',
      }
    })
  }

  function couponsFrom(params: Obj): Obj[] {
    return ((params.coupon_ids ?? []) as string[]).map((id, i) => {
      if (!coupons.has(id))
        throw new CbError(
          404,
          'resource_not_found',
          `coupon_ids[${i}] : The Coupon referenced by this parameter is not present`,
          'invalid_request',
          `coupon_ids[${i}]`,
        )
      // Subscription object, coupons[] (apidocs.chargebee.com/docs/api/subscriptions#subscription_coupons):
      // applied_count counts the invoices it discounted; apply_till ends a limited_period coupon.
      const coupon = coupons.get(id)!
      const till =
        coupon.duration_type === 'limited_period' ? addPeriod(now(), 'month', coupon.duration_month ?? 1) : undefined
      return { coupon_id: id, applied_count: 0, ...(till ? { apply_till: till } : {}), object: 'coupon' }
    })
  }

  /**
   * Update subscription for items (apidocs.chargebee.com/docs/api/subscriptions#update_subscription_for_items):
   * `replace_items_list` true replaces the items with those sent; false (the default) adds the
   * items sent and updates those already there (a plan item price replaces the plan: one plan
   * per subscription), leaving the others, their quantities included, as they are.
   */
  function mergedItems(s: Obj, p: Obj): Obj[] {
    if (p.subscription_items === undefined) return s.subscription_items
    const sent = itemsFrom(p)
    if (p.replace_items_list === 'true') return sent
    const kept = (s.subscription_items as Obj[]).filter(
      (i) =>
        !sent.some((n) => n.item_price_id === i.item_price_id || (n.item_type === 'plan' && i.item_type === 'plan')),
    )
    const plan = [...sent, ...kept].filter((i) => i.item_type === 'plan')
    return [...plan, ...[...kept, ...sent].filter((i) => i.item_type !== 'plan')]
  }

  /** `coupon_ids` are added to the subscription's coupons; `replace_coupon_list` true replaces them (none sent: none left). Same reference as mergedItems. */
  function mergedCoupons(s: Obj, p: Obj): Obj[] {
    const sent = couponsFrom(p)
    if (p.replace_coupon_list === 'true')
      return sent.map((c) => (s.coupons as Obj[]).find((k) => k.coupon_id === c.coupon_id) ?? c)
    return [...s.coupons, ...sent.filter((c) => !(s.coupons as Obj[]).some((k) => k.coupon_id === c.coupon_id))]
  }

  /**
   * An invoice (estimate) of items and coupons. `promotional`: the customer's promotional credits,
   * given on an invoice as a discount line of entity_type `promotional_credits` (Invoice object,
   * discounts[].entity_type: item_level_coupon | document_level_coupon | promotional_credits |
   * prorated_credits | ..., apidocs.chargebee.com/docs/api/invoices; chargebee/types/resources/InvoiceEstimate.d.ts).
   */
  function invoiceFor(items: Obj[], couponIds: Obj[], promotional = 0): Obj {
    const lines = items.map((i) => ({
      entity_type: i.item_type === 'addon' ? 'addon_item_price' : 'plan_item_price',
      entity_id: i.item_price_id,
      description: i.item_price_id,
      unit_amount: i.unit_price,
      quantity: itemPrices.get(i.item_price_id)?.pricing_model === 'flat_fee' ? 1 : i.quantity,
      amount: i.amount,
      object: 'line_item',
    }))
    const subTotal = lines.reduce((sum, l) => sum + l.amount, 0)
    const discounts = couponIds
      .filter((c) => c.apply_till === undefined || c.apply_till > now())
      .map((c) => {
        const coupon = coupons.get(c.coupon_id)!
        const amount =
          coupon.discount_type === 'percentage'
            ? Math.round((subTotal * (coupon.discount_percentage ?? 0)) / 100)
            : Math.min(subTotal, coupon.discount_amount ?? 0)
        return {
          object: 'discount',
          entity_type: 'document_level_coupon',
          entity_id: c.coupon_id,
          description: c.coupon_id,
          amount,
        }
      })
    const left = subTotal - discounts.reduce((sum, d) => sum + d.amount, 0)
    if (promotional > 0 && left > 0)
      discounts.push({
        object: 'discount',
        entity_type: 'promotional_credits',
        entity_id: undefined as unknown as string,
        description: 'Promotional Credits',
        amount: Math.min(left, promotional),
      })
    const taxable = subTotal - discounts.reduce((sum, d) => sum + d.amount, 0)
    const tax = Math.round(taxable * 0.22)
    return {
      object: 'invoice_estimate',
      recurring: true,
      price_type: 'tax_exclusive',
      currency_code: 'EUR',
      line_items: lines,
      discounts,
      sub_total: subTotal,
      taxes: [{ object: 'tax', name: 'IT VAT', amount: tax, description: 'IT VAT @ 22%' }],
      line_item_taxes: [{ tax_name: 'IT VAT', tax_rate: 22, tax_amount: tax, tax_juris_type: 'country' }],
      total: taxable + tax,
      credits_applied: 0,
      amount_paid: 0,
      amount_due: taxable + tax,
    }
  }

  /**
   * What a change bills, as Chargebee's Update subscription for items and its estimate
   * (apidocs.chargebee.com/docs/api/subscriptions#update_subscription_for_items, parameters
   * `prorate` and `invoice_immediately`; apidocs.chargebee.com/docs/api/estimates#update_subscription_estimate):
   * - in trial nothing is billed now: the first term's invoice is the next one (`next_invoice_estimate`);
   * - `prorate` false: no prorated charge or credit; the change shows in the next invoice;
   * - `prorate` true: the changed items are charged for the rest of the term and the items they
   *   replace credited (a credit note, `credit_note_estimates`, type `adjustment`); with
   *   `invoice_immediately` true the charge is invoiced now (`invoice_estimate`) and the credit
   *   note applied to it (`credits_applied`, the credit note's `amount_allocated`; the rest is
   *   `amount_available`), else the charges wait for the next invoice (`unbilled_charge_estimates`).
   */
  function changeBilling(s: Obj, items: Obj[], couponList: Obj[], p: Obj): Obj {
    if (s.status === 'in_trial' || p.prorate === 'false')
      return { next_invoice_estimate: invoiceFor(items, couponList) }
    const share = Math.max(0, s.current_term_end - now()) / (s.current_term_end - s.current_term_start)
    const same = (a: Obj, b: Obj) => a.item_price_id === b.item_price_id && a.quantity === b.quantity
    const prorated = (list: Obj[]) => list.map((i) => ({ ...i, amount: Math.round(i.amount * share) }))
    const charged = prorated(items.filter((i) => !(s.subscription_items as Obj[]).some((o) => same(o, i))))
    const credited = prorated((s.subscription_items as Obj[]).filter((o) => !items.some((i) => same(o, i))))
    // Nothing charged or credited (a coupon alone): no invoice now; the change shows on the next one.
    if (charged.length === 0 && credited.length === 0) return { next_invoice_estimate: invoiceFor(items, couponList) }
    const invoice = invoiceFor(charged, couponList, customers.get(s.customer_id)?.promotional_credits ?? 0)
    const credit = credited.length > 0 ? invoiceFor(credited, s.coupons) : null
    if (p.invoice_immediately !== 'true') {
      return {
        unbilled_charge_estimates: invoice.line_items,
        ...(credit
          ? {
              credit_note_estimates: [
                {
                  ...credit,
                  object: 'credit_note_estimate',
                  type: 'adjustment',
                  amount_allocated: 0,
                  amount_available: credit.total,
                },
              ],
            }
          : {}),
      }
    }
    const applied = Math.min(credit?.total ?? 0, invoice.total)
    return {
      invoice_estimate: { ...invoice, credits_applied: applied, amount_due: invoice.total - applied },
      ...(credit
        ? {
            credit_note_estimates: [
              {
                ...credit,
                object: 'credit_note_estimate',
                type: 'adjustment',
                amount_allocated: applied,
                amount_available: credit.total - applied,
              },
            ],
          }
        : {}),
    }
  }

  return { itemsFrom, couponsFrom, mergedItems, mergedCoupons, invoiceFor, changeBilling }
}
