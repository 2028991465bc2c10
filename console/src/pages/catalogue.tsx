import { api, call, type Schemas } from '../api.ts'
import { price, useT } from '../i18n.ts'
import { PagedTable } from '../ui.tsx'

const PAGE = 50
const page = (cursor: string | undefined) => ({ query: { limit: PAGE, ...(cursor ? { cursor } : {}) } })

export function Catalogue() {
  const { t, lang } = useT()
  return (
    <>
      <h1>{t.catalogue}</h1>
      <PagedTable<Schemas['Product']>
        showCaption
        caption={t.products}
        rowKey={(p) => p.product.id}
        load={(cursor) => call(api.GET('/api/v1/subscription/products', { params: page(cursor) }), t.networkError)}
        columns={[
          { label: 'SKU', cell: (p) => p.product.sku },
          { label: t.name, cell: (p) => p.product.name },
          { label: t.plans, cell: (p) => p.product.allowed_plans.join(', ') },
        ]}
      />
      <PagedTable<Schemas['Plan']>
        showCaption
        caption={t.plans}
        rowKey={(p) => p.plan.id}
        load={(cursor) => call(api.GET('/api/v1/subscription/plans', { params: page(cursor) }), t.networkError)}
        columns={[
          { label: 'SKU', cell: (p) => p.plan.sku },
          { label: t.name, cell: (p) => p.plan.name },
          { label: t.price, cell: (p) => price(p.plan.price, p.plan.currency_code, lang) },
          { label: t.period, cell: (p) => p.plan.period_unit },
        ]}
      />
      <PagedTable<Schemas['Addon']>
        showCaption
        caption={t.addons}
        rowKey={(a) => a.id}
        load={(cursor) => call(api.GET('/api/v1/subscription/addons', { params: page(cursor) }), t.networkError)}
        columns={[
          { label: t.id, cell: (a) => a.id },
          { label: t.name, cell: (a) => a.name },
          { label: t.price, cell: (a) => price(a.price, a.currency_code, lang) },
          { label: t.period, cell: (a) => a.period_unit },
        ]}
      />
      <PagedTable<Schemas['Coupon']>
        showCaption
        caption={t.coupons}
        rowKey={(c) => c.id}
        load={(cursor) => call(api.GET('/api/v1/subscription/coupons', { params: page(cursor) }), t.networkError)}
        columns={[
          { label: 'Code', cell: (c) => c.code },
          { label: t.name, cell: (c) => c.name },
          { label: t.type, cell: (c) => `${c.discount_type} ${c.discount_value}` },
          { label: t.period, cell: (c) => c.duration_type },
        ]}
      />
    </>
  )
}
