import { useState } from 'preact/hooks'
import { api, call, download, type Invoice, type Schemas } from '../api.ts'
import { money, price, useT, when } from '../i18n.ts'
import { ErrorNote, Loading, PagedTable, Section, useLoad } from '../ui.tsx'
import { SUB } from './actions.ts'
import { CompanyActions } from './company-actions.tsx'
import { InvoiceActions } from './invoice-actions.tsx'

const PAGE = 20

export function CompanyPage({ id }: { id: string }) {
  const { t, lang } = useT()
  const path = { company_id: id }
  const company = useLoad(
    () => call(api.GET('/api/v1/companies/{company_id}', { params: { path } }), t.networkError),
    [id],
  )
  const details = useLoad(
    () => call(api.GET('/api/v1/subscription/{company_id}/details', { params: { path } }), t.networkError),
    [id],
  )
  // Bumped after an action, so every list reads what it changed.
  const [round, setRound] = useState(0)
  const changed = () => {
    company.reload()
    details.reload()
    setRound((n) => n + 1)
  }
  const [docError, setDocError] = useState<{ kind: string; message: string | null }>({ kind: '', message: null })
  const save = async (kind: 'invoices' | 'credit_notes', pending: Parameters<typeof download>[0], name?: string) =>
    setDocError({ kind, message: await download(pending, t.networkError, name) })
  const invoicePath = (invoiceId: string) => ({ path: { company_id: id, invoice_id: invoiceId } })
  const documents = (i: Invoice) => (
    <span class="row-actions">
      <button
        type="button"
        class="link"
        aria-label={`${t.pdf} ${i.id}`}
        onClick={() =>
          save(
            'invoices',
            api.GET(`${SUB}/invoices/{invoice_id}/pdf`, { params: invoicePath(i.id), parseAs: 'blob' }),
            `invoice-${i.id}.pdf`,
          )
        }
      >
        {t.pdf}
      </button>
      <button
        type="button"
        class="link"
        aria-label={`FatturaPA ${i.id}`}
        onClick={() =>
          save(
            'invoices',
            api.GET(`${SUB}/invoices/{invoice_id}/fatturapa`, { params: invoicePath(i.id), parseAs: 'blob' }),
          )
        }
      >
        FatturaPA
      </button>
    </span>
  )
  const creditNotePdf = (n: Schemas['CreditNote']) => (
    <button
      type="button"
      class="link"
      aria-label={`${t.pdf} ${n.id}`}
      onClick={() =>
        save(
          'credit_notes',
          api.GET(`${SUB}/credit_notes/{credit_note_id}/pdf`, {
            params: { path: { company_id: id, credit_note_id: n.id } },
            parseAs: 'blob',
          }),
          `credit-note-${n.id}.pdf`,
        )
      }
    >
      {t.pdf}
    </button>
  )
  const c = company.data
  const d = details.data
  const currency = d?.plan.currency_code
  const scheduled = d?.subscription.scheduled_change

  return (
    <>
      <p>
        <a href="#/companies">{t.back}</a>
      </p>
      <h1>{c?.name ?? id}</h1>
      {company.loading && !c && <Loading />}
      <ErrorNote message={company.error} />
      {c && (
        <Section title={t.details} id="details">
          <dl class="facts">
            <dt>{t.id}</dt>
            <dd>{c.id}</dd>
            <dt>VAT</dt>
            <dd>{c.vat_number ?? '—'}</dd>
            <dt>{t.taxCode}</dt>
            <dd>{c.tax_code ?? '—'}</dd>
            <dt>{t.sdiCode}</dt>
            <dd>{c.sdi_code ?? '—'}</dd>
            <dt>PEC</dt>
            <dd>{c.pec ?? '—'}</dd>
            <dt>Email</dt>
            <dd>{c.billing_email ?? '—'}</dd>
            <dt>{t.address}</dt>
            <dd>{[c.address, c.zip, c.city, c.province, c.country].filter(Boolean).join(', ')}</dd>
            <dt>{t.enabled}</dt>
            <dd>{c.disabled ? t.disabled : t.enabled}</dd>
          </dl>
        </Section>
      )}
      <Section title={t.subscription} id="subscription">
        {details.loading && !d && <Loading />}
        <ErrorNote message={details.error} />
        {d && (
          <dl class="facts">
            <dt>{t.status}</dt>
            <dd>{d.subscription.status}</dd>
            <dt>{t.plan}</dt>
            <dd>
              {d.plan.name} × {d.subscription.plan_quantity} ({price(d.plan.price, currency, lang)} /{' '}
              {d.plan.period_unit})
            </dd>
            <dt>{t.period}</dt>
            <dd>
              {when(d.subscription.current_term_start, lang)} – {when(d.subscription.current_term_end, lang)}
            </dd>
            {scheduled && (
              <>
                <dt>{t.scheduledChange}</dt>
                <dd>
                  {scheduled.subscription_plan} × {scheduled.plan_quantity}, {when(scheduled.at, lang)}
                </dd>
              </>
            )}
            <dt>{t.promotionalCredits}</dt>
            <dd>{money(d.customer.promotional_credits, currency, lang)}</dd>
          </dl>
        )}
        {c && <CompanyActions company={c} details={d} onChanged={changed} />}
      </Section>
      <Section title={t.invoices} id="invoices">
        <ErrorNote message={docError.kind === 'invoices' ? docError.message : null} />
        <PagedTable<Invoice>
          caption={t.invoices}
          inputs={[id, round]}
          rowKey={(i) => i.id}
          load={(cursor) =>
            call(
              api.GET('/api/v1/subscription/{company_id}/invoices', {
                params: { path, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
              }),
              t.networkError,
            )
          }
          columns={[
            { label: t.id, cell: (i) => i.id },
            { label: t.date, cell: (i) => when(i.date, lang) },
            { label: t.state, cell: (i) => <span class={`status ${i.status}`}>{i.status}</span> },
            { label: t.total, cell: (i) => money(i.total, i.currency_code, lang) },
            { label: t.due, cell: (i) => money(i.amount_due, i.currency_code, lang) },
            { label: t.documents, cell: documents },
            { label: t.actions, cell: (i) => <InvoiceActions companyId={id} invoice={i} onChanged={changed} /> },
          ]}
        />
      </Section>
      <Section title={t.creditNotes} id="credit-notes">
        <ErrorNote message={docError.kind === 'credit_notes' ? docError.message : null} />
        <PagedTable<Schemas['CreditNote']>
          caption={t.creditNotes}
          inputs={[id, round]}
          rowKey={(n) => n.id}
          load={(cursor) =>
            call(
              api.GET('/api/v1/subscription/{company_id}/credit_notes', {
                params: { path, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
              }),
              t.networkError,
            )
          }
          columns={[
            { label: t.id, cell: (n) => n.id },
            { label: t.date, cell: (n) => when(n.date, lang) },
            { label: t.type, cell: (n) => n.type ?? '—' },
            { label: t.reason, cell: (n) => n.reason_code },
            { label: t.total, cell: (n) => money(n.total, n.currency_code, lang) },
            { label: t.pdf, cell: creditNotePdf },
          ]}
        />
      </Section>
      <Section title={t.contracts} id="contracts">
        <PagedTable<Schemas['Contract']>
          caption={t.contracts}
          inputs={[id]}
          rowKey={(x) => x.id}
          load={(cursor) =>
            call(
              api.GET('/api/v1/companies/{company_id}/contracts', {
                params: { path, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
              }),
              t.networkError,
            )
          }
          columns={[
            { label: t.name, cell: (x) => `${x.first_name ?? ''} ${x.last_name ?? ''}` },
            { label: 'Email', cell: (x) => x.email ?? '—' },
            { label: t.enabled, cell: (x) => (x.active ? t.yes : t.no) },
          ]}
        />
      </Section>
      <Section title={t.teams} id="teams">
        <PagedTable<Schemas['Team']>
          caption={t.teams}
          inputs={[id]}
          rowKey={(x) => x.id}
          load={(cursor) =>
            call(
              api.GET('/api/v1/companies/{company_id}/teams', {
                params: { path, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
              }),
              t.networkError,
            )
          }
          columns={[
            { label: t.name, cell: (x) => x.name },
            { label: 'Code', cell: (x) => x.code ?? '—' },
          ]}
        />
      </Section>
      <Section title={t.events} id="events">
        <PagedTable<Schemas['Event']>
          caption={t.events}
          inputs={[id, round]}
          rowKey={(x) => x.id}
          load={(cursor) =>
            call(
              api.GET('/api/v1/companies/{company_id}/events', {
                params: { path, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
              }),
              t.networkError,
            )
          }
          columns={[
            { label: t.date, cell: (x) => when(x.created_at, lang) },
            { label: t.type, cell: (x) => x.type },
            { label: t.id, cell: (x) => x.id },
          ]}
        />
      </Section>
      <Section title={t.clients} id="clients">
        <PagedTable<Schemas['Client']>
          caption={t.clients}
          inputs={[id]}
          rowKey={(x) => x.client_id}
          load={(cursor) =>
            call(
              api.GET('/api/v1/companies/{company_id}/clients', {
                params: { path, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
              }),
              t.networkError,
            )
          }
          columns={[
            { label: t.id, cell: (x) => x.client_id },
            { label: t.name, cell: (x) => x.name ?? '—' },
            { label: t.scopes, cell: (x) => x.scopes.join(' ') },
          ]}
        />
      </Section>
      <Section title={t.webhookEndpoints} id="webhooks">
        <PagedTable<Schemas['WebhookEndpoint']>
          caption={t.webhookEndpoints}
          inputs={[id]}
          rowKey={(x) => x.id}
          load={() =>
            call(api.GET('/api/v1/companies/{company_id}/webhook_endpoints', { params: { path } }), t.networkError)
          }
          columns={[
            { label: t.url, cell: (x) => x.url },
            { label: t.enabled, cell: (x) => (x.enabled ? t.yes : t.no) },
            { label: t.deliveries, cell: (x) => <Deliveries companyId={id} endpointId={x.id} /> },
          ]}
        />
      </Section>
    </>
  )
}

function Deliveries({ companyId, endpointId }: { companyId: string; endpointId: string }) {
  const { t, lang } = useT()
  const [open, setOpen] = useState(false)
  if (!open)
    return (
      <button type="button" class="link" onClick={() => setOpen(true)}>
        {t.showDeliveries}
      </button>
    )
  return (
    <PagedTable<Schemas['WebhookDeliveryAttempt']>
      caption={t.deliveries}
      rowKey={(x) => x.id}
      load={(cursor) =>
        call(
          api.GET('/api/v1/companies/{company_id}/webhook_endpoints/{id}/deliveries', {
            params: {
              path: { company_id: companyId, id: endpointId },
              query: { limit: PAGE, ...(cursor ? { cursor } : {}) },
            },
          }),
          t.networkError,
        )
      }
      columns={[
        { label: t.date, cell: (x) => when(x.started_at, lang) },
        { label: t.type, cell: (x) => x.event_type },
        { label: t.state, cell: (x) => `${x.status}${x.status_code ? ` ${x.status_code}` : ''}` },
      ]}
    />
  )
}
