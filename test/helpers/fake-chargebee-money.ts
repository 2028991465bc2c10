import { CbError } from './fake-chargebee-billing.ts'

type Obj = Record<string, any>
type Route = [string, RegExp, (m: RegExpMatchArray, p: Obj) => Obj]

/**
 * What the fake Chargebee (fake-chargebee.ts) answers for the money operations (decisions §9.2),
 * as Chargebee's API v2 documents them (apidocs.chargebee.com/docs/api/invoices: record_payment,
 * void, write_off, refund, create; /credit_notes: create, refund; /promotional_credits: add, deduct;
 * /subscriptions: add_charge_at_term_end; /estimates: renewal_estimate) and the SDK's types
 * (chargebee/types/resources/Invoice.d.ts, CreditNote.d.ts). An invoice in a state the operation
 * does not take is 409 invalid_state_for_request; an amount beyond what the object holds is 400
 * param_wrong_value naming it. Customers' balances: promotional_credits, refundable_credits,
 * excess_payments.
 */
export function fakeChargebeeMoney(deps: {
  routes: Route[]
  touch: (o: Obj) => Obj
  nextId: (prefix: string) => string
  now: () => number
  notFound: (what: string) => Error
  customers: Map<string, Obj>
  cards: Map<string, Obj>
  subscriptionOf: (id: string) => Obj
  invoices: Map<string, Obj>
  creditNotes: Map<string, Obj>
}) {
  const { routes, touch, nextId, now, notFound, customers, invoices, creditNotes } = deps
  const UNPAID = new Set(['payment_due', 'not_paid', 'posted'])
  const invalidState = (message: string) => new CbError(409, 'invalid_state_for_request', message)
  const wrongValue = (param: string, message: string) =>
    new CbError(400, 'param_wrong_value', message, undefined, param)

  const invoiceOf = (id: string) => {
    const i = invoices.get(decodeURIComponent(id))
    if (!i || i.deleted) throw notFound(`Invoice ${decodeURIComponent(id)}`)
    return i
  }
  const noteOf = (id: string) => {
    const n = creditNotes.get(decodeURIComponent(id))
    if (!n || n.deleted) throw notFound(`Credit note ${decodeURIComponent(id)}`)
    return n
  }
  const customerOf = (id: string) => {
    const c = customers.get(id)
    if (!c) throw notFound(`Customer ${id}`)
    for (const k of ['promotional_credits', 'refundable_credits', 'excess_payments']) c[k] ??= 0
    return c
  }
  const unpaid = (i: Obj) => {
    if (!UNPAID.has(i.status)) throw invalidState(`Operation not supported as the invoice is in ${i.status} state`)
  }
  const settle = (i: Obj) => {
    if (i.amount_due === 0) Object.assign(i, { status: 'paid', paid_at: now(), next_retry_at: undefined })
  }
  const transaction = (fields: Obj): Obj => ({
    object: 'transaction',
    id: nextId('txn'),
    status: 'success',
    date: now(),
    currency_code: 'EUR',
    ...fields,
  })
  const credited = (i: Obj) =>
    [...creditNotes.values()]
      .filter((n) => n.reference_invoice_id === i.id && n.status !== 'voided')
      .reduce((sum, n) => sum + n.total, 0)
  function note(i: Obj, fields: Obj): Obj {
    const n = touch({
      object: 'credit_note',
      id: nextId('cn'),
      customer_id: i.customer_id,
      subscription_id: i.subscription_id,
      reference_invoice_id: i.id,
      date: now(),
      price_type: 'tax_exclusive',
      currency_code: i.currency_code ?? 'EUR',
      amount_allocated: 0,
      amount_refunded: 0,
      amount_available: 0,
      sub_total: fields.total,
      line_items: [],
      deleted: false,
      ...fields,
    })
    creditNotes.set(n.id, n)
    const list = n.type === 'adjustment' ? 'adjustment_credit_notes' : 'issued_credit_notes'
    ;(i[list] ??= []).push({ cn_id: n.id, cn_total: n.total, cn_status: n.status, cn_reason_code: n.reason_code })
    return n
  }
  const copy = <T>(o: T): T => structuredClone(o)

  routes.push(
    // Record an invoice payment: the amount (default amount_due) settles it; beyond it, the customer's excess_payments.
    [
      'POST',
      /^\/invoices\/([^/]+)\/record_payment$/,
      (m, p) => {
        const i = invoiceOf(m[1]!)
        unpaid(i)
        const t = p.transaction ?? {}
        const amount = t.amount === undefined ? i.amount_due : Number(t.amount)
        if (!(amount > 0)) throw wrongValue('transaction[amount]', 'transaction[amount] should be greater than 0')
        const applied = Math.min(amount, i.amount_due)
        const txn = transaction({
          amount,
          type: 'payment',
          payment_method: t.payment_method,
          reference_number: t.reference_number,
          date: t.date ? Number(t.date) : now(),
          customer_id: i.customer_id,
          subscription_id: i.subscription_id,
          linked_invoices: [{ invoice_id: i.id, applied_amount: applied }],
        })
        i.amount_paid += applied
        i.amount_due -= applied
        ;(i.linked_payments ??= []).push({
          txn_id: txn.id,
          applied_amount: applied,
          applied_at: now(),
          txn_status: 'success',
          txn_date: txn.date,
          txn_amount: amount,
        })
        if (amount > applied) customerOf(i.customer_id).excess_payments += amount - applied
        settle(i)
        return { invoice: copy(touch(i)), transaction: txn }
      },
    ],
    // Void an invoice: with nothing paid; its applied credits go back to the customer.
    [
      'POST',
      /^\/invoices\/([^/]+)\/void$/,
      (m, p) => {
        const i = invoiceOf(m[1]!)
        unpaid(i)
        if (i.amount_paid > 0) throw invalidState('The invoice has payments and cannot be voided')
        customerOf(i.customer_id).refundable_credits += i.credits_applied ?? 0
        Object.assign(i, { status: 'voided', voided_at: now(), credits_applied: 0, next_retry_at: undefined })
        if (p.void_reason_code) i.void_reason_code = p.void_reason_code
        return { invoice: copy(touch(i)) }
      },
    ],
    // Write off an invoice: paid, write_off_amount = amount_due, an adjustment credit note (create_reason_code Write Off).
    [
      'POST',
      /^\/invoices\/([^/]+)\/write_off$/,
      (m) => {
        const i = invoiceOf(m[1]!)
        unpaid(i)
        const due = i.amount_due
        const n = note(i, {
          type: 'adjustment',
          reason_code: 'write_off',
          create_reason_code: 'Write Off',
          status: 'adjusted',
          total: due,
          amount_allocated: due,
        })
        Object.assign(i, { write_off_amount: (i.write_off_amount ?? 0) + due, amount_due: 0 })
        settle(i)
        return { invoice: copy(touch(i)), credit_note: copy(n) }
      },
    ],
    // Refund an invoice: a paid one; refund_amount (default all refundable) beyond what is refundable is 400.
    [
      'POST',
      /^\/invoices\/([^/]+)\/refund$/,
      (m, p) => {
        const i = invoiceOf(m[1]!)
        if (i.status !== 'paid') throw invalidState(`The invoice is ${i.status}: only a paid invoice can be refunded`)
        const refundable = i.amount_paid - credited(i)
        const amount = p.refund_amount === undefined ? refundable : Number(p.refund_amount)
        if (!(amount > 0) || amount > refundable)
          throw wrongValue('refund_amount', `refund_amount cannot be more than the refundable amount ${refundable}`)
        const txn = transaction({ amount, type: 'refund', payment_method: 'card', customer_id: i.customer_id })
        const n = note(i, {
          type: 'refundable',
          reason_code: p.credit_note?.reason_code ?? 'other',
          status: 'refunded',
          total: amount,
          amount_refunded: amount,
        })
        return { invoice: copy(touch(i)), transaction: txn, credit_note: copy(n) }
      },
    ],
    // Create a credit note: never beyond the invoice's total with its other notes; adjustment only on what is due.
    [
      'POST',
      /^\/credit_notes$/,
      (_m, p) => {
        const i = invoiceOf(p.reference_invoice_id ?? '')
        const total = Number(p.total)
        if (!(total > 0) || credited(i) + total > i.total)
          throw wrongValue(
            'total',
            `total cannot be more than the invoice's creditable amount ${i.total - credited(i)}`,
          )
        if (p.type === 'adjustment') {
          if (!UNPAID.has(i.status) || total > i.amount_due)
            throw wrongValue('total', `total cannot be more than the invoice's amount_due ${i.amount_due}`)
          i.amount_due -= total
          i.amount_adjusted = (i.amount_adjusted ?? 0) + total
          settle(i)
        } else customerOf(i.customer_id).refundable_credits += total
        const n = note(i, {
          type: p.type,
          reason_code: p.reason_code ?? 'other',
          status: p.type === 'adjustment' ? 'adjusted' : 'refund_due',
          total,
          amount_allocated: p.type === 'adjustment' ? total : 0,
          amount_available: p.type === 'adjustment' ? 0 : total,
          customer_notes: p.customer_notes,
        })
        return { credit_note: copy(n), invoice: copy(touch(i)) }
      },
    ],
    // Refund a credit note: a refundable one, at most its amount_available (all by default).
    [
      'POST',
      /^\/credit_notes\/([^/]+)\/refund$/,
      (m, p) => {
        const n = noteOf(m[1]!)
        if (n.type !== 'refundable' || n.amount_available <= 0)
          throw invalidState('Only a refundable credit note with an amount available can be refunded')
        const amount = p.refund_amount === undefined ? n.amount_available : Number(p.refund_amount)
        if (!(amount > 0) || amount > n.amount_available)
          throw wrongValue('refund_amount', `refund_amount cannot be more than ${n.amount_available}`)
        n.amount_available -= amount
        n.amount_refunded += amount
        if (n.amount_available === 0) n.status = 'refunded'
        customerOf(n.customer_id).refundable_credits -= amount
        const txn = transaction({ amount, type: 'refund', payment_method: 'card', customer_id: n.customer_id })
        return { credit_note: copy(touch(n)), transaction: txn }
      },
    ],
    // Add or deduct promotional credits: a deduction beyond the balance is 400.
    [
      'POST',
      /^\/promotional_credits\/(add|deduct)$/,
      (m, p) => {
        const c = customerOf(p.customer_id)
        const amount = Number(p.amount)
        const sign = m[1] === 'add' ? 1 : -1
        if (!(amount > 0)) throw wrongValue('amount', 'amount should be greater than 0')
        if (sign < 0 && amount > c.promotional_credits)
          throw wrongValue('amount', `amount cannot be more than the promotional credits ${c.promotional_credits}`)
        c.promotional_credits += sign * amount
        c.resource_version = Date.now()
        const credit = {
          object: 'promotional_credit',
          id: nextId('pc'),
          customer_id: c.id,
          type: m[1] === 'add' ? 'increment' : 'decrement',
          amount,
          description: p.description,
          closing_balance: c.promotional_credits,
          created_at: now(),
        }
        return { customer: copy(c), promotional_credit: credit }
      },
    ],
    // Create an invoice for one-off charges (taxed at 22 % as the fake's items): paid with a card, else payment_due.
    [
      'POST',
      /^\/invoices$/,
      (_m, p) => {
        customerOf(p.customer_id)
        const s = p.subscription_id ? deps.subscriptionOf(p.subscription_id) : undefined
        const lines = ((p.charges ?? []) as Obj[]).map((c) => ({
          object: 'line_item',
          entity_type: 'adhoc',
          description: c.description,
          unit_amount: Number(c.amount),
          quantity: 1,
          amount: Number(c.amount),
          date_from: now(),
          date_to: now(),
        }))
        const subTotal = lines.reduce((sum, l) => sum + l.amount, 0)
        const tax = Math.round(subTotal * 0.22)
        const paid = deps.cards.has(p.customer_id)
        const total = subTotal + tax
        const i = touch({
          object: 'invoice',
          id: nextId('inv'),
          customer_id: p.customer_id,
          subscription_id: s?.id,
          recurring: false,
          status: paid ? 'paid' : 'payment_due',
          date: now(),
          due_date: now(),
          currency_code: p.currency_code ?? 'EUR',
          price_type: 'tax_exclusive',
          line_items: lines,
          discounts: [],
          sub_total: subTotal,
          taxes: [{ object: 'tax', name: 'IT VAT', amount: tax, description: 'IT VAT @ 22%' }],
          line_item_taxes: [{ tax_name: 'IT VAT', tax_rate: 22, tax_amount: tax, tax_juris_type: 'country' }],
          total,
          amount_paid: paid ? total : 0,
          amount_due: paid ? 0 : total,
          credits_applied: 0,
          amount_adjusted: 0,
          write_off_amount: 0,
          ...(paid ? { paid_at: now() } : {}),
          deleted: false,
        })
        invoices.set(i.id, i)
        return { invoice: copy(i) }
      },
    ],
    // Add a charge at term end: a line of the next renewal invoice (its renewal estimate shows it).
    [
      'POST',
      /^\/subscriptions\/([^/]+)\/add_charge_at_term_end$/,
      (m, p) => {
        const s = deps.subscriptionOf(decodeURIComponent(m[1]!))
        if (s.status === 'cancelled' || s.status === 'non_renewing')
          throw invalidState('The subscription does not renew: a charge cannot wait for its term end')
        ;(s.charges_at_term_end ??= []).push({ amount: Number(p.amount), description: p.description })
        touch(s)
        return { estimate: renewal(s) }
      },
    ],
    ['GET', /^\/subscriptions\/([^/]+)\/renewal_estimate$/, (m) => ({ estimate: renewal(deps.subscriptionOf(m[1]!)) })],
  )

  function renewal(s: Obj): Obj {
    const charges = ((s.charges_at_term_end ?? []) as Obj[]).map((c) => ({
      object: 'line_item',
      entity_type: 'adhoc',
      description: c.description,
      unit_amount: c.amount,
      quantity: 1,
      amount: c.amount,
    }))
    return {
      object: 'estimate',
      created_at: now(),
      invoice_estimate: { object: 'invoice_estimate', line_items: [...(s.subscription_items ?? []), ...charges] },
    }
  }

  return {
    /** A customer's balances at Chargebee. */
    balances(customerId: string) {
      const c = customerOf(customerId)
      return {
        promotional_credits: c.promotional_credits,
        refundable_credits: c.refundable_credits,
        excess_payments: c.excess_payments,
      }
    },
  }
}
