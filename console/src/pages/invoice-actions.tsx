import { useState } from 'preact/hooks'
import { api, call, idempotencyKey, type Invoice, type Schemas } from '../api.ts'
import { decimals, money, useT } from '../i18n.ts'
import { ConfirmDialog, Field } from '../ui.tsx'
import { REASONS, SUB, toMinor } from './actions.ts'

const ids = (companyId: string, invoiceId: string) => ({ company_id: companyId, invoice_id: invoiceId })

type InvoiceAction = 'pay' | 'void' | 'writeOff' | 'refund' | 'creditNote'

export function InvoiceActions(props: { companyId: string; invoice: Invoice; onChanged: () => void }) {
  const { t, lang } = useT()
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
      {inv.status === 'paid' && button('refund', t.refund)}
      {button('creditNote', t.creditNote)}
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
            call(
              api.POST(`${SUB}/invoices/{invoice_id}/refund`, {
                params: { path: ids(props.companyId, inv.id), ...key },
                body: { amount: minor!, reason_code: reason, ...(text ? { comment: text } : {}) },
              }),
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
            call(
              api.POST(`${SUB}/credit_notes`, {
                params: { path: { company_id: props.companyId }, ...key },
                body: {
                  reference_invoice_id: inv.id,
                  type: unpaid ? 'adjustment' : 'refundable',
                  total: minor!,
                  reason_code: reason,
                  ...(text ? { description: text } : {}),
                },
              }),
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
