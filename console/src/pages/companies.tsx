import { useState } from 'preact/hooks'
import { api, call, type Company } from '../api.ts'
import { useT } from '../i18n.ts'
import { Field, PagedTable } from '../ui.tsx'

const STATUSES = ['future', 'in_trial', 'active', 'non_renewing', 'paused', 'cancelled'] as const
type Status = (typeof STATUSES)[number]

export function Companies() {
  const { t } = useT()
  const [q, setQ] = useState('')
  const [status, setStatus] = useState<Status | ''>('')
  const [disabled, setDisabled] = useState<'' | 'true' | 'false'>('')
  const [applied, setApplied] = useState({ q: '', status, disabled })

  const load = (cursor: string | undefined) =>
    call(
      api.GET('/api/v1/companies', {
        params: {
          query: {
            limit: 25,
            ...(cursor ? { cursor } : {}),
            ...(applied.q ? { q: applied.q } : {}),
            ...(applied.status ? { subscription_status: applied.status } : {}),
            ...(applied.disabled ? { disabled: applied.disabled === 'true' } : {}),
          },
        },
      }),
      t.networkError,
    )

  return (
    <>
      <h1>{t.companies}</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault()
          setApplied({ q: q.trim(), status, disabled })
        }}
      >
        <Field label={t.search}>
          <input type="search" value={q} placeholder={t.searchHint} onInput={(e) => setQ(e.currentTarget.value)} />
        </Field>
        <Field label={t.status}>
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value as Status | '')}>
            <option value="">{t.any}</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <Field label={t.disabledFilter}>
          <select value={disabled} onChange={(e) => setDisabled(e.currentTarget.value as '' | 'true' | 'false')}>
            <option value="">{t.any}</option>
            <option value="true">{t.yes}</option>
            <option value="false">{t.no}</option>
          </select>
        </Field>
        <button type="submit" class="primary">
          {t.search}
        </button>
      </form>
      <PagedTable<Company>
        caption={t.companies}
        inputs={[applied]}
        load={load}
        rowKey={(c) => c.id}
        columns={[
          { label: t.name, cell: (c) => <a href={`#/companies/${c.id}`}>{c.name}</a> },
          { label: t.status, cell: (c) => c.subscription_status ?? '—' },
          { label: t.plan, cell: (c) => c.subscription_plan ?? '—' },
          { label: t.country, cell: (c) => c.country },
          { label: t.enabled, cell: (c) => (c.disabled ? t.disabled : t.enabled) },
        ]}
      />
    </>
  )
}
