import { useEffect, useState } from 'preact/hooks'
import {
  api,
  call,
  type Company,
  idempotencyKey,
  type Invoice,
  offers,
  type Result,
  type Schemas,
  untyped,
} from '../api.ts'
import { decimals, money, useT } from '../i18n.ts'
import { ConfirmDialog, ErrorNote, Field, Loading } from '../ui.tsx'

const SUB = '/api/v1/subscription/{company_id}'
/** Routes other work adds: offered when the running service's /openapi.json lists them. */
const PENDING = {
  refund: ['post', `${SUB}/invoices/{invoice_id}/refund`],
  creditNote: ['post', `${SUB}/credit_notes`],
  credits: ['post', `${SUB}/promotional_credits`],
  charge: ['post', `${SUB}/charges`],
  pause: ['put', `${SUB}/pause`],
  resume: ['put', `${SUB}/resume`],
  /** Changes at the term's end (`end_of_term` on the update) come with this route. */
  scheduled: ['put', `${SUB}/remove_scheduled_changes`],
} as const
type Pending = keyof typeof PENDING

function useOffered(): Set<Pending> {
  const [set, setSet] = useState(new Set<Pending>())
  useEffect(() => {
    Promise.all(
      (Object.keys(PENDING) as Pending[]).map(async (k) => ((await offers(PENDING[k][0], PENDING[k][1])) ? k : null)),
    ).then((ks) => setSet(new Set(ks.filter((k): k is Pending => k !== null))))
  }, [])
  return set
}

const REASONS = [
  'order_change',
  'order_cancellation',
  'product_unsatisfactory',
  'service_unsatisfactory',
  'waiver',
  'other',
] as const

/** A typed amount in major units as minor units of the currency (null when not a positive amount). */
function toMinor(text: string, currency: string): number | null {
  const digits = decimals(currency)
  const n = Number(text.replace(',', '.'))
  return Number.isFinite(n) && n > 0 ? Math.round(n * 10 ** digits) : null
}

const ids = (companyId: string, invoiceId: string) => ({ company_id: companyId, invoice_id: invoiceId })
const sub = (companyId: string) => `/api/v1/subscription/${encodeURIComponent(companyId)}`

type InvoiceAction = 'pay' | 'void' | 'writeOff' | 'refund' | 'creditNote'

export function InvoiceActions(props: { companyId: string; invoice: Invoice; onChanged: () => void }) {
  const { t, lang } = useT()
  const offered = useOffered()
  const [open, setOpen] = useState<InvoiceAction | null>(null)
  const [amount, setAmount] = useState('')
  const [method, setMethod] = useState<Schemas['RecordPayment']['payment_method']>('bank_transfer')
  const [text, setText] = useState('')
  const [reason, setReason] = useState<(typeof REASONS)[number]>('other')
  const inv = props.invoice
  const unpaid = inv.status === 'payment_due' || inv.status === 'not_paid'
  const minor = toMinor(amount, inv.currency_code)
  const shown = minor === null ? '' : money(minor, inv.currency_code, lang)
  const close = (done: boolean) => {
    setOpen(null)
    if (done) props.onChanged()
  }
  const start = (kind: InvoiceAction, preset = '') => {
    setAmount(preset)
    setText('')
    setOpen(kind)
  }
  const places = decimals(inv.currency_code)
  const due = (inv.amount_due / 10 ** places).toFixed(places)
  const key = { header: idempotencyKey() }
  const button = (kind: InvoiceAction, label: string, preset?: string) => (
    <button type="button" onClick={() => start(kind, preset)} aria-label={`${label} ${inv.id}`}>
      {label}
    </button>
  )
  const amountField = (
    <Field label={t.amount}>
      <input inputMode="decimal" value={amount} required onInput={(e) => setAmount(e.currentTarget.value)} />
    </Field>
  )
  const reasonField = (
    <Field label={t.reason}>
      <select value={reason} onChange={(e) => setReason(e.currentTarget.value as typeof reason)}>
        {REASONS.map((r) => (
          <option key={r}>{r}</option>
        ))}
      </select>
    </Field>
  )
  const commentField = (label: string) => (
    <Field label={label}>
      <input value={text} onInput={(e) => setText(e.currentTarget.value)} />
    </Field>
  )
  return (
    <div class="row-actions">
      {unpaid && button('pay', t.recordPayment, due)}
      {unpaid && inv.amount_paid === 0 && button('void', t.voidInvoice)}
      {unpaid && button('writeOff', t.writeOff)}
      {inv.status === 'paid' && offered.has('refund') && button('refund', t.refund)}
      {offered.has('creditNote') && button('creditNote', t.creditNote)}
      {open === 'pay' && (
        <ConfirmDialog
          title={`${t.recordPayment} — ${inv.id}`}
          consequence={minor === null ? null : t.confirmRecordPayment(shown, inv.id)}
          onClose={close}
          run={() =>
            call(
              api.POST(`${SUB}/invoices/{invoice_id}/record_payment`, {
                params: { path: ids(props.companyId, inv.id), ...key },
                body: { amount: minor!, payment_method: method, ...(text ? { reference: text } : {}) },
              }),
              t.networkError,
            )
          }
        >
          {amountField}
          <Field label={t.method}>
            <select value={method} onChange={(e) => setMethod(e.currentTarget.value as typeof method)}>
              {(['bank_transfer', 'cash', 'check', 'other'] as const).map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </Field>
          {commentField(t.reference)}
        </ConfirmDialog>
      )}
      {open === 'void' && (
        <ConfirmDialog
          title={`${t.voidInvoice} — ${inv.id}`}
          consequence={t.confirmVoid(inv.id)}
          onClose={close}
          run={() =>
            call(
              api.POST(`${SUB}/invoices/{invoice_id}/void`, {
                params: { path: ids(props.companyId, inv.id), ...key },
                body: { reason_code: reason, ...(text ? { comment: text } : {}) },
              }),
              t.networkError,
            )
          }
        >
          {reasonField}
          {commentField(t.comment)}
        </ConfirmDialog>
      )}
      {open === 'writeOff' && (
        <ConfirmDialog
          title={`${t.writeOff} — ${inv.id}`}
          consequence={t.confirmWriteOff(inv.id)}
          onClose={close}
          run={() =>
            call(
              api.POST(`${SUB}/invoices/{invoice_id}/write_off`, {
                params: { path: ids(props.companyId, inv.id), ...key },
                body: text ? { comment: text } : {},
              }),
              t.networkError,
            )
          }
        >
          {commentField(t.comment)}
        </ConfirmDialog>
      )}
      {open === 'refund' && (
        <ConfirmDialog
          title={`${t.refund} — ${inv.id}`}
          consequence={minor === null ? null : t.confirmRefund(shown, inv.id)}
          onClose={close}
          run={() =>
            untyped(
              'POST',
              `${sub(props.companyId)}/invoices/${encodeURIComponent(inv.id)}/refund`,
              { amount: minor, reason_code: reason, ...(text ? { comment: text } : {}) },
              t.networkError,
            )
          }
        >
          {amountField}
          {reasonField}
          {commentField(t.comment)}
        </ConfirmDialog>
      )}
      {open === 'creditNote' && (
        <ConfirmDialog
          title={`${t.creditNote} — ${inv.id}`}
          consequence={minor === null ? null : t.confirmCreditNote(shown, inv.id)}
          onClose={close}
          run={() =>
            untyped(
              'POST',
              `${sub(props.companyId)}/credit_notes`,
              {
                reference_invoice_id: inv.id,
                type: unpaid ? 'adjustment' : 'refundable',
                total: minor,
                reason_code: reason,
                ...(text ? { description: text } : {}),
              },
              t.networkError,
            )
          }
        >
          {amountField}
          {reasonField}
          {commentField(t.description)}
        </ConfirmDialog>
      )}
    </div>
  )
}

type CompanyAction = 'plan' | 'cancel' | 'pause' | 'resume' | 'credits' | 'charge' | 'disable' | 'enable'
type Details = Schemas['SubscriptionDetails']

export function CompanyActions(props: { company: Company; details: Details | undefined; onChanged: () => void }) {
  const { t, lang } = useT()
  const offered = useOffered()
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
  const scheduling = offered.has('scheduled')
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
      {d && live && status !== 'paused' && offered.has('pause') && button('pause', t.pause)}
      {d && status === 'paused' && offered.has('resume') && button('resume', t.resume)}
      {d && offered.has('credits') && button('credits', t.promotionalCredits)}
      {d && offered.has('charge') && button('charge', t.oneOffCharge)}
      {c.disabled ? button('enable', t.enableCompany) : button('disable', t.disableCompany)}
      {open === 'plan' && d && (
        <ConfirmDialog
          title={t.changePlan}
          consequence={estimated ? t.confirmChangePlan(choice, quantity, scheduling && flag) : null}
          onClose={close}
          run={() =>
            scheduling && flag
              ? untyped(
                  'PUT',
                  `/api/v1/subscription/companies/${encodeURIComponent(c.id)}/update/${d.subscription.id}`,
                  { subscription_plan: choice, plan_quantity: quantity, end_of_term: true },
                  t.networkError,
                )
              : call(
                  api.PUT('/api/v1/subscription/companies/{company_id}/update/{subscription_id}', {
                    params: { path: { company_id: c.id, subscription_id: d.subscription.id }, ...key },
                    body: { subscription_plan: choice, plan_quantity: quantity },
                  }),
                  t.networkError,
                )
          }
        >
          {scheduling && flagField(t.endOfTerm, t.immediately)}
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
            untyped('PUT', `${sub(c.id)}/pause`, { pause_option: flag ? 'immediately' : 'end_of_term' }, t.networkError)
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
          run={() => untyped('PUT', `${sub(c.id)}/resume`, { resume_option: 'immediately' }, t.networkError)}
        />
      )}
      {open === 'credits' && (
        <ConfirmDialog
          title={t.promotionalCredits}
          consequence={minor === null || !text ? null : t.confirmCredits(shown, flag)}
          onClose={close}
          run={() =>
            untyped(
              'POST',
              `${sub(c.id)}/promotional_credits`,
              { amount: minor, description: text, type: flag ? 'add' : 'deduct' },
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
            untyped(
              'POST',
              `${sub(c.id)}/charges`,
              { amount: minor, description: text, invoice_immediately: flag },
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
