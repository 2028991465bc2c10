type Obj = Record<string, any>
type Route = [string, RegExp, (m: RegExpMatchArray, p: Obj) => Obj]

/**
 * What the fake Chargebee (fake-chargebee.ts) answers for the sync half of issue 17: invoices and
 * credit notes (read by the reconciliation, carried by webhooks) and Product Catalog 1.0 copies of
 * a subscription. Its routes join the fake's; its helpers join the fake's object.
 */
export function fakeChargebeeSync(deps: {
  routes: Route[]
  touch: (o: Obj) => Obj
  nextId: (prefix: string) => string
  now: () => number
  notFound: (what: string) => Error
  subscriptionOf: (id: string) => Obj
  invoiceFor: (items: Obj[], coupons: Obj[]) => Obj
}) {
  const { routes, touch, nextId, now, notFound, subscriptionOf, invoiceFor } = deps
  // Invoices and credit notes (issue 17: the ledger read from Chargebee). Shapes as the API v2
  // documents them (https://apidocs.chargebee.com/docs/api/invoices#invoice_attributes,
  // https://apidocs.chargebee.com/docs/api/credit_notes#credit_note_attributes; the SDK's
  // types/resources/Invoice.d.ts and CreditNote.d.ts): amounts in cents, times in Unix seconds,
  // a resource_version growing with every change. Lists answer `{list: [{invoice}], next_offset}`
  // newest first, filtered by `subscription_id[is]`, `limit` (1-100, default 10) and `offset`
  // (https://apidocs.chargebee.com/docs/api/invoices#list_invoices, #pagination_and_filtering).
  const invoices = new Map<string, Obj>()
  const creditNotes = new Map<string, Obj>()
  function listOf(store: Map<string, Obj>, wrapper: string, p: Obj): Obj {
    const limit = Math.min(100, Math.max(1, Number(p.limit ?? 10)))
    const start = Number(p.offset ?? 0)
    const all = [...store.values()]
      .filter((o) => !o.deleted && (p.subscription_id?.is === undefined || o.subscription_id === p.subscription_id.is))
      .sort((a, b) => b.date - a.date || (b.id < a.id ? -1 : 1))
    const page = all.slice(start, start + limit)
    return {
      list: page.map((o) => ({ [wrapper]: structuredClone(o) })),
      ...(start + limit < all.length ? { next_offset: String(start + limit) } : {}),
    }
  }
  const findIn = (store: Map<string, Obj>, what: string, id: string) => {
    const o = store.get(id)
    if (!o || o.deleted) throw notFound(`${what} ${id}`)
    return { [what === 'Invoice' ? 'invoice' : 'credit_note']: structuredClone(o) }
  }
  routes.push(
    ['GET', /^\/invoices$/, (_m, p) => listOf(invoices, 'invoice', p)],
    ['GET', /^\/invoices\/([^/]+)$/, (m) => findIn(invoices, 'Invoice', decodeURIComponent(m[1]!))],
    ['GET', /^\/credit_notes$/, (_m, p) => listOf(creditNotes, 'credit_note', p)],
    ['GET', /^\/credit_notes\/([^/]+)$/, (m) => findIn(creditNotes, 'CreditNote', decodeURIComponent(m[1]!))],
  )

  return {
    invoices,
    creditNotes,
    /**
     * An invoice Chargebee generated for the subscription (its scheduler, a change), priced from
     * its items as the estimates are, `fields` laid over: `status` paid (default), payment_due, ...
     */
    addInvoice(subscriptionId: string, fields: Obj = {}) {
      const s = subscriptionOf(subscriptionId)
      const priced = invoiceFor(s.subscription_items, s.coupons ?? [])
      const date = now()
      const status = fields.status ?? 'paid'
      const paid = status === 'paid' ? priced.total : 0
      const invoice: Obj = {
        ...priced,
        object: 'invoice',
        id: nextId('inv'),
        customer_id: s.customer_id,
        subscription_id: s.id,
        recurring: true,
        first_invoice: false,
        status,
        date,
        due_date: date,
        generated_at: date,
        net_term_days: 0,
        tax: priced.taxes[0].amount,
        amount_paid: paid,
        amount_adjusted: 0,
        write_off_amount: 0,
        amount_due: priced.total - paid,
        ...(status === 'paid' ? { paid_at: date } : {}),
        term_finalized: true,
        is_gifted: false,
        deleted: false,
        line_items: priced.line_items.map((l: Obj) => ({
          ...l,
          date_from: s.current_term_start ?? date,
          date_to: s.current_term_end ?? date,
        })),
        ...fields,
      }
      invoices.set(invoice.id, touch(invoice))
      return structuredClone(invoice)
    },
    /** Chargebee-side changes of an invoice (a payment, dunning, voiding), bumping its resource_version. */
    changeInvoice(id: string, fn: (i: Obj) => void) {
      const i = invoices.get(id)!
      fn(i)
      return structuredClone(touch(i))
    },
    addCreditNote(invoiceId: string, fields: Obj = {}) {
      const i = invoices.get(invoiceId)!
      const date = now()
      const note: Obj = {
        object: 'credit_note',
        id: nextId('cn'),
        customer_id: i.customer_id,
        subscription_id: i.subscription_id,
        reference_invoice_id: i.id,
        type: 'refundable',
        reason_code: 'subscription_change',
        status: 'refund_due',
        date,
        price_type: 'tax_exclusive',
        currency_code: 'EUR',
        total: 1000,
        amount_allocated: 0,
        amount_refunded: 0,
        amount_available: 1000,
        sub_total: 820,
        generated_at: date,
        deleted: false,
        ...fields,
      }
      creditNotes.set(note.id, touch(note))
      return structuredClone(note)
    },
    /**
     * A Product Catalog 1.0 copy of a subscription (https://apidocs.chargebee.com/docs/api/subscriptions?prod_cat_ver=1):
     * `plan_id`, `plan_quantity`, `plan_unit_price`, `addons: [{id, quantity, unit_price}]`, no subscription_items.
     */
    catalogV1(id: string) {
      const { subscription_items: items, ...rest } = structuredClone(subscriptionOf(id))
      const plan = (items as Obj[]).find((i) => i.item_type === 'plan')!
      return {
        ...rest,
        plan_id: plan.item_price_id,
        plan_quantity: plan.quantity,
        plan_unit_price: plan.unit_price,
        addons: (items as Obj[])
          .filter((i) => i.item_type === 'addon')
          .map((i) => ({ id: i.item_price_id, quantity: i.quantity, unit_price: i.unit_price, object: 'addon' })),
      }
    },
  }
}
