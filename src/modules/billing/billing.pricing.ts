/**
 * Chargebee's pricing models: what a plan or addon costs for a whole term at a quantity, in minor
 * units. Tiers are contiguous from unit 1 and the last one is open (`ending_unit` null).
 */

export const PRICING_MODELS = ['flat_fee', 'per_unit', 'tiered', 'volume', 'stairstep'] as const
export type PricingModel = (typeof PRICING_MODELS)[number]

/** `price` in minor units: per unit (tiered, volume) or for the whole quantity (stairstep). */
export interface Tier {
  starting_unit: number
  ending_unit: number | null
  price: number
}

export interface PricedItem {
  pricing_model: PricingModel
  price_cents: number
  tiers: Tier[] | null
}

export function usesTiers(model: PricingModel): boolean {
  return model === 'tiered' || model === 'volume' || model === 'stairstep'
}

/** The tier holding unit `quantity` (the last one beyond every bound). */
export function tierOf(tiers: Tier[], quantity: number): Tier {
  return tiers.find((t) => t.ending_unit === null || quantity <= t.ending_unit) ?? tiers[tiers.length - 1]!
}

/** `price` whatever the quantity. */
export function flatFeeAmount(price: number): number {
  return price
}

/** `price` for each unit. */
export function perUnitAmount(price: number, quantity: number): number {
  return price * quantity
}

/** Each unit at the price of the tier it falls in. */
export function tieredAmount(tiers: Tier[], quantity: number): number {
  let sum = 0
  for (const t of tiers) {
    if (quantity < t.starting_unit) break
    const last = t.ending_unit === null ? quantity : Math.min(quantity, t.ending_unit)
    sum += (last - t.starting_unit + 1) * t.price
  }
  return sum
}

/** Every unit at the price of the tier holding the quantity. */
export function volumeAmount(tiers: Tier[], quantity: number): number {
  return quantity < 1 ? 0 : tierOf(tiers, quantity).price * quantity
}

/** The price of the tier holding the quantity, once. */
export function stairstepAmount(tiers: Tier[], quantity: number): number {
  return quantity < 1 ? 0 : tierOf(tiers, quantity).price
}

/** A whole term of `item` at `quantity`, by its pricing model. */
export function itemAmount(item: PricedItem, quantity: number): number {
  const tiers = item.tiers ?? []
  switch (item.pricing_model) {
    case 'flat_fee':
      return flatFeeAmount(item.price_cents)
    case 'per_unit':
      return perUnitAmount(item.price_cents, quantity)
    case 'tiered':
      return tieredAmount(tiers, quantity)
    case 'volume':
      return volumeAmount(tiers, quantity)
    case 'stairstep':
      return stairstepAmount(tiers, quantity)
  }
}

/**
 * A line's `unit_amount`: the price of one unit where the amount is a multiple of it (per_unit,
 * volume); else the whole term's amount of the line.
 */
export function unitAmount(item: PricedItem, quantity: number): number {
  if (item.pricing_model === 'per_unit') return item.price_cents
  if (item.pricing_model === 'volume') return quantity < 1 ? 0 : tierOf(item.tiers ?? [], quantity).price
  return itemAmount(item, quantity)
}

/** What a line costs for a whole term, from its unit_amount (see `unitAmount`). */
export function termAmount(line: { pricing_model?: PricingModel; unit_amount: number; quantity: number }): number {
  const model = line.pricing_model ?? 'per_unit'
  return model === 'per_unit' || model === 'volume' ? line.unit_amount * line.quantity : line.unit_amount
}

/**
 * The first thing wrong with `tiers` for `model`, as [index or null, field, sentence], or null.
 * Tiers: only for tiered, volume and stairstep, at least one, contiguous from 1, the last open,
 * every other one ending at or after its start.
 */
export function tierProblem(
  model: PricingModel,
  tiers: Tier[] | undefined | null,
): { index: number | null; field: string; message: string } | null {
  if (!usesTiers(model)) {
    return tiers && tiers.length > 0
      ? {
          index: null,
          field: 'tiers',
          message: `apply only to pricing_model tiered, volume or stairstep, not ${model}`,
        }
      : null
  }
  if (!tiers || tiers.length === 0)
    return { index: null, field: 'tiers', message: `are required for pricing_model ${model}` }
  for (let i = 0; i < tiers.length; i++) {
    const t = tiers[i]!
    const expected = i === 0 ? 1 : (tiers[i - 1]!.ending_unit ?? 0) + 1
    if (t.starting_unit !== expected)
      return {
        index: i,
        field: 'starting_unit',
        message:
          i === 0
            ? 'must be 1: the first tier starts at unit 1'
            : `must be ${expected}, the unit after the previous tier's ending_unit`,
      }
    const last = i === tiers.length - 1
    if (last && t.ending_unit !== null)
      return { index: i, field: 'ending_unit', message: 'must be null: the last tier is open-ended' }
    if (!last && t.ending_unit === null)
      return { index: i, field: 'ending_unit', message: 'must be set: only the last tier is open-ended' }
    if (t.ending_unit !== null && t.ending_unit < t.starting_unit)
      return { index: i, field: 'ending_unit', message: `must be at least its starting_unit ${t.starting_unit}` }
    if (t.price < 0) return { index: i, field: 'price', message: 'must be at least 0' }
  }
  return null
}

// Escapes, not the characters: one character above U+00FF makes V8 keep the bundle as a two-byte string.
const EN_DASH = '\u2013'
const MIDDLE_DOT = '\u00b7'

/** "1–10: €10.00 · 11–50: €8.00 · 51+: €6.00", with `money` formatting a minor-unit price. */
export function tiersText(tiers: Tier[], money: (minor: number) => string): string {
  return tiers
    .map((t) => {
      const range =
        t.ending_unit === null
          ? `${t.starting_unit}+`
          : t.ending_unit === t.starting_unit
            ? `${t.starting_unit}`
            : `${t.starting_unit}${EN_DASH}${t.ending_unit}`
      return `${range}: ${money(t.price)}`
    })
    .join(` ${MIDDLE_DOT} `)
}
