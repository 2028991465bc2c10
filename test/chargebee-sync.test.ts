import { it } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import type { TestApp } from './helpers/app.ts'
import { withChargebee, chargebeeCompany, deliver, type CbCompany } from './chargebee.fixtures.ts'
import { SUB, detailsOf, eventsOf, mirrorOf, statusOf } from './subscriptions-helpers.ts'
import { forEachEngine } from './helpers/engine-suites.ts'

/**
 * Issue 17, the sync half: every Chargebee subscription, card, invoice, credit note and payment
 * event applied in order through the signed webhook, Product Catalog 1.0 payloads, the ledger
 * read from Chargebee, and the reconciliation correcting drift (docs/chargebee.md).
 */
const outcome = async (t: TestApp, event: unknown) => {
  const res = await deliver(t, event)
  assert.equal(res.statusCode, 200, res.body)
  return res.json().outcome as string
}
const invoicesOf = (t: TestApp, c: CbCompany) => t.json<any[]>(200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
const creditNotesOf = (t: TestApp, c: CbCompany) =>
  t.json<any[]>(200, { url: `${SUB}/${c.id}/credit_notes`, token: c.token })
const apiEvents = async (t: TestApp, c: CbCompany, type: string) =>
  (await t.json<any[]>(200, { url: `/api/v1/companies/${c.id}/events`, query: { type } }))
    .map((e) => e.type as string)
    .reverse()

// The app on a fake Chargebee, built and closed by the hooks withChargebee registers.
forEachEngine('chargebee sync', (engine) => {
  // A reconciliation every minute: the test moves real time past one run without expiring its tokens.
  // The log is read by the reconciliation's tests (its warnings name what drifted).
  const lines: string[] = []
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  const { t, fake } = withChargebee(
    engine,
    { CHARGEBEE_RECONCILE_INTERVAL_SECONDS: 60 },
    { logger: pino({ level: 'warn' }, sink) },
  )

  it('subscription_started, _trial_extended, the *_with_backdating events and _deleted each apply and record their verb', async () => {
    const c = await chargebeeCompany(t, fake)
    const trialEnd = fake.subscriptions.get(c.subscriptionId)!.trial_end as number
    fake.change(c.subscriptionId, (s) =>
      Object.assign(s, { trial_end: trialEnd + 7 * 86_400, current_term_end: trialEnd + 7 * 86_400 }),
    )
    assert.equal(
      await outcome(t, fake.event('subscription_trial_extended', { subscriptionId: c.subscriptionId })),
      'applied',
    )
    assert.equal((await statusOf(t, c)).trial_end, trialEnd + 7 * 86_400)

    const steps: [string, (s: any) => void, string][] = [
      [
        'subscription_changed_with_backdating',
        (s) => {
          s.subscription_items[0].quantity = 6
        },
        'in_trial',
      ],
      [
        'subscription_activated_with_backdating',
        (s) =>
          Object.assign(s, {
            status: 'active',
            current_term_start: trialEnd,
            current_term_end: trialEnd + 30 * 86_400,
          }),
        'active',
      ],
      [
        'subscription_canceled_with_backdating',
        (s) => Object.assign(s, { status: 'cancelled', cancelled_at: trialEnd + 86_400 }),
        'cancelled',
      ],
      [
        'subscription_reactivated_with_backdating',
        (s) => {
          s.status = 'active'
          delete s.cancelled_at
        },
        'active',
      ],
      [
        'subscription_created_with_backdating',
        (s) => {
          s.subscription_items[0].quantity = 4
        },
        'active',
      ],
      [
        'subscription_started',
        (s) => {
          s.subscription_items[0].quantity = 3
        },
        'active',
      ],
    ]
    for (const [type, change, status] of steps) {
      fake.change(c.subscriptionId, change)
      assert.equal(await outcome(t, fake.event(type, { subscriptionId: c.subscriptionId })), 'applied', type)
      assert.equal((await statusOf(t, c)).status, status, type)
    }
    assert.equal((await mirrorOf(t, c.id)).plan_quantity, 3)

    // Deleted at Chargebee: cancelled here (the row, its history and invoices stay), features withdrawn.
    const deletedAt = Math.floor(t.clock.now().getTime() / 1000)
    const deleted = fake.event('subscription_deleted', { subscriptionId: c.subscriptionId }, deletedAt)
    assert.equal(await outcome(t, deleted), 'applied')
    const st = await statusOf(t, c)
    assert.deepEqual([st.status, st.cancelled_at, st.features], ['cancelled', deletedAt, []])
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => e.type),
      [
        'created',
        'trial_extended',
        'changed',
        'activated',
        'cancelled',
        'reactivated',
        'created',
        'started',
        'deleted',
      ],
    )
    assert.deepEqual((await apiEvents(t, c, 'subscription.*')).slice(-2), [
      'subscription.started',
      'subscription.deleted',
    ])
    // A late copy of the subscription from before the deletion does not bring it back.
    fake.subscriptions.delete(c.subscriptionId) // Chargebee answers 404 for it from now on
    assert.equal(
      await outcome(
        t,
        fake.event('subscription_changed', { subscription: { ...deleted.content.subscription!, resource_version: 1 } }),
      ),
      'stale',
    )
    assert.equal((await statusOf(t, c)).status, 'cancelled')
  })

  it('paused and resumed at Chargebee: status follows, plan features are withheld while paused and come back on resume', async () => {
    const c = await chargebeeCompany(t, fake)
    fake.change(c.subscriptionId, (s) =>
      Object.assign(s, {
        status: 'active',
        current_term_start: s.trial_end,
        current_term_end: s.trial_end + 30 * 86_400,
      }),
    )
    assert.equal(
      await outcome(t, fake.event('subscription_activated', { subscriptionId: c.subscriptionId })),
      'applied',
    )
    // A pause scheduled shows as pause_date, the subscription still active.
    fake.change(c.subscriptionId, (s) => {
      s.pause_date = s.current_term_end
    })
    assert.equal(
      await outcome(t, fake.event('subscription_pause_scheduled', { subscriptionId: c.subscriptionId })),
      'applied',
    )
    const scheduled = (await detailsOf(t, c)).subscription
    assert.deepEqual([scheduled.status, scheduled.pause_date], ['active', scheduled.current_term_end])
    fake.change(c.subscriptionId, (s) => {
      s.status = 'paused'
    })
    assert.equal(await outcome(t, fake.event('subscription_paused', { subscriptionId: c.subscriptionId })), 'applied')
    let m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_status, m.subscribed_features, m.areas.includes('stamping')],
      ['paused', [], false],
    )
    assert.deepEqual((await statusOf(t, c)).features, [])
    fake.change(c.subscriptionId, (s) => {
      s.status = 'active'
      delete s.pause_date
    })
    assert.equal(await outcome(t, fake.event('subscription_resumed', { subscriptionId: c.subscriptionId })), 'applied')
    m = await mirrorOf(t, c.id)
    assert.deepEqual(
      [m.subscription_status, m.subscribed_features, m.areas.includes('stamping')],
      ['active', ['stamping'], true],
    )
    assert.deepEqual((await apiEvents(t, c, 'subscription.*')).slice(-2), [
      'subscription.paused',
      'subscription.resumed',
    ])
  })

  it('a Product Catalog 1.0 payload (plan_id, plan_quantity, addons) is mapped and keeps the addons', async () => {
    const c = await chargebeeCompany(t, fake)
    const addonId = `${c.plans.basic}-addon`
    fake.change(c.subscriptionId, (s) =>
      s.subscription_items.push({
        item_price_id: addonId,
        item_type: 'addon',
        quantity: 2,
        unit_price: 500,
        amount: 1000,
        object: 'subscription_item',
      }),
    )
    assert.equal(await outcome(t, fake.event('subscription_changed', { subscriptionId: c.subscriptionId })), 'applied')
    assert.deepEqual((await detailsOf(t, c)).subscription.addons, [{ id: addonId, quantity: 2 }])
    // The same subscription as a 1.0 site sends it, one unit more: the addons stay, the quantity moves.
    fake.change(c.subscriptionId, (s) => {
      s.subscription_items[0].quantity = 6
    })
    const v1 = fake.catalogV1(c.subscriptionId)
    assert.equal(v1.plan_id, c.plans.basic)
    assert.equal(await outcome(t, fake.event('subscription_changed', { subscription: v1 })), 'applied')
    const d = await detailsOf(t, c)
    assert.deepEqual([d.subscription.plan_quantity, d.subscription.addons], [6, [{ id: addonId, quantity: 2 }]])
    // A 1.0 copy without addons has none at Chargebee: they go.
    fake.change(c.subscriptionId, (s) => {
      s.subscription_items = s.subscription_items.filter((i: any) => i.item_type === 'plan')
    })
    assert.equal(
      await outcome(t, fake.event('subscription_changed', { subscription: fake.catalogV1(c.subscriptionId) })),
      'applied',
    )
    assert.deepEqual((await detailsOf(t, c)).subscription.addons, [])
  })

  it('card events: updated, expired, legacy card_*, deleted; an older copy of a payment source is stale', async () => {
    const c = await chargebeeCompany(t, fake)
    const first = fake.addCard(c.id, { brand: 'visa', last4: '4242', expiry_month: 12, expiry_year: 2099 })
    const source = { ...first, resource_version: 1000 }
    assert.equal(
      await outcome(t, fake.event('payment_source_added', { customerId: c.id, payment_source: source })),
      'applied',
    )
    const renewed = { ...source, resource_version: 3000, card: { ...source.card, expiry_year: 2100 } }
    assert.equal(
      await outcome(t, fake.event('payment_source_updated', { customerId: c.id, payment_source: renewed })),
      'applied',
    )
    // Delivered late: the copy before the update.
    assert.equal(
      await outcome(
        t,
        fake.event('payment_source_expiring', {
          customerId: c.id,
          payment_source: { ...source, resource_version: 2000 },
        }),
      ),
      'stale',
    )
    assert.equal((await detailsOf(t, c)).customer.payment_method.expiry_year, 2100)
    assert.equal(
      await outcome(
        t,
        fake.event('payment_source_expired', {
          customerId: c.id,
          payment_source: { ...renewed, resource_version: 4000 },
        }),
      ),
      'unchanged',
    )
    // The older card API: content.card.
    assert.equal(
      await outcome(
        t,
        fake.event('card_updated', {
          customerId: c.id,
          card: { card_type: 'mastercard', last4: '5454', expiry_month: 1, expiry_year: 2098, object: 'card' },
        }),
      ),
      'applied',
    )
    assert.equal((await detailsOf(t, c)).customer.payment_method.last4, '5454')
    // Deleting another card than the stored one changes nothing; deleting this one removes it.
    assert.equal(
      await outcome(
        t,
        fake.event('payment_source_deleted', {
          customerId: c.id,
          payment_source: { ...renewed, id: 'pm_other', resource_version: 5000 },
        }),
      ),
      'unchanged',
    )
    assert.equal(
      await outcome(
        t,
        fake.event('card_deleted', {
          customerId: c.id,
          card: { card_type: 'mastercard', last4: '5454', expiry_month: 1, expiry_year: 2098 },
        }),
      ),
      'applied',
    )
    assert.equal((await detailsOf(t, c)).customer.payment_method, null)
    assert.deepEqual((await eventsOf(t, c.id)).map((e) => e.type).slice(1), [
      'payment_source_added',
      'payment_source_updated',
      'payment_source_updated',
      'payment_source_deleted',
    ])
  })

  it("invoices, payments and credit notes from Chargebee are the company's ledger, in order, once each, with their events", async () => {
    const c = await chargebeeCompany(t, fake)
    fake.change(c.subscriptionId, (s) =>
      Object.assign(s, {
        status: 'active',
        current_term_start: s.trial_end,
        current_term_end: s.trial_end + 30 * 86_400,
      }),
    )
    const invoice = fake.addInvoice(c.subscriptionId, { status: 'payment_due', first_invoice: true })
    const generated = fake.event('invoice_generated', { invoice })
    assert.equal(await outcome(t, generated), 'applied')
    assert.equal(await outcome(t, generated), 'duplicate')
    let [row] = await invoicesOf(t, c)
    assert.deepEqual(
      [
        row.subscription_id,
        row.status,
        row.total,
        row.amount_paid,
        row.amount_due,
        row.credits_applied,
        row.attempt_count,
        row.currency_code,
        row.line_items[0].entity_id,
        row.taxes[0].rate,
      ],
      [c.subscriptionId, 'payment_due', invoice.total, 0, invoice.total, 0, 0, 'EUR', c.plans.basic, 22],
    )
    assert.equal(row.period_end, invoice.line_items[0].date_to)

    // The card is refused (payment_failed: one attempt, dunning under way), then a retry pays (payment_succeeded).
    const failed = fake.changeInvoice(invoice.id, (i) =>
      Object.assign(i, { dunning_status: 'in_progress', next_retry_at: i.date + 86_400 }),
    )
    assert.equal(
      await outcome(
        t,
        fake.event('payment_failed', {
          invoice: failed,
          subscriptionId: c.subscriptionId,
          transaction: { id: 'txn_1', status: 'failure', object: 'transaction' },
        }),
      ),
      'applied',
    )
    ;[row] = await invoicesOf(t, c)
    assert.deepEqual(
      [row.status, row.attempt_count, row.dunning_status, row.next_retry_at],
      ['payment_due', 1, 'in_progress', failed.next_retry_at],
    )
    const paid = fake.changeInvoice(invoice.id, (i) =>
      Object.assign(i, {
        status: 'paid',
        amount_paid: i.total,
        amount_due: 0,
        paid_at: i.date + 86_400,
        dunning_status: 'success',
      }),
    )
    const succeeded = fake.event('payment_succeeded', { invoice: paid, subscriptionId: c.subscriptionId })
    // Out of order: the older invoice_updated copy arrives after the payment.
    const older = fake.event('invoice_updated', { invoice: failed })
    assert.equal(await outcome(t, succeeded), 'applied')
    assert.equal(await outcome(t, older), 'stale')
    ;[row] = await invoicesOf(t, c)
    assert.deepEqual(
      [row.status, row.amount_paid, row.amount_due, row.paid_at, row.next_retry_at],
      ['paid', invoice.total, 0, paid.paid_at, null],
    )
    assert.deepEqual(await t.json(200, { url: `${SUB}/${c.id}/invoices/${row.id}`, token: c.token }), row)

    // A credit note, then Chargebee deletes both (deletion reported, ledger rows gone).
    const note = fake.addCreditNote(invoice.id, { total: 1200, amount_available: 1200 })
    assert.equal(await outcome(t, fake.event('credit_note_created', { credit_note: note })), 'applied')
    let notes = await creditNotesOf(t, c)
    assert.deepEqual(
      [notes.length, notes[0].reference_invoice_id, notes[0].type, notes[0].total, notes[0].amount_available],
      [1, row.id, 'refundable', 1200, 1200],
    )
    const used = fake.event('credit_note_updated', {
      credit_note: {
        ...note,
        amount_allocated: 200,
        amount_available: 1000,
        resource_version: note.resource_version + 1,
      },
    })
    assert.equal(await outcome(t, used), 'applied')
    assert.equal((await creditNotesOf(t, c))[0].amount_available, 1000)
    assert.equal((await detailsOf(t, c)).customer.refundable_credits, 1000)
    assert.equal(
      await outcome(
        t,
        fake.event('credit_note_deleted', {
          credit_note: { ...note, deleted: true, resource_version: note.resource_version + 2 },
        }),
      ),
      'applied',
    )
    assert.equal(
      await outcome(
        t,
        fake.event('invoice_deleted', {
          invoice: { ...paid, deleted: true, resource_version: paid.resource_version + 1 },
        }),
      ),
      'applied',
    )
    notes = await creditNotesOf(t, c)
    assert.deepEqual([notes.length, (await invoicesOf(t, c)).length], [0, 0])
    assert.deepEqual(await apiEvents(t, c, 'invoice.*'), [
      'invoice.created',
      'invoice.payment_failed',
      'invoice.paid',
      'invoice.deleted',
    ])
    assert.deepEqual(await apiEvents(t, c, 'credit_note.*'), [
      'credit_note.created',
      'credit_note.updated',
      'credit_note.deleted',
    ])
  })

  it('the other ledger and card events: backdated invoices and credit notes, pending invoices, refunds, initiated payments, card_added/_expired/_expiry_reminder, locally deleted sources', async () => {
    const c = await chargebeeCompany(t, fake)
    const backdated = fake.addInvoice(c.subscriptionId, {
      date: Math.floor(t.clock.now().getTime() / 1000) - 10 * 86_400,
    })
    assert.equal(await outcome(t, fake.event('invoice_generated_with_backdating', { invoice: backdated })), 'applied')
    // The same invoice copy again (stale) with the subscription as it is (unchanged): unchanged.
    assert.equal(
      await outcome(t, fake.event('payment_initiated', { invoice: backdated, subscriptionId: c.subscriptionId })),
      'unchanged',
    )
    assert.equal(await outcome(t, fake.event('payment_initiated', { invoice: backdated })), 'stale')
    // A pending invoice (still open) is not in the ledger; once closed it is.
    const pending = fake.addInvoice(c.subscriptionId, { status: 'pending' })
    assert.equal(await outcome(t, fake.event('pending_invoice_created', { invoice: pending })), 'unchanged')
    assert.equal(
      await outcome(
        t,
        fake.event('pending_invoice_updated', {
          invoice: fake.changeInvoice(pending.id, (i) => {
            i.sub_total += 0
          }),
        }),
      ),
      'unchanged',
    )
    assert.deepEqual(
      (await invoicesOf(t, c)).map((i) => i.date),
      [backdated.date],
    )
    assert.equal(
      await outcome(
        t,
        fake.event('invoice_updated', {
          invoice: fake.changeInvoice(pending.id, (i) => {
            i.status = 'paid'
          }),
        }),
      ),
      'applied',
    )
    assert.equal((await invoicesOf(t, c)).length, 2)
    // A refund: the invoice stays paid, its refundable credit note is refunded (nothing left to use).
    const refund = fake.addCreditNote(backdated.id, {
      status: 'refunded',
      total: backdated.total,
      amount_refunded: backdated.total,
      amount_available: 0,
      reason_code: 'product_unsatisfactory',
    })
    assert.equal(
      await outcome(
        t,
        fake.event('payment_refunded', {
          invoice: backdated,
          credit_note: refund,
          subscriptionId: c.subscriptionId,
          transaction: { id: 'txn_r', type: 'refund', object: 'transaction' },
        }),
      ),
      'applied',
    )
    const backdatedNote = fake.addCreditNote(backdated.id, {
      type: 'adjustment',
      total: 300,
      amount_allocated: 300,
      amount_available: 0,
      date: backdated.date,
      reason_code: 'write_off',
    })
    assert.equal(
      await outcome(t, fake.event('credit_note_created_with_backdating', { credit_note: backdatedNote })),
      'applied',
    )
    assert.deepEqual(
      (await creditNotesOf(t, c)).map((n) => [n.type, n.reason_code, n.total, n.amount_available]).sort(),
      [
        ['adjustment', 'write_off', 300, 0],
        ['refundable', 'product_unsatisfactory', backdated.total, 0],
      ].sort(),
    )

    const card = { card_type: 'amex', last4: '0005', expiry_month: 3, expiry_year: 2030, object: 'card' }
    assert.equal(await outcome(t, fake.event('card_added', { customerId: c.id, card })), 'applied')
    assert.equal(await outcome(t, fake.event('card_expiry_reminder', { customerId: c.id, card })), 'unchanged')
    assert.equal(
      await outcome(t, fake.event('card_expired', { customerId: c.id, card: { ...card, expiry_year: 2031 } })),
      'applied',
    )
    // Chargebee's resource_version is a time in ms: this copy is later than the card events' (ordered by their occurred_at).
    const source = {
      id: 'pm_local',
      customer_id: c.id,
      type: 'card',
      object: 'payment_source',
      resource_version: Date.now() + 1,
      card: { brand: 'amex', last4: '0005', expiry_month: 3, expiry_year: 2031 },
    }
    assert.equal(
      await outcome(t, fake.event('payment_source_locally_deleted', { customerId: c.id, payment_source: source })),
      'applied',
    )
    assert.equal((await detailsOf(t, c)).customer.payment_method, null)
  })

  it("400 for a malformed invoice or credit note, nothing recorded; another customer's invoice is ignored", async () => {
    const c = await chargebeeCompany(t, fake)
    const invoice = fake.addInvoice(c.subscriptionId)
    for (const [event, message] of [
      [
        fake.event('invoice_generated', { invoice: { ...invoice, status: 'lost' } }),
        /body\/content\/invoice must be a Chargebee invoice/,
      ],
      [
        fake.event('credit_note_created', { credit_note: { id: 'cn_1' } }),
        /body\/content\/credit_note must be a Chargebee credit note/,
      ],
      [fake.event('payment_succeeded', {}), /body\/content must carry the event's invoice or credit_note/],
    ] as const) {
      const res = await deliver(t, event)
      assert.deepEqual([res.statusCode, res.json().code], [400, 'validation_failed'], res.body)
      assert.match(res.json().errors, message)
    }
    const foreign = fake.event('invoice_generated', {
      invoice: { ...invoice, id: 'inv_foreign', subscription_id: 'AzZq1', customer_id: 'AzZq0' },
    })
    assert.equal(await outcome(t, foreign), 'ignored')
    assert.deepEqual(await invoicesOf(t, c), [])
  })

  it('the reconciliation corrects what no webhook reported, reports it (event, log, metric), and leaves a subscription Chargebee lacks as it is', async () => {
    const c = await chargebeeCompany(t, fake)
    const gone = await chargebeeCompany(t, fake)
    // At Chargebee, unreported: activated with 8 units, an invoice and a credit note; and one subscription deleted.
    fake.change(c.subscriptionId, (s) => {
      Object.assign(s, {
        status: 'active',
        current_term_start: s.trial_end,
        current_term_end: s.trial_end + 30 * 86_400,
      })
      s.subscription_items[0].quantity = 8
    })
    const invoice = fake.addInvoice(c.subscriptionId)
    fake.addCreditNote(invoice.id, { total: 500, amount_available: 500 })
    fake.subscriptions.delete(gone.subscriptionId)
    const lateEvent = fake.event('subscription_changed', { subscriptionId: c.subscriptionId })
    lateEvent.content.subscription!.resource_version -= 1

    const before = await t.call({ url: '/metrics', token: null })
    const drift = (text: string, kind: string) =>
      Number(text.match(new RegExp(`chargebee_reconciliation_drift_total\\{kind="${kind}"\\} (\\d+)`))?.[1] ?? 0)
    // The next run is due within CHARGEBEE_RECONCILE_INTERVAL_SECONDS (real time): move past it and run what is due.
    t.realClock.set(new Date(t.realClock.now().getTime() + 61_000).toISOString())
    await t.app.services.scheduler.runDue()

    const st = await statusOf(t, c)
    assert.equal(st.status, 'active')
    assert.equal((await mirrorOf(t, c.id)).plan_quantity, 8)
    const last = (await eventsOf(t, c.id)).at(-1)!
    assert.deepEqual([last.type, last.actor], ['reconciled', 'chargebee'])
    assert.deepEqual((last.details as any).reconciled.fields.sort(), [
      'current_term_end',
      'current_term_start',
      'plan_quantity',
      'status',
    ])
    const [event] = await t.json<any[]>(200, {
      url: `/api/v1/companies/${c.id}/events`,
      query: { type: 'subscription.reconciled' },
    })
    assert.deepEqual(
      [
        event.data.object.plan_quantity,
        event.data.previous_attributes.plan_quantity,
        event.data.previous_attributes.status,
      ],
      [8, 5, 'in_trial'],
    )
    assert.equal((await invoicesOf(t, c)).length, 1)
    assert.equal((await creditNotesOf(t, c))[0].total, 500)
    assert.deepEqual([(await statusOf(t, gone)).status], ['in_trial'])
    const logged = lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.reconciliation?.company_id === c.id || l.reconciliation?.company_id === gone.id)
    assert.deepEqual(logged.map((l) => [l.msg, l.reconciliation.drift]).sort(), [
      ['chargebee reconciliation corrected a credit note', 'credit_note'],
      ['chargebee reconciliation corrected an invoice', 'invoice'],
      ['chargebee reconciliation corrected the subscription', 'subscription'],
      ['chargebee reconciliation: Chargebee does not know this subscription; left as it is', 'missing_subscription'],
    ])
    assert.deepEqual(logged.find((l) => l.reconciliation.drift === 'subscription').reconciliation.fields.sort(), [
      'current_term_end',
      'current_term_start',
      'plan_quantity',
      'status',
    ])
    const after = (await t.call({ url: '/metrics', token: null })).body
    for (const kind of ['subscription', 'invoice', 'credit_note', 'missing_subscription']) {
      assert.ok(drift(after, kind) >= drift(before.body, kind) + 1, kind)
    }

    // A webhook delivered late, older than what the reconciliation read: stale.
    assert.equal(await outcome(t, lateEvent), 'stale')
    assert.equal((await mirrorOf(t, c.id)).plan_quantity, 8)

    // A second run finds nothing out of step: no new event.
    const count = (await eventsOf(t, c.id)).length
    t.realClock.set(new Date(t.realClock.now().getTime() + 61_000).toISOString())
    await t.app.services.scheduler.runDue()
    assert.equal((await eventsOf(t, c.id)).length, count)
  })

  it('a Chargebee read that hangs during the reconciliation holds no lock: a webhook for the same subscription applies meanwhile', async () => {
    const c = await chargebeeCompany(t, fake)
    // The reconciliation's read of this subscription gets no answer until the test releases it.
    fake.fail({ status: 500, hang: true, match: new RegExp(`^GET /subscriptions/${c.subscriptionId}$`) })
    t.realClock.set(new Date(t.realClock.now().getTime() + 61_000).toISOString())
    const pass = t.app.services.scheduler.runDue()
    while (fake.pendingHanging() === 0) await new Promise((resolve) => setTimeout(resolve, 10))
    // It used to wait for the reconciliation's transaction (the row's lock on PostgreSQL, the one
    // session on PGlite), which ended only once the read timed out.
    fake.change(c.subscriptionId, (s) => {
      s.subscription_items[0].quantity = 6
    })
    assert.equal(await outcome(t, fake.event('subscription_changed', { subscriptionId: c.subscriptionId })), 'applied')
    assert.equal(fake.pendingHanging(), 1, 'the read was still pending when the webhook applied')
    assert.equal((await mirrorOf(t, c.id)).plan_quantity, 6)
    fake.releaseHanging()
    await pass
    fake.clearFailures()
    // The failed read is retried after the backoff: Chargebee and this service agree, nothing to correct.
    t.realClock.set(new Date(t.realClock.now().getTime() + 5_000).toISOString())
    await t.app.services.scheduler.runDue()
    assert.equal((await mirrorOf(t, c.id)).plan_quantity, 6)
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => e.type),
      ['created', 'changed'],
    )
  })

  it("Chargebee failing during the reconciliation: that subscription's job fails and is retried, nothing half-applied", async () => {
    const c = await chargebeeCompany(t, fake)
    fake.change(c.subscriptionId, (s) => {
      s.subscription_items[0].quantity = 9
    })
    fake.addInvoice(c.subscriptionId)
    // Chargebee answers 500 to every invoice list of this run (after the subscription was read and corrected).
    fake.fail({ status: 500, match: /^GET \/invoices$/, times: 10_000 })
    t.realClock.set(new Date(t.realClock.now().getTime() + 61_000).toISOString())
    await t.app.services.scheduler.runDue()
    fake.clearFailures()
    const metrics = (await t.call({ url: '/metrics', token: null })).body
    assert.match(metrics, /scheduler_job_failures_total\{kind="chargebee.reconcile_subscription"\} [1-9]/)
    // The failed job rolled back whole: neither the subscription's correction nor any invoice is kept.
    assert.deepEqual([(await mirrorOf(t, c.id)).plan_quantity, (await invoicesOf(t, c)).length], [5, 0])
    assert.equal((await eventsOf(t, c.id)).length, 1)
    // Its retry (after the scheduler's backoff) applies everything.
    t.realClock.set(new Date(t.realClock.now().getTime() + 5_000).toISOString())
    await t.app.services.scheduler.runDue()
    assert.deepEqual([(await mirrorOf(t, c.id)).plan_quantity, (await invoicesOf(t, c)).length], [9, 1])
    assert.deepEqual(
      (await eventsOf(t, c.id)).map((e) => e.type),
      ['created', 'reconciled'],
    )
  })
})
