import { termAmount } from '../billing/index.ts'
import { createHash } from 'node:crypto'
import type { Company } from '../companies/companies.schemas.ts'
import type { InvoiceBody } from '../invoices/index.ts'
import { dateOf, html, htmlDocument, periodOf, raw, type Html, type PageContext } from './hosted.html.ts'
import {
  buyerParty,
  exported,
  invoiceStatusText,
  invoiceTotalRows,
  moneyOf,
  reverseCharged,
  sellerParty,
  vatCell,
  type Party,
  type Seller,
} from './hosted.invoice-content.ts'

export type { Seller } from './hosted.invoice-content.ts'

/** `portal` null for a downloaded file, which links nowhere: files get forwarded, capabilities must not. */
export interface DocumentContext extends PageContext {
  seller: Seller
  portal: string | null
}

// Inside the document, so a downloaded file prints the same offline; the CSP allows it by hash.
const INVOICE_STYLE = `
@page { size: A4; margin: 16mm 14mm; }
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; \
font-size: 10.5pt; line-height: 1.45; color: #111; background: #fff; }
body { margin: 0; }
.sheet { max-width: 190mm; margin: 1.5rem auto; padding: 0 1rem; }
.tools { border: 1px solid #c4c7cf; border-radius: 6px; padding: .5rem 1rem; \
margin-bottom: 1.5rem; background: #f6f7f9; }
.tools a { color: #0b57d0; margin-right: 1rem; }
header { display: flex; justify-content: space-between; gap: 2rem; align-items: flex-start; \
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

const lines = (values: string[]): Html => raw(values.map((v) => html`${v}`.html).join('<br>'))

function partyBlock(id: string, heading: string, party: Party): Html {
  const name = party.name ? html`<strong>${party.name}</strong><br>` : null
  return html`<div id="${id}"><h2>${heading}</h2><p>${name}${lines(party.lines)}</p></div>`
}

export function invoiceDocument(ctx: DocumentContext, invoice: InvoiceBody, buyer: Company): string {
  const { t } = ctx
  const money = moneyOf(ctx, invoice.currency_code)
  const row = (label: string, minor: number, className = '') =>
    html`<tr${className ? html` class="${className}"` : ''}><th scope="row">${label}</th>\
<td class="amount">${money(minor)}</td></tr>`
  const statusClass = invoice.status === 'paid' ? 'status-paid' : 'status-due'
  const status = html`<span class="${statusClass}">${invoiceStatusText(ctx, invoice)}</span>`

  const title = `${t('document.title')} ${invoice.id}`
  const body = html`<div class="sheet">
${
  ctx.portal
    ? html`<nav class="tools" aria-label="${t('document.title')}">\
<p><a href="${ctx.portal}">${t('document.back')}</a>\
<a href="${ctx.portal}/invoices/${invoice.id}/download">${t('billing.download')}</a></p>\
<p>${t('document.printHint')}</p></nav>`
    : null
}
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
${partyBlock('seller', t('document.seller'), sellerParty(ctx, ctx.seller))}
${partyBlock('buyer', t('document.buyer'), buyerParty(ctx, buyer))}
</section>
<table id="lines">
<thead><tr><th scope="col">${t('invoice.description')}</th>\
<th scope="col" class="amount">${t('invoice.quantity')}</th>\
<th scope="col" class="amount">${t('document.unitPrice')}</th>\
<th scope="col" class="amount">${t('document.vat')}</th>\
<th scope="col" class="amount">${t('invoice.amount')}</th></tr></thead>
<tbody>
${invoice.line_items.map(
  (l) => html`<tr><td>${l.description}\
${l.amount !== termAmount(l) ? html`<br><span class="note">${t('document.prorated')}</span>` : null}</td>
<td class="amount">${l.quantity}</td><td class="amount">${money(l.unit_amount)}</td>\
<td class="amount">${vatCell(ctx, invoice, l.tax_exempt_reason)}</td>\
<td class="amount">${money(l.amount)}</td></tr>`,
)}
</tbody>
</table>
<table class="totals" id="totals">
<tbody>
${invoiceTotalRows(ctx, invoice).map((r) => row(r.label, r.amount, r.kind ?? ''))}
</tbody>
</table>
<section class="mentions">
${reverseCharged(invoice) ? html`<p id="reverse-charge"><strong>${t('invoice.reverseCharge')}</strong></p>` : null}
${exported(invoice) ? html`<p id="export">${t('document.export')}</p>` : null}
<p class="note">${t('document.currency', { currency: invoice.currency_code })}</p>
</section>
</article>
</div>`
  return htmlDocument(ctx.locale, title, html`<style>${raw(INVOICE_STYLE)}</style>`, body)
}
