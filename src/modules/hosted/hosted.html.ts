import { type InvoiceEstimate, REVERSE_CHARGE } from '../billing/index.ts'
import { formatDate, formatMoney, type Locale, type Translate } from './hosted.i18n.ts'
import { CSRF_FIELD } from './hosted.csrf.ts'

// Plain server-rendered HTML with no script (the CSP forbids them); every value goes through `esc`.
export const esc = (value: string | number) =>
  String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')

export type Html = { readonly html: string }
export const raw = (html: string): Html => ({ html })
export function html(
  strings: TemplateStringsArray,
  ...values: Array<string | number | Html | Html[] | null | undefined | false>
): Html {
  let out = strings[0]!
  values.forEach((value, i) => {
    if (Array.isArray(value)) out += value.map((v) => v.html).join('')
    else if (value && typeof value === 'object') out += value.html
    else if (value !== null && value !== undefined && value !== false) out += esc(value)
    out += strings[i + 1]!
  })
  return raw(out)
}

export interface PageContext {
  locale: Locale
  t: Translate
}

export function htmlDocument(locale: Locale, title: string, style: Html, body: Html): string {
  return html`<!doctype html>
<html lang="${locale}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
${style}
</head>
<body>
${body}
</body>
</html>
`.html
}

export function layout(ctx: PageContext, title: string, body: Html, wide = false): string {
  return htmlDocument(
    ctx.locale,
    title,
    html`<link rel="stylesheet" href="/hosted/assets/hosted.css">`,
    html`<main${wide ? html` class="wide"` : null}>
<h1>${title}</h1>
${body}
</main>
<footer><p>${ctx.t('footer')}</p></footer>`,
  )
}

export function form(action: string, csrf: string, content: Html, className = ''): Html {
  return html`<form method="post" action="${action}"${raw(className ? ` class="${esc(className)}"` : '')}>
<input type="hidden" name="${CSRF_FIELD}" value="${csrf}">
${content}
</form>`
}

export function errorPage(ctx: PageContext, message: string): string {
  return layout(ctx, ctx.t('error.title'), html`<p role="alert" class="problem">${message}</p>`)
}

export function invoiceTable(ctx: PageContext, invoice: InvoiceEstimate): Html {
  const money = (cents: number) => formatMoney(ctx.locale, cents, invoice.currency_code)
  const taxLabel = (x: InvoiceEstimate['taxes'][number]) =>
    x.name === REVERSE_CHARGE ? ctx.t('invoice.reverseCharge') : `${x.name} ${x.rate}%`
  const row = (label: string, cents: number, strong = false) =>
    strong
      ? html`<tr><th scope="row" colspan="2">${label}</th><td class="amount"><strong>${money(cents)}</strong></td></tr>`
      : html`<tr><th scope="row" colspan="2">${label}</th><td class="amount">${money(cents)}</td></tr>`
  return html`<table>
<thead><tr><th scope="col">${ctx.t('invoice.description')}</th>
<th scope="col" class="amount">${ctx.t('invoice.quantity')}</th>
<th scope="col" class="amount">${ctx.t('invoice.amount')}</th></tr></thead>
<tbody>
${invoice.line_items.map(
  (l) => html`<tr><td>${l.description}</td><td class="amount">${l.quantity}</td>
<td class="amount">${money(l.amount)}</td></tr>`,
)}
</tbody>
<tfoot>
${invoice.discounts.map((d) => row(`${ctx.t('invoice.discount')}: ${d.description}`, -d.amount))}
${row(ctx.t('invoice.subtotal'), invoice.sub_total)}
${invoice.taxes.map((x) => row(taxLabel(x), x.amount))}
${invoice.credits_applied ? row(ctx.t('invoice.credits'), -invoice.credits_applied) : null}
${row(ctx.t('invoice.due'), invoice.amount_due, true)}
</tfoot>
</table>`
}

export const dateOf = (ctx: PageContext, unixSeconds: number) => formatDate(ctx.locale, unixSeconds, 'UTC')

/** Its end is the next period's first instant. */
export const periodOf = (ctx: PageContext, start: number, end: number) =>
  ctx.t('billing.range', { from: dateOf(ctx, start), to: dateOf(ctx, Math.max(start, end - 1)) })

/** Readable sizes, contrast above 4.5:1 (WCAG AA), a visible keyboard focus. */
export const STYLESHEET = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; line-height: 1.5;
  color: #1b1b1f; background: #f6f7f9; }
body { margin: 0; }
main { max-width: 40rem; margin: 2rem auto; padding: 1.5rem 2rem; background: #fff; border: 1px solid #c4c7cf;
  border-radius: 8px; }
h1 { font-size: 1.6rem; margin-top: 0; }
h2 { font-size: 1.2rem; }
fieldset { border: 1px solid #c4c7cf; border-radius: 6px; margin: 0 0 1rem; padding: .75rem 1rem; }
legend { font-weight: 600; padding: 0 .25rem; }
label { display: block; font-weight: 600; margin: .5rem 0 .25rem; }
.choice { display: flex; gap: .5rem; align-items: baseline; margin: .25rem 0; }
.choice label { display: inline; font-weight: 400; margin: 0; }
.hint { color: #44474e; font-size: .9rem; margin: 0 0 .25rem; }
input[type=text], input[type=number] { font: inherit; padding: .45rem .6rem; border: 1px solid #74777f;
  border-radius: 4px; min-width: 8rem; }
input[aria-invalid=true] { border: 2px solid #b3261e; }
button { font: inherit; font-weight: 600; padding: .55rem 1.1rem; border-radius: 6px; border: 2px solid #0b57d0;
  background: #0b57d0; color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: #0b57d0; }
button.danger { background: #b3261e; border-color: #b3261e; }
form { margin: 1rem 0; }
form.inline { display: inline-block; margin-right: .5rem; }
:focus-visible { outline: 3px solid #1b1b1f; outline-offset: 2px; }
a { color: #0b57d0; }
table { border-collapse: collapse; width: 100%; margin: 1rem 0; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid #e1e2e8; }
.amount { text-align: right; font-variant-numeric: tabular-nums; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; }
dt { font-weight: 600; }
dd { margin: 0; }
.problem { border-left: 4px solid #b3261e; padding: .5rem 1rem; background: #fcefee; }
.notice { border-left: 4px solid #146c2e; padding: .5rem 1rem; background: #e9f5ec; }
main.wide, main.wide + footer { max-width: 56rem; }
.scroll { overflow-x: auto; }
td.ref { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: .8rem; word-break: break-all;
  min-width: 9rem; }
.badge { display: inline-block; padding: 0 .4rem; border-radius: 4px; font-size: .85rem; font-weight: 600;
  white-space: nowrap; }
.badge.paid { background: #e9f5ec; color: #0d5321; }
.badge.payment_due, .badge.not_paid { background: #fcefee; color: #8c1d18; }
.badge.voided { background: #eceef2; color: #1b1b1f; }
footer { max-width: 40rem; margin: 0 auto 2rem; padding: 0 2rem; color: #44474e; font-size: .85rem; }
`
