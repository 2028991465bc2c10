import { it, describe } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { itemAmount, tierProblem, type PricedItem, type Tier } from '../src/modules/billing/index.ts'

/**
 * The pricing models' arithmetic (docs/billing.md, "Pricing models") over any tiers whose prices
 * fall from one tier to the next: volume ≤ tiered ≤ q × the first tier's price for every quantity
 * q, and tiered never falls as q grows.
 */

/** 1 to 6 tiers, contiguous from unit 1, the last open, each price at most the one before. */
const fallingTiers: fc.Arbitrary<Tier[]> = fc
  .array(fc.record({ width: fc.integer({ min: 1, max: 60 }), drop: fc.integer({ min: 0, max: 500 }) }), {
    minLength: 0,
    maxLength: 5,
  })
  .chain((bands) =>
    fc.integer({ min: 0, max: 50_000 }).map((firstPrice) => {
      const tiers: Tier[] = []
      let start = 1
      let price = firstPrice
      for (const band of bands) {
        tiers.push({ starting_unit: start, ending_unit: start + band.width - 1, price })
        start += band.width
        price = Math.max(0, price - band.drop)
      }
      tiers.push({ starting_unit: start, ending_unit: null, price })
      return tiers
    }),
  )

const priced = (pricing_model: PricedItem['pricing_model'], tiers: Tier[]): PricedItem => ({
  pricing_model,
  price_cents: tiers[0]!.price,
  tiers,
})

describe('pricing models, by property', () => {
  it('generated tiers are valid for every tiered model', () => {
    fc.assert(
      fc.property(fallingTiers, (tiers) => {
        for (const model of ['tiered', 'volume', 'stairstep'] as const) assert.equal(tierProblem(model, tiers), null)
      }),
    )
  })

  it('where tier prices fall: volume ≤ tiered ≤ q × the first tier’s price', () => {
    fc.assert(
      fc.property(fallingTiers, fc.integer({ min: 1, max: 1_000 }), (tiers, q) => {
        const tiered = itemAmount(priced('tiered', tiers), q)
        const volume = itemAmount(priced('volume', tiers), q)
        assert.ok(volume <= tiered, `volume ${volume} > tiered ${tiered} at ${q}`)
        assert.ok(tiered <= q * tiers[0]!.price, `tiered ${tiered} > ${q} × ${tiers[0]!.price}`)
      }),
    )
  })

  it('tiered never falls as the quantity grows', () => {
    fc.assert(
      fc.property(
        fallingTiers,
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 0, max: 200 }),
        (tiers, q, more) => {
          const item = priced('tiered', tiers)
          assert.ok(itemAmount(item, q + more) >= itemAmount(item, q))
        },
      ),
    )
  })

  it('tiered is the sum of each unit at its tier’s price', () => {
    fc.assert(
      fc.property(fallingTiers, fc.integer({ min: 1, max: 300 }), (tiers, q) => {
        let sum = 0
        for (let unit = 1; unit <= q; unit++)
          sum += tiers.find((t) => t.ending_unit === null || unit <= t.ending_unit)!.price
        assert.equal(itemAmount(priced('tiered', tiers), q), sum)
      }),
    )
  })
})
