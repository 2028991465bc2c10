import { Conflict } from '../../core/errors.ts'
import type { InvoiceBody } from '../invoices/index.ts'

/**
 * A document's lines as FatturaPA has them: each line's discount, taxable amount and VAT rate or
 * nature, and the summary per rate (DatiRiepilogo). Amounts stay in minor units here.
 */

export type Figures = Pick<InvoiceBody, 'line_items' | 'discounts' | 'taxes' | 'total' | 'currency_code'>
type Line = Figures['line_items'][number]
type ExemptReason = NonNullable<Line['tax_exempt_reason']>

/** Nature codes of the format (decisions §9.7) and the law each line cites. */
export const NATURES: Readonly<Record<ExemptReason | 'no_tax', { code: string; law: string }>> = {
  reverse_charge: { code: 'N6.9', law: 'Inversione contabile (reverse charge), art. 7-ter DPR 633/72' },
  export: { code: 'N3.1', law: 'Non imponibile, esportazione (art. 8 DPR 633/72)' },
  tax_not_configured: { code: 'N2.2', law: 'Non soggetta (art. 2 DPR 633/72)' },
  no_tax: { code: 'N2.2', law: 'Non soggetta (art. 2 DPR 633/72)' },
}

export interface DocumentLine {
  line: Line
  discount: number
  /** amount − discount: FatturaPA's PrezzoTotale. */
  taxable: number
  /** Basis points: 2200 for 22 %; 0 with a nature. */
  rate_bp: number
  nature: { code: string; law: string } | null
}

export interface Summary {
  rate_bp: number
  nature: { code: string; law: string } | null
  taxable: number
  tax: number
}

const roundHalfUp = (value: bigint, bp: bigint) => {
  const scaled = value * bp
  const q = scaled / 10_000n
  const r = scaled % 10_000n
  return Number(r * 2n >= 10_000n ? q + 1n : q)
}
const lineTax = (taxable: number, rateBp: number) => roundHalfUp(BigInt(taxable), BigInt(rateBp))

/**
 * Each line's share of the discounts: the engine records it per line (discount_amount); a
 * provider's invoice that does not is split in proportion to the lines' amounts, largest remainder.
 */
export function lineDiscounts(doc: Figures): number[] {
  const lines = doc.line_items
  if (lines.some((l) => l.discount_amount !== undefined)) return lines.map((l) => l.discount_amount ?? 0)
  const total = doc.discounts.reduce((sum, d) => sum + d.amount, 0)
  const base = lines.reduce((sum, l) => sum + Math.max(0, l.amount), 0)
  if (total === 0 || base === 0) return lines.map(() => 0)
  const exact = lines.map((l) => (Math.max(0, l.amount) * total) / base)
  const shares = exact.map(Math.floor)
  let left = total - shares.reduce((a, b) => a + b, 0)
  const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1])
  for (const [, i] of order) {
    if (left <= 0) break
    shares[i]! += 1
    left -= 1
  }
  return shares
}

/**
 * Which taxed rate each line bears. One rate: every taxed line. Several (a provider's invoice):
 * the one assignment whose per-line rounded taxes add up to each tax line, as they were computed.
 */
function assignRates(taxables: number[], taxes: { rate_bp: number; amount: number }[]): number[] {
  if (taxes.length === 1) return taxables.map(() => taxes[0]!.rate_bp)
  const sums = taxes.map(() => 0)
  const chosen: number[] = []
  const search = (i: number): boolean => {
    if (i === taxables.length) return sums.every((s, k) => s === taxes[k]!.amount)
    for (let k = 0; k < taxes.length; k++) {
      const tax = lineTax(taxables[i]!, taxes[k]!.rate_bp)
      if (sums[k]! + tax > taxes[k]!.amount) continue
      sums[k]! += tax
      chosen[i] = taxes[k]!.rate_bp
      if (search(i + 1)) return true
      sums[k]! -= tax
    }
    return false
  }
  if (taxables.length <= 20 && search(0)) return chosen
  throw new Conflict("The invoice's VAT lines cannot be matched to its lines: no FatturaPA document can be made")
}

/** The lines with their discount, rate or nature. */
export function documentLines(doc: Figures): DocumentLine[] {
  const discounts = lineDiscounts(doc)
  const taxed = doc.taxes
    .filter((t) => t.rate > 0)
    .map((t) => ({ rate_bp: Math.round(t.rate * 100), amount: t.amount }))
  const lines = doc.line_items.map((line, i) => {
    const discount = discounts[i] ?? 0
    return { line, discount, taxable: line.amount - discount }
  })
  const isTaxed = (l: Line) => !l.tax_exempt_reason && taxed.length > 0
  const rates = assignRates(
    lines.filter((l) => isTaxed(l.line)).map((l) => l.taxable),
    taxed,
  )
  let next = 0
  return lines.map((l) => {
    if (isTaxed(l.line)) return { ...l, rate_bp: rates[next++]!, nature: null }
    return { ...l, rate_bp: 0, nature: NATURES[l.line.tax_exempt_reason ?? 'no_tax'] }
  })
}

/**
 * One entry per rate or nature, in the order first met: the taxable amount is its lines', the tax
 * the document's own tax line for that rate, so the totals are the invoice's to the cent.
 */
export function summaries(doc: Figures, lines: DocumentLine[]): Summary[] {
  const byKey = new Map<string, Summary>()
  for (const l of lines) {
    const key = l.nature ? l.nature.code : String(l.rate_bp)
    const entry = byKey.get(key) ?? { rate_bp: l.rate_bp, nature: l.nature, taxable: 0, tax: 0 }
    entry.taxable += l.taxable
    byKey.set(key, entry)
  }
  for (const entry of byKey.values()) {
    if (entry.nature) continue
    const tax = doc.taxes.find((t) => Math.round(t.rate * 100) === entry.rate_bp)
    entry.tax = tax ? tax.amount : lineTax(entry.taxable, entry.rate_bp)
  }
  return [...byKey.values()]
}
