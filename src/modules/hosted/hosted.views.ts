import { tiersText, type Estimate, type InvoiceEstimate } from '../billing/index.ts'
import type { Plan } from '../catalogue/catalogue.schemas.ts'
import type { SubscriptionDetails } from '../subscriptions/index.ts'
import type { CardProblem } from './hosted.card.ts'
import { formatMoney } from './hosted.i18n.ts'
import type { CreditNoteBody, InvoiceBody } from '../invoices/index.ts'
import type { Paged } from '../../core/paging.ts'
import { toMinor } from '../../core/money.ts'
import { dateOf, form, html, invoiceTable, layout, periodOf, type Html, type PageContext } from './hosted.html.ts'

/** `base` is the page's own path. */
export interface ViewContext extends PageContext {
  base: string
  csrf: string
}

type PlanFields = Plan['plan']

// An escape, not the character: one character above U+00FF in the bundle makes V8 keep its whole
// source as a two-byte string, for the server's whole life.
const DASH = '\u2014'

const price = (ctx: ViewContext, plan: PlanFields) => {
  const major = (amount: number) =>
    formatMoney(ctx.locale, toMinor(amount, 'plan/price', plan.currency_code), plan.currency_code)
  const period = ctx.t(plan.period_unit === 'year' ? 'period.year' : 'period.month')
  if (plan.tiers) {
    const tiers = plan.tiers.map((t) => ({ ...t, price: toMinor(t.price, 'plan/tiers', plan.currency_code) }))
    const money = (minor: number) => formatMoney(ctx.locale, minor, plan.currency_code)
    return `${tiersText(tiers, money)} (${ctx.t(`pricing.${plan.pricing_model as 'tiered'}`)}) ${period}`
  }
  const model = plan.pricing_model === 'flat_fee' ? ` (${ctx.t('pricing.flat_fee')})` : ''
  return `${major(plan.price)}${model} ${period}`
}

const leaveForm = (ctx: ViewContext, label: string) =>
  form(`${ctx.base}/leave`, ctx.csrf, html`<button type="submit" class="secondary">${label}</button>`)

export function managerPage(ctx: ViewContext, details: SubscriptionDetails, plans: PlanFields[]): string {
  const { t } = ctx
  const s = details.subscription
  const choices = plans.map(
    (plan, i) => html`<div class="choice">
<input type="radio" name="plan" id="plan-${i}" value="${plan.sku}"\
${s.plan_id === plan.sku ? html` checked` : ''} required>
<label for="plan-${i}">${plan.name} ${DASH} ${price(ctx, plan)}</label>
</div>`,
  )
  return layout(
    ctx,
    t('manager.title'),
    html`
<p>${t('manager.current')}: <strong>${details.plan.name}</strong> ${DASH} ${price(ctx, details.plan)}</p>
${form(
  `${ctx.base}/estimate`,
  ctx.csrf,
  html`
<fieldset>
<legend>${t('manager.plans', { product: details.product.name })}</legend>
${choices}
</fieldset>
<label for="quantity">${t('manager.quantity')}</label>
<input type="number" id="quantity" name="quantity" min="1" max="100000" step="1" \
inputmode="numeric" value="${s.plan_quantity}" required>
<p><button type="submit">${t('manager.estimate')}</button></p>`,
)}
${leaveForm(ctx, t('manager.leave'))}`,
  )
}

export function managerEstimatePage(ctx: ViewContext, plan: PlanFields, quantity: number, estimate: Estimate): string {
  const { t } = ctx
  const next = estimate.subscription_estimate.next_billing_at
  return layout(
    ctx,
    t('manager.estimateTitle'),
    html`
<p>${t('manager.newPlan', { plan: plan.name, quantity })}</p>
${invoiceTable(ctx, estimate.invoice_estimate)}
<p>${next === null ? t('invoice.noNextBilling') : t('invoice.nextBilling', { date: dateOf(ctx, next) })}</p>
${form(
  `${ctx.base}/confirm`,
  ctx.csrf,
  html`
<input type="hidden" name="plan" value="${plan.sku}">
<input type="hidden" name="quantity" value="${quantity}">
<button type="submit">${t('manager.confirm')}</button>`,
)}
<p><a href="${ctx.base}">${t('manager.back')}</a></p>
${leaveForm(ctx, t('manager.leave'))}`,
  )
}

export interface PortalLedger {
  invoices: Paged<InvoiceBody>
  creditNotes: Paged<CreditNoteBody>
}

export function portalPage(
  ctx: ViewContext,
  details: SubscriptionDetails,
  next: { at: number; invoice: InvoiceEstimate } | null,
  notice: string | null,
  ledger: PortalLedger,
): string {
  const { t } = ctx
  const s = details.subscription
  const card = details.customer.payment_method
  const canCancel = (s.status === 'active' || s.status === 'in_trial') && s.scheduled_cancellation_at === null
  const canUndo = s.status !== 'cancelled' && s.scheduled_cancellation_at !== null
  const button = (action: string, label: string, className = '') =>
    form(
      `${ctx.base}/${action}`,
      ctx.csrf,
      html`<button type="submit"${className ? html` class="${className}"` : ''}>${label}</button>`,
      'inline',
    )
  const rows: Html[] = [
    html`<dt>${t('portal.plan')}</dt><dd>${details.plan.name}</dd>`,
    html`<dt>${t('portal.status')}</dt><dd id="status">${t(`status.${s.status}`)}</dd>`,
    html`<dt>${t('portal.quantity')}</dt><dd>${s.plan_quantity}</dd>`,
    html`<dt>${t('portal.nextCharge')}</dt><dd id="next-charge">${
      next
        ? t('portal.chargeOn', {
            amount: formatMoney(ctx.locale, next.invoice.amount_due, next.invoice.currency_code),
            date: dateOf(ctx, next.at),
          })
        : t('portal.noNextCharge')
    }</dd>`,
  ]
  if (s.status === 'in_trial' && s.trial_end !== null)
    rows.push(html`<dt>${t('portal.trialEnds')}</dt><dd>${dateOf(ctx, s.trial_end)}</dd>`)
  if (s.pause_date !== null)
    rows.push(
      html`<dt>${t(s.status === 'paused' ? 'portal.pausedSince' : 'portal.pausesOn')}</dt><dd id="pause-date">${dateOf(
        ctx,
        s.pause_date,
      )}</dd>`,
    )
  if (s.resume_date !== null)
    rows.push(html`<dt>${t('portal.resumesOn')}</dt><dd id="resume-date">${dateOf(ctx, s.resume_date)}</dd>`)
  if (s.scheduled_change !== null && s.scheduled_change.at !== null)
    rows.push(
      html`<dt>${t('portal.changesOn', { date: dateOf(ctx, s.scheduled_change.at) })}</dt><dd id="scheduled-change">${
        s.scheduled_change.subscription_plan
      } × ${s.scheduled_change.plan_quantity}</dd>`,
    )
  if (s.scheduled_cancellation_at !== null)
    rows.push(
      html`<dt>${t('portal.cancelsOn')}</dt><dd id="cancels-on">${dateOf(ctx, s.scheduled_cancellation_at)}</dd>`,
    )
  rows.push(
    html`<dt>${t('portal.card')}</dt><dd id="card">${
      card
        ? t('portal.cardText', {
            brand: card.brand,
            last4: card.last4,
            month: String(card.expiry_month).padStart(2, '0'),
            year: card.expiry_year,
          })
        : t('portal.noCard')
    }</dd>`,
  )
  return layout(
    ctx,
    t('portal.title'),
    html`
${notice ? html`<p role="status" class="notice">${notice}</p>` : null}
<dl>${rows}</dl>
<div>
${canCancel ? button('cancel', t('portal.cancel'), 'danger') : null}
${canUndo ? button('undo', t('portal.undo')) : null}
${button('logout', t('portal.logout'), 'secondary')}
</div>
${invoicesSection(ctx, ledger.invoices)}
${creditsSection(ctx, details.customer, details.plan.currency_code, ledger.creditNotes)}`,
    true,
  )
}

const newestNote = (ctx: ViewContext, list: Paged<unknown>) =>
  list.next ? html`<p class="hint">${ctx.t('billing.newestShown', { count: list.items.length })}</p>` : null

function invoicesSection(ctx: ViewContext, list: Paged<InvoiceBody>): Html {
  const { t } = ctx
  if (list.items.length === 0)
    return html`<h2>${t('billing.invoices')}</h2><p id="no-invoices">${t('billing.noInvoices')}</p>`
  return html`<h2 id="invoices-heading">${t('billing.invoices')}</h2>
${invoicesTable(ctx, list.items)}
${
  list.next
    ? html`<p><a id="all-invoices" href="${ctx.base}/invoices?limit=${list.items.length}">\
${t('billing.allInvoices')}</a></p>`
    : null
}`
}

/** `older` is the next page's URL. */
export function invoicesPage(ctx: ViewContext, items: InvoiceBody[], older: string | undefined): string {
  const { t } = ctx
  return layout(
    ctx,
    t('billing.invoices'),
    html`
${items.length === 0 ? html`<p id="no-invoices">${t('billing.noInvoices')}</p>` : invoicesTable(ctx, items)}
${older ? html`<p><a id="older-invoices" href="${older}">${t('billing.olderInvoices')}</a></p>` : null}
<p><a href="${ctx.base}">${t('document.back')}</a></p>`,
    true,
  )
}

function invoicesTable(ctx: ViewContext, items: InvoiceBody[]): Html {
  const { t } = ctx
  const rows = items.map((i) => {
    const money = (minor: number) => formatMoney(ctx.locale, minor, i.currency_code)
    const date = dateOf(ctx, i.date)
    const href = `${ctx.base}/invoices/${i.id}`
    return html`<tr data-invoice="${i.id}">
<td class="ref">${i.id}</td><td>${date}</td><td>${periodOf(ctx, i.period_start, i.period_end)}</td>
<td class="amount">${money(i.total)}</td><td class="amount">${money(i.amount_due)}</td>
<td><span class="badge ${i.status}">${t(`invoiceStatus.${i.status}`)}</span></td>
<td><a href="${href}" aria-label="${t('billing.viewLabel', { date })}">${t('billing.view')}</a> · \
<a href="${href}/download" aria-label="${t('billing.downloadLabel', { date })}">${t('billing.download')}</a> · \
<a href="${href}/pdf" type="application/pdf" \
aria-label="${t('billing.pdfLabel', { date })}">${t('billing.pdf')}</a></td>
</tr>`
  })
  return html`<div class="scroll"><table id="invoices" aria-label="${t('billing.invoices')}">
<thead><tr><th scope="col">${t('billing.number')}</th><th scope="col">${t('billing.date')}</th>\
<th scope="col">${t('billing.period')}</th><th scope="col" class="amount">${t('billing.total')}</th>\
<th scope="col" class="amount">${t('billing.amountDue')}</th><th scope="col">${t('billing.status')}</th>\
<th scope="col">${t('billing.document')}</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`
}

function creditsSection(
  ctx: ViewContext,
  customer: SubscriptionDetails['customer'],
  currency: string,
  list: Paged<CreditNoteBody>,
): Html {
  const { t } = ctx
  // In the subscription's currency, its plan's.
  const money = (minor: number) => formatMoney(ctx.locale, minor, currency)
  const notes =
    list.items.length === 0
      ? html`<p id="no-credit-notes">${t('billing.noCreditNotes')}</p>`
      : html`<div class="scroll"><table id="credit-notes" aria-labelledby="credit-notes-heading">
<thead><tr><th scope="col">${t('billing.number')}</th><th scope="col">${t('billing.date')}</th>\
<th scope="col">${t('billing.reason')}</th>\
<th scope="col" class="amount">${t('billing.total')}</th>\
<th scope="col" class="amount">${t('billing.available')}</th></tr></thead>
<tbody>${list.items.map(
          (n) => html`<tr data-credit-note="${n.id}">
<td class="ref">${n.id}</td><td>${dateOf(ctx, n.date)}</td>\
<td>${t(n.reason_code === 'subscription_change' ? 'reason.subscription_change' : 'reason.other')}</td>
<td class="amount">${formatMoney(ctx.locale, n.total, n.currency_code)}</td>\
<td class="amount">${formatMoney(ctx.locale, n.amount_available, n.currency_code)}</td>
</tr>`,
        )}</tbody>
</table></div>
${newestNote(ctx, list)}`
  return html`<h2 id="credits-heading">${t('billing.credits')}</h2>
<dl id="credits">
<dt>${t('billing.refundable')}</dt><dd id="refundable-credits">${money(customer.refundable_credits)}</dd>
<dt>${t('billing.promotional')}</dt><dd>${money(customer.promotional_credits)}</dd>
<dt>${t('billing.excess')}</dt><dd>${money(customer.excess_payments)}</dd>
</dl>
<p class="hint">${t('billing.creditsHint')}</p>
<h2 id="credit-notes-heading">${t('billing.creditNotes')}</h2>
${notes}`
}

export function paymentPage(
  ctx: ViewContext,
  problem: CardProblem | null,
  kept: { expiry_month?: string; expiry_year?: string } = {},
): string {
  const { t } = ctx
  const invalid = (which: CardProblem) =>
    problem === which || (which === 'number' && problem === 'declined') ? 'true' : 'false'
  const message =
    problem === 'number'
      ? t('payment.badNumber')
      : problem === 'expiry'
        ? t('payment.badExpiry')
        : problem === 'declined'
          ? t('payment.declined')
          : null
  // The number is never written back into the page.
  return layout(
    ctx,
    t('payment.title'),
    html`
<p>${t('payment.testMode')}</p>
${
  message
    ? html`<div role="alert" class="problem"><p><strong>${t('payment.errors')}</strong></p>\
<p id="card-error">${message}</p></div>`
    : null
}
${form(
  `${ctx.base}/submit`,
  ctx.csrf,
  html`
<label for="number">${t('payment.number')}</label>
<p class="hint" id="number-hint">${t('payment.numberHint')}</p>
<input type="text" id="number" name="number" \
autocomplete="cc-number" inputmode="numeric" maxlength="23" required \
aria-describedby="number-hint${problem === 'number' || problem === 'declined' ? ' card-error' : ''}" \
aria-invalid="${invalid('number')}">
<fieldset>
<legend>${t('payment.expiry')}</legend>
<label for="expiry_month">${t('payment.month')}</label>
<input type="number" id="expiry_month" name="expiry_month" min="1" max="12" autocomplete="cc-exp-month" \
inputmode="numeric" required value="${kept.expiry_month ?? ''}" \
aria-invalid="${invalid('expiry')}"${problem === 'expiry' ? html` aria-describedby="card-error"` : ''}>
<label for="expiry_year">${t('payment.year')}</label>
<input type="number" id="expiry_year" name="expiry_year" min="2000" max="2100" autocomplete="cc-exp-year" \
inputmode="numeric" required value="${kept.expiry_year ?? ''}" aria-invalid="${invalid('expiry')}">
</fieldset>
<button type="submit">${t('payment.save')}</button>`,
)}
${leaveForm(ctx, t('payment.leave'))}`,
  )
}
