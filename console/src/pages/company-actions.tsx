import { useState } from 'preact/hooks'
import { api, call, type Company, idempotencyKey, type Result, type Schemas } from '../api.ts'
import { money, useT } from '../i18n.ts'
import { ConfirmDialog, ErrorNote, Field, Loading } from '../ui.tsx'
import { SUB, toMinor } from './actions.ts'

type CompanyAction = 'plan' | 'cancel' | 'pause' | 'resume' | 'credits' | 'charge' | 'disable' | 'enable'
type Details = Schemas['SubscriptionDetails']

export function CompanyActions(props: { company: Company; details: Details | undefined; onChanged: () => void }) {
  const { t, lang } = useT()
  const [open, setOpen] = useState<CompanyAction | null>(null)
  const [choice, setChoice] = useState('')
  const [quantity, setQuantity] = useState(1)
  const [flag, setFlag] = useState(true)
  const [amount, setAmount] = useState('')
  const [text, setText] = useState('')
  const [estimate, setEstimate] = useState<Result<Schemas['Estimate']> | 'loading' | null>(null)
  const c = props.company
  const d = props.details
  const currency = d?.plan.currency_code ?? 'EUR'
  const minor = toMinor(amount, currency)
  const shown = minor === null ? '' : money(minor, currency, lang)
  const status = d?.subscription.status
  const live = status && status !== 'cancelled'
  const key = { header: idempotencyKey() }
  const path = { company_id: c.id }
  const close = (done: boolean) => {
    setOpen(null)
    if (done) props.onChanged()
  }
  const start = (kind: CompanyAction) => {
    setChoice(d?.plan.sku ?? '')
    setQuantity(d?.subscription.plan_quantity ?? 1)
    setFlag(true)
    setAmount('')
    setText('')
    setEstimate(null)
    setOpen(kind)
  }
  const button = (kind: CompanyAction, label: string) => (
    <button type="button" onClick={() => start(kind)}>
      {label}
    </button>
  )
  const showEstimate = async () => {
    if (!d) return
    setEstimate('loading')
    setEstimate(
      await call(
        api.GET('/api/v1/subscription/{subscription_id}/estimate', {
          params: {
            path: { subscription_id: d.subscription.id },
            query: { company_id: c.id, product_sku: d.product.sku, subscription_plan: choice, plan_quantity: quantity },
          },
        }),
        t.networkError,
      ),
    )
  }
  const estimated = estimate && estimate !== 'loading' && estimate.ok ? estimate.data.estimate.invoice_estimate : null
  const flagField = (label: string, other: string) => (
    <fieldset>
      <legend>{t.timing}</legend>
      <label>
        <input type="radio" name="flag" checked={flag} onChange={() => setFlag(true)} /> {label}
      </label>
      <label>
        <input type="radio" name="flag" checked={!flag} onChange={() => setFlag(false)} /> {other}
      </label>
    </fieldset>
  )
  const amountAndText = (
    <>
      <Field label={t.amount}>
        <input inputMode="decimal" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
      </Field>
      <Field label={t.description}>
        <input value={text} required onInput={(e) => setText(e.currentTarget.value)} />
      </Field>
    </>
  )
  return (
    <div class="actions">
      {d && live && button('plan', t.changePlan)}
      {d && live && button('cancel', t.cancelSubscription)}
      {d && live && status !== 'paused' && button('pause', t.pause)}
      {d && status === 'paused' && button('resume', t.resume)}
      {d && button('credits', t.promotionalCredits)}
      {d && button('charge', t.oneOffCharge)}
      {c.disabled ? button('enable', t.enableCompany) : button('disable', t.disableCompany)}
      {open === 'plan' && d && (
        <ConfirmDialog
          title={t.changePlan}
          consequence={estimated ? t.confirmChangePlan(choice, quantity, !flag) : null}
          onClose={close}
          run={() =>
            call(
              api.PUT('/api/v1/subscription/companies/{company_id}/update/{subscription_id}', {
                params: { path: { company_id: c.id, subscription_id: d.subscription.id }, ...key },
                body: { subscription_plan: choice, plan_quantity: quantity, end_of_term: !flag },
              }),
              t.networkError,
            )
          }
        >
          {flagField(t.immediately, t.endOfTerm)}
          <Field label={t.plan}>
            <select
              value={choice}
              onChange={(e) => {
                setChoice(e.currentTarget.value)
                setEstimate(null)
              }}
            >
              {d.product.allowed_plans.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
          </Field>
          <Field label={t.quantity}>
            <input
              type="number"
              min={1}
              value={quantity}
              onInput={(e) => {
                setQuantity(Number(e.currentTarget.value))
                setEstimate(null)
              }}
            />
          </Field>
          <button type="button" onClick={showEstimate}>
            {t.showEstimate}
          </button>
          {estimate === 'loading' && <Loading />}
          {estimate && estimate !== 'loading' && !estimate.ok && <ErrorNote message={estimate.message} />}
          {estimated && (
            <table class="estimate">
              <caption>{t.estimate}</caption>
              <tbody>
                {estimated.line_items.map((l) => (
                  <tr key={l.entity_id}>
                    <th scope="row">{l.description}</th>
                    <td>{money(l.amount, estimated.currency_code, lang)}</td>
                  </tr>
                ))}
                <tr>
                  <th scope="row">{t.total}</th>
                  <td>{money(estimated.total, estimated.currency_code, lang)}</td>
                </tr>
                <tr>
                  <th scope="row">{t.due}</th>
                  <td>{money(estimated.amount_due, estimated.currency_code, lang)}</td>
                </tr>
              </tbody>
            </table>
          )}
        </ConfirmDialog>
      )}
      {open === 'cancel' && (
        <ConfirmDialog
          title={t.cancelSubscription}
          consequence={t.confirmCancel(flag)}
          onClose={close}
          run={() =>
            call(
              api.PUT('/api/v1/subscription/{company_id_or_subscription_id}/cancel', {
                params: { path: { company_id_or_subscription_id: c.id }, query: { end_of_term: flag }, ...key },
                body: {},
              }),
              t.networkError,
            )
          }
        >
          {flagField(t.endOfTerm, t.immediately)}
        </ConfirmDialog>
      )}
      {open === 'pause' && (
        <ConfirmDialog
          title={t.pause}
          consequence={t.confirmPause}
          onClose={close}
          run={() =>
            call(
              api.PUT(`${SUB}/pause`, {
                params: { path, ...key },
                body: { pause_option: flag ? 'immediately' : 'end_of_term' },
              }),
              t.networkError,
            )
          }
        >
          {flagField(t.immediately, t.endOfTerm)}
        </ConfirmDialog>
      )}
      {open === 'resume' && (
        <ConfirmDialog
          title={t.resume}
          consequence={t.confirmResume}
          onClose={close}
          run={() =>
            call(
              api.PUT(`${SUB}/resume`, { params: { path, ...key }, body: { resume_option: 'immediately' } }),
              t.networkError,
            )
          }
        />
      )}
      {open === 'credits' && (
        <ConfirmDialog
          title={t.promotionalCredits}
          consequence={minor === null || !text ? null : t.confirmCredits(shown, flag)}
          onClose={close}
          run={() =>
            call(
              api.POST(`${SUB}/promotional_credits`, {
                params: { path, ...key },
                body: { amount: minor!, description: text, type: flag ? 'add' : 'deduct' },
              }),
              t.networkError,
            )
          }
        >
          {flagField(t.add, t.deduct)}
          {amountAndText}
        </ConfirmDialog>
      )}
      {open === 'charge' && (
        <ConfirmDialog
          title={t.oneOffCharge}
          consequence={minor === null || !text ? null : t.confirmCharge(shown, flag)}
          onClose={close}
          run={() =>
            call(
              api.POST(`${SUB}/charges`, {
                params: { path, ...key },
                body: { amount: minor!, description: text, invoice_immediately: flag },
              }),
              t.networkError,
            )
          }
        >
          {flagField(t.invoiceNow, t.endOfTerm)}
          {amountAndText}
        </ConfirmDialog>
      )}
      {open === 'disable' && (
        <ConfirmDialog
          title={t.disableCompany}
          consequence={t.confirmDisable(c.name)}
          onClose={close}
          run={() => call(api.PUT('/api/v1/companies/{company_id}', { params: { path, ...key } }), t.networkError)}
        />
      )}
      {open === 'enable' && (
        <ConfirmDialog
          title={t.enableCompany}
          consequence={t.confirmEnable(c.name)}
          onClose={close}
          run={() =>
            call(api.PUT('/api/v1/companies/{company_id}/enable', { params: { path, ...key } }), t.networkError)
          }
        />
      )}
    </div>
  )
}
