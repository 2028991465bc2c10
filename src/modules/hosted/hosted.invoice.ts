import { createHash } from 'node:crypto'
import type { Company } from '../companies/companies.schemas.ts'
import type { InvoiceBody } from '../invoices/invoices.schemas.ts'
import { REVERSE_CHARGE } from '../subscriptions/billing/vat.ts'
import { dateOf, html, htmlDocument, periodOf, raw, type Html, type PageContext } from './hosted.html.ts'
import { countryName, formatMoney, formatPercent } from './hosted.i18n.ts'

/** SELLER_ADDRESS separates lines with "|". */
export interface Seller {
  name: string
  address: string
  country: string
  vatNumber: string
}

/** `portal` null for a downloaded file, which links nowhere: files get forwarded, capabilities must not. */
export interface DocumentContext extends PageContext {
  seller: Seller
  portal: string | null
}

// Inside the document, so a downloaded file prints the same offline; the CSP allows it by hash.
const INVOICE_STYLE = `
@page { size: A4; margin: 16mm 14mm; }
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 10.5pt;
  line-height: 1.45; color: #111; background: #fff; }
body { margin: 0; }
.sheet { max-width: 190mm; margin: 1.5rem auto; padding: 0 1rem; }
.tools { border: 1px solid #c4c7cf; border-radius: 6px; padding: .5rem 1rem; margin-bottom: 1.5rem;
  background: #f6f7f9; }
.tools a { color: #0b57d0; margin-right: 1rem; }
header { display: flex; justify-content: space-between; gap: 2rem; align-items: flex-start;
  border-bottom: 2px solid #111; padding-bottom: .75rem; }
h1 { font-size: 1.8rem; margin: 0; letter-spacing: .02em; }
h2 { font-size: .85rem; text-transform: uppercase; letter-spacing: .06em; color: #44474e; margin: 0 0 .35rem; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: .1rem 1rem; margin: 0; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; }
.ref { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: .9em; word-break: break-all; }
.parties { display: grid; grid-template-columns: 1fr 1fr; gap: 2rem; margin: 1.25rem 0; }
.parties p { margin: 0; }
table { width: 100%; border-collapse: collapse; margin: 1rem 0; }
th, td { text-align: left; padding: .35rem .45rem; border-bottom: 1px solid #d5d7dd; vertical-align: top; }
thead th { border-bottom: 1.5px solid #111; font-size: .9em; }
thead { display: table-header-group; }
tr { break-inside: avoid; }
.amount { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.note { color: #44474e; font-size: .9em; }
table.totals { width: auto; margin-left: auto; min-width: 55%; }
table.totals th { font-weight: 400; }
tr.grand th, tr.grand td { font-weight: 700; border-top: 1.5px solid #111; }
tr.due th, tr.due td { font-weight: 700; font-size: 1.1em; }
.mentions { margin-top: 1.5rem; }
.status-paid { color: #146c2e; font-weight: 600; }
.status-due { color: #b3261e; font-weight: 600; }
:focus-visible { outline: 3px solid #111; outline-offset: 2px; }
@media print {
  .tools { display: none; }
  .sheet { margin: 0; max-width: none; padding: 0; }
  .status-paid, .status-due { color: #111; }
}
`

export const INVOICE_STYLE_HASH = `'sha256-${createHash('sha256').update(INVOICE_STYLE).digest('base64')}'`

function taxName(ctx: PageContext, name: string): string {
  const country = /^([A-Z]{2}) VAT$/.exec(name)?.[1]
  return country ? `${ctx.t('document.vat')} ${country}` : name
}

const lines = (values: Array<string | null | undefined>): Html =>
  raw(
    values
      .filter((v): v is string => Boolean(v?.trim()))
      .map((v) => html`${v.trim()}`.html)
      .join('<br>'),
  )

function sellerBlock(ctx: DocumentContext): Html {
  const s = ctx.seller
  const name = s.name ? html`<strong>${s.name}</strong><br>` : null
  return html`<div id="seller"><h2>${ctx.t('document.seller')}</h2><p>${name}${lines([
    ...s.address.split('|'),
    countryName(ctx.locale, s.country),
    s.vatNumber ? ctx.t('document.vatNumber', { value: s.vatNumber }) : null,
  ])}</p></div>`
}

export function invoiceDocument(ctx: DocumentContext, invoice: InvoiceBody, buyer: Company): string {
  const { t } = ctx
  const money = (minor: number) => formatMoney(ctx.locale, minor, invoice.currency_code)
  const tax = invoice.taxes.find((x) => x.name !== REVERSE_CHARGE)
  const exemptions = new Set(invoice.line_items.map((l) => l.tax_exempt_reason).filter(Boolean))
  const reverseCharge = exemptions.has('reverse_charge') || invoice.taxes.some((x) => x.name === REVERSE_CHARGE)
  const discount = invoice.discounts.reduce((sum, d) => sum + d.amount, 0)
  const vatCell = (reason: string | undefined) =>
    reason === 'reverse_charge'
      ? t('document.vatReverse')
      : reason === 'export'
        ? t('document.vatExport')
        : reason
          ? t('document.vatNone')
          : tax
            ? formatPercent(ctx.locale, tax.rate)
            : '—'
  const row = (label: string, minor: number, className = '') => {
    const amount = html`<td class="amount">${money(minor)}</td>`
    return html`<tr${className ? html` class="${className}"` : ''}><th scope="row">${label}</th>${amount}</tr>`
  }
  const span = (className: string, text: string) => html`<span class="${className}">${text}</span>`
  const status =
    invoice.status === 'paid' && invoice.paid_at !== null
      ? span('status-paid', t('document.paidOn', { date: dateOf(ctx, invoice.paid_at) }))
      : invoice.status === 'payment_due' && invoice.next_retry_at !== null
        ? span('status-due', t('document.nextAttempt', { date: dateOf(ctx, invoice.next_retry_at) }))
        : span(invoice.status === 'paid' ? 'status-paid' : 'status-due', t(`invoiceStatus.${invoice.status}`))
  const buyerVat = buyer.vat_number ?? buyer.vat

  const title = `${t('document.title')} ${invoice.id}`
  const download = html`<a href="${ctx.portal}/invoices/${invoice.id}/download">${t('billing.download')}</a>`
  const back = html`<a href="${ctx.portal}">${t('document.back')}</a>`
  const navLabel = t('document.title')
  const hint = html`<p>${t('document.printHint')}</p>`
  const prorated = html`<br><span class="note">${t('document.prorated')}</span>`
  const body = html`<div class="sheet">
${ctx.portal ? html`<nav class="tools" aria-label="${navLabel}"><p>${back}${download}</p>${hint}</nav>` : null}
<article>
<header>
<h1>${t('document.title')}</h1>
<dl class="meta">
<dt>${t('document.number')}</dt><dd class="ref" id="invoice-number">${invoice.id}</dd>
<dt>${t('document.date')}</dt><dd>${dateOf(ctx, invoice.date)}</dd>
<dt>${t('document.dueDate')}</dt><dd>${dateOf(ctx, invoice.due_date)}</dd>
<dt>${t('document.period')}</dt><dd>${periodOf(ctx, invoice.period_start, invoice.period_end)}</dd>
<dt>${t('document.status')}</dt><dd id="invoice-status">${status}</dd>
</dl>
</header>
<section class="parties">
${sellerBlock(ctx)}
<div id="buyer"><h2>${t('document.buyer')}</h2><p><strong>${buyer.name}</strong><br>${lines([
    buyer.address,
    [buyer.zip, buyer.city, buyer.province ? `(${buyer.province})` : null].filter(Boolean).join(' '),
    countryName(ctx.locale, buyer.country),
    buyerVat ? t('document.vatNumber', { value: buyerVat }) : null,
    buyer.fiscal_code ? t('document.fiscalCode', { value: buyer.fiscal_code }) : null,
  ])}</p></div>
</section>
<table id="lines">
<thead><tr><th scope="col">${t('invoice.description')}</th><th scope="col" class="amount">${t('invoice.quantity')}</th>
<th scope="col" class="amount">${t('document.unitPrice')}</th><th scope="col" class="amount">${t('document.vat')}</th>
<th scope="col" class="amount">${t('invoice.amount')}</th></tr></thead>
<tbody>
${invoice.line_items.map(
  (l) => html`<tr><td>${l.description}${l.amount !== l.unit_amount * l.quantity ? prorated : null}</td>
<td class="amount">${l.quantity}</td><td class="amount">${money(l.unit_amount)}</td>
<td class="amount">${vatCell(l.tax_exempt_reason)}</td><td class="amount">${money(l.amount)}</td></tr>`,
)}
</tbody>
</table>
<table class="totals" id="totals">
<tbody>
${row(t('invoice.subtotal'), invoice.sub_total)}
${invoice.discounts.map((d) => row(`${t('invoice.discount')}: ${d.description}`, -d.amount))}
${discount > 0 ? row(t('document.taxable'), invoice.sub_total - discount) : null}
${invoice.taxes.map((x) =>
  x.name === REVERSE_CHARGE
    ? row(`${t('document.vat')}: ${t('document.vatReverse')}`, x.amount)
    : row(
        t('document.taxOn', {
          name: taxName(ctx, x.name),
          rate: formatPercent(ctx.locale, x.rate),
          base: money(invoice.sub_total - discount),
        }),
        x.amount,
      ),
)}
${row(t('document.total'), invoice.total, 'grand')}
${invoice.credits_applied > 0 ? row(t('document.creditsApplied'), -invoice.credits_applied) : null}
${invoice.amount_paid > 0 ? row(t('document.paid'), -invoice.amount_paid) : null}
${invoice.amount_adjusted > 0 ? row(t('document.adjusted'), -invoice.amount_adjusted) : null}
${invoice.write_off_amount > 0 ? row(t('document.writtenOff'), -invoice.write_off_amount) : null}
${row(t('invoice.due'), invoice.amount_due, 'due')}
</tbody>
</table>
<section class="mentions">
${reverseCharge ? html`<p id="reverse-charge"><strong>${t('invoice.reverseCharge')}</strong></p>` : null}
${exemptions.has('export') ? html`<p id="export">${t('document.export')}</p>` : null}
<p class="note">${t('document.currency', { currency: invoice.currency_code })}</p>
</section>
</article>
</div>`
  return htmlDocument(ctx.locale, title, html`<style>${raw(INVOICE_STYLE)}</style>`, body)
}
