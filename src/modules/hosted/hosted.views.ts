import type { Estimate } from '../subscriptions/billing/estimate.ts'
import type { Plan } from '../catalogue/catalogue.schemas.ts'
import type { InvoiceEstimate } from '../subscriptions/billing/estimate.ts'
import type { SubscriptionDetails } from '../subscriptions/subscriptions.schemas.ts'
import type { CardProblem } from './hosted.card.ts'
import { formatMoney } from './hosted.i18n.ts'
import { toMinor } from '../../money.ts'
import { dateOf, form, html, invoiceTable, layout, type Html, type PageContext } from './hosted.html.ts'

/** The four hosted pages, as HTML strings; `base` is the page's own path (/hosted/<kind>/<token>). */
export interface ViewContext extends PageContext { base: string; csrf: string; currency: string }

type PlanFields = Plan['plan']

const price = (ctx: ViewContext, plan: PlanFields) =>
  `${formatMoney(ctx.locale, toMinor(plan.price, 'plan/price', ctx.currency), ctx.currency)} ${ctx.t(plan.period_unit === 'year' ? 'period.year' : 'period.month')}`

const leaveForm = (ctx: ViewContext, label: string) =>
  form(`${ctx.base}/leave`, ctx.csrf, html`<button type="submit" class="secondary">${label}</button>`)

export function managerPage(ctx: ViewContext, details: SubscriptionDetails, plans: PlanFields[]): string {
  const { t } = ctx
  const s = details.subscription
  const choices = plans.map((plan, i) => html`<div class="choice">
<input type="radio" name="plan" id="plan-${i}" value="${plan.sku}"${s.plan_id === plan.sku ? html` checked` : ''} required>
<label for="plan-${i}">${plan.name} — ${price(ctx, plan)}</label>
</div>`)
  return layout(ctx, t('manager.title'), html`
<p>${t('manager.current')}: <strong>${details.plan.name}</strong> — ${price(ctx, details.plan)}</p>
${form(`${ctx.base}/estimate`, ctx.csrf, html`
<fieldset>
<legend>${t('manager.plans', { product: details.product.name })}</legend>
${choices}
</fieldset>
<label for="quantity">${t('manager.quantity')}</label>
<input type="number" id="quantity" name="quantity" min="1" max="100000" step="1" inputmode="numeric" value="${s.plan_quantity}" required>
<p><button type="submit">${t('manager.estimate')}</button></p>`)}
${leaveForm(ctx, t('manager.leave'))}`)
}

export function managerEstimatePage(ctx: ViewContext, plan: PlanFields, quantity: number, estimate: Estimate): string {
  const { t } = ctx
  const next = estimate.subscription_estimate.next_billing_at
  return layout(ctx, t('manager.estimateTitle'), html`
<p>${t('manager.newPlan', { plan: plan.name, quantity })}</p>
${invoiceTable(ctx, estimate.invoice_estimate)}
<p>${next === null ? t('invoice.noNextBilling') : t('invoice.nextBilling', { date: dateOf(ctx, next) })}</p>
${form(`${ctx.base}/confirm`, ctx.csrf, html`
<input type="hidden" name="plan" value="${plan.sku}">
<input type="hidden" name="quantity" value="${quantity}">
<button type="submit">${t('manager.confirm')}</button>`)}
<p><a href="${ctx.base}">${t('manager.back')}</a></p>
${leaveForm(ctx, t('manager.leave'))}`)
}

export function portalPage(ctx: ViewContext, details: SubscriptionDetails, next: { at: number; invoice: InvoiceEstimate } | null, notice: string | null): string {
  const { t } = ctx
  const s = details.subscription
  const card = details.customer.payment_method
  const canCancel = (s.status === 'active' || s.status === 'in_trial') && s.scheduled_cancellation_at === null
  const canUndo = s.status !== 'cancelled' && s.scheduled_cancellation_at !== null
  const button = (action: string, label: string, className = '') =>
    form(`${ctx.base}/${action}`, ctx.csrf, html`<button type="submit"${className ? html` class="${className}"` : ''}>${label}</button>`, 'inline')
  const rows: Html[] = [
    html`<dt>${t('portal.plan')}</dt><dd>${details.plan.name}</dd>`,
    html`<dt>${t('portal.status')}</dt><dd id="status">${t(`status.${s.status}`)}</dd>`,
    html`<dt>${t('portal.quantity')}</dt><dd>${s.plan_quantity}</dd>`,
    html`<dt>${t('portal.nextCharge')}</dt><dd id="next-charge">${next
      ? t('portal.chargeOn', { amount: formatMoney(ctx.locale, next.invoice.amount_due, next.invoice.currency_code), date: dateOf(ctx, next.at) })
      : t('portal.noNextCharge')}</dd>`,
  ]
  if (s.status === 'in_trial' && s.trial_end !== null) rows.push(html`<dt>${t('portal.trialEnds')}</dt><dd>${dateOf(ctx, s.trial_end)}</dd>`)
  if (s.scheduled_cancellation_at !== null) rows.push(html`<dt>${t('portal.cancelsOn')}</dt><dd id="cancels-on">${dateOf(ctx, s.scheduled_cancellation_at)}</dd>`)
  rows.push(html`<dt>${t('portal.card')}</dt><dd id="card">${card
    ? t('portal.cardText', { brand: card.brand, last4: card.last4, month: String(card.expiry_month).padStart(2, '0'), year: card.expiry_year })
    : t('portal.noCard')}</dd>`)
  return layout(ctx, t('portal.title'), html`
${notice ? html`<p role="status" class="notice">${notice}</p>` : null}
<dl>${rows}</dl>
<div>
${canCancel ? button('cancel', t('portal.cancel'), 'danger') : null}
${canUndo ? button('undo', t('portal.undo')) : null}
${button('logout', t('portal.logout'), 'secondary')}
</div>`)
}

export function paymentPage(ctx: ViewContext, problem: CardProblem | null, kept: { expiry_month?: string; expiry_year?: string } = {}): string {
  const { t } = ctx
  // A declined card is a problem of its number.
  const invalid = (which: CardProblem) => problem === which || (which === 'number' && problem === 'declined') ? 'true' : 'false'
  const message = problem === 'number' ? t('payment.badNumber') : problem === 'expiry' ? t('payment.badExpiry') : problem === 'declined' ? t('payment.declined') : null
  // The number is never written back into the page, even when the card is refused.
  return layout(ctx, t('payment.title'), html`
<p>${t('payment.testMode')}</p>
${message ? html`<div role="alert" class="problem"><p><strong>${t('payment.errors')}</strong></p><p id="card-error">${message}</p></div>` : null}
${form(`${ctx.base}/submit`, ctx.csrf, html`
<label for="number">${t('payment.number')}</label>
<p class="hint" id="number-hint">${t('payment.numberHint')}</p>
<input type="text" id="number" name="number" autocomplete="cc-number" inputmode="numeric" maxlength="23" required aria-describedby="number-hint${problem === 'number' || problem === 'declined' ? ' card-error' : ''}" aria-invalid="${invalid('number')}">
<fieldset>
<legend>${t('payment.expiry')}</legend>
<label for="expiry_month">${t('payment.month')}</label>
<input type="number" id="expiry_month" name="expiry_month" min="1" max="12" autocomplete="cc-exp-month" inputmode="numeric" required value="${kept.expiry_month ?? ''}" aria-invalid="${invalid('expiry')}"${problem === 'expiry' ? html` aria-describedby="card-error"` : ''}>
<label for="expiry_year">${t('payment.year')}</label>
<input type="number" id="expiry_year" name="expiry_year" min="2000" max="2100" autocomplete="cc-exp-year" inputmode="numeric" required value="${kept.expiry_year ?? ''}" aria-invalid="${invalid('expiry')}">
</fieldset>
<button type="submit">${t('payment.save')}</button>`)}
${leaveForm(ctx, t('payment.leave'))}`)
}
