import type { Company } from '../companies/companies.schemas.ts'
import type { InvoiceBody } from '../invoices/index.ts'
import { REVERSE_CHARGE } from '../billing/index.ts'
import { dateOf, type PageContext } from './hosted.html.ts'
import { countryName, formatMoney, formatPercent } from './hosted.i18n.ts'

/**
 * What an invoice or a credit note says, apart from how it is drawn: the printable HTML page and
 * the PDF both take their parties, VAT columns and totals from here, in the reader's language.
 */

/** SELLER_ADDRESS separates lines with "|". */
export interface Seller {
  name: string
  address: string
  country: string
  vatNumber: string
}

/** A party: its name, then its address lines, country and identifiers (blank lines dropped). */
export interface Party {
  name: string
  lines: string[]
}

export interface TotalRow {
  label: string
  amount: number
  kind?: 'grand' | 'due'
}

/** The figures of a document's totals and VAT columns: an invoice and a credit note share them. */
export type Figures = Pick<InvoiceBody, 'line_items' | 'discounts' | 'sub_total' | 'taxes' | 'total' | 'currency_code'>

const kept = (values: Array<string | null | undefined>): string[] =>
  values.filter((v): v is string => Boolean(v?.trim())).map((v) => v.trim())

export function sellerParty(ctx: PageContext, s: Seller): Party {
  const vat = s.vatNumber ? ctx.t('document.vatNumber', { value: s.vatNumber }) : null
  return { name: s.name, lines: kept([...s.address.split('|'), countryName(ctx.locale, s.country), vat]) }
}

export function buyerParty(ctx: PageContext, buyer: Company): Party {
  const vat = buyer.vat_number ?? buyer.vat
  const fiscalCode = buyer.tax_code ?? buyer.fiscal_code
  const town = [buyer.zip, buyer.city, buyer.province ? `(${buyer.province})` : null].filter(Boolean).join(' ')
  return {
    name: buyer.name,
    lines: kept([
      buyer.address,
      town,
      countryName(ctx.locale, buyer.country),
      vat ? ctx.t('document.vatNumber', { value: vat }) : null,
      fiscalCode ? ctx.t('document.fiscalCode', { value: fiscalCode }) : null,
      buyer.sdi_code ? ctx.t('document.sdiCode', { value: buyer.sdi_code }) : null,
      buyer.pec && !buyer.sdi_code ? ctx.t('document.pec', { value: buyer.pec }) : null,
    ]),
  }
}

export const moneyOf = (ctx: PageContext, currency: string) => (minor: number) =>
  formatMoney(ctx.locale, minor, currency)

/** "IT VAT" reads "IVA IT" in Italian. */
export function taxName(ctx: PageContext, name: string): string {
  const country = /^([A-Z]{2}) VAT$/.exec(name)?.[1]
  return country ? `${ctx.t('document.vat')} ${country}` : name
}

export function reverseCharged(doc: Figures): boolean {
  return (
    doc.line_items.some((l) => l.tax_exempt_reason === 'reverse_charge') ||
    doc.taxes.some((x) => x.name === REVERSE_CHARGE)
  )
}

export const exported = (doc: Figures) => doc.line_items.some((l) => l.tax_exempt_reason === 'export')

/** The VAT column of a line: its rate, or why it has none. */
export function vatCell(ctx: PageContext, doc: Figures, reason: string | undefined): string {
  const tax = doc.taxes.find((x) => x.name !== REVERSE_CHARGE)
  return reason === 'reverse_charge'
    ? ctx.t('document.vatReverse')
    : reason === 'export'
      ? ctx.t('document.vatExport')
      : reason
        ? ctx.t('document.vatNone')
        : tax
          ? formatPercent(ctx.locale, tax.rate)
          : '—'
}

/** Subtotal, discounts, taxable amount, the tax of each rate and the total. */
export function figureRows(ctx: PageContext, doc: Figures): TotalRow[] {
  const { t } = ctx
  const money = moneyOf(ctx, doc.currency_code)
  const discount = doc.discounts.reduce((sum, d) => sum + d.amount, 0)
  const base = money(doc.sub_total - discount)
  return [
    { label: t('invoice.subtotal'), amount: doc.sub_total },
    ...doc.discounts.map((d) => ({ label: `${t('invoice.discount')}: ${d.description}`, amount: -d.amount })),
    ...(discount > 0 ? [{ label: t('document.taxable'), amount: doc.sub_total - discount }] : []),
    ...doc.taxes.map((x) => ({
      label:
        x.name === REVERSE_CHARGE
          ? `${t('document.vat')}: ${t('document.vatReverse')}`
          : t('document.taxOn', { name: taxName(ctx, x.name), rate: formatPercent(ctx.locale, x.rate), base }),
      amount: x.amount,
    })),
    { label: t('document.total'), amount: doc.total, kind: 'grand' },
  ]
}

/** The figures, then how the invoice was settled and what is still due. */
export function invoiceTotalRows(ctx: PageContext, invoice: InvoiceBody): TotalRow[] {
  const { t } = ctx
  const settled = (label: string, amount: number): TotalRow[] => (amount > 0 ? [{ label, amount: -amount }] : [])
  return [
    ...figureRows(ctx, invoice),
    ...settled(t('document.creditsApplied'), invoice.credits_applied),
    ...settled(t('document.paid'), invoice.amount_paid),
    ...settled(t('document.adjusted'), invoice.amount_adjusted),
    ...settled(t('document.writtenOff'), invoice.write_off_amount),
    { label: t('invoice.due'), amount: invoice.amount_due, kind: 'due' },
  ]
}

/** Paid on a day, due with the next attempt's day, or the bare status. */
export function invoiceStatusText(ctx: PageContext, invoice: InvoiceBody): string {
  if (invoice.status === 'paid' && invoice.paid_at !== null) {
    return ctx.t('document.paidOn', { date: dateOf(ctx, invoice.paid_at) })
  }
  if (invoice.status === 'payment_due' && invoice.next_retry_at !== null) {
    return ctx.t('document.nextAttempt', { date: dateOf(ctx, invoice.next_retry_at) })
  }
  return ctx.t(`invoiceStatus.${invoice.status}`)
}
