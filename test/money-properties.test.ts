import { it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { TestApp } from './helpers/app.ts'
import {
  SUB,
  billedCompany,
  call,
  cancel,
  json,
  moveTo,
  startAt,
  type BillingFixture,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * The money operations' property, through HTTP with the test clock: for any sequence of offline
 * payments, voids, write-offs, refunds, credit notes and their refunds, promotional credits, one-off
 * charges, card changes and clock moves,
 *   - every invoice adds up: amount_paid + credits_applied + amount_adjusted + write_off_amount +
 *     amount_due = total, so once settled (paid) the first four are the total; a voided one owes
 *     nothing and was settled by no more than its total;
 *   - promotional credits are a discount inside `total` (its `discounts` entry, off the total after
 *     tax), so they count in none of those four fields; what the customer holds is what was added,
 *     less what was deducted, less what invoices not voided took;
 *   - refunds never exceed payments (amount_refunded ≤ amount_paid, 0 while nothing refunds);
 *   - no credit balance goes below zero (promotional, refundable, excess payments, credit notes), and
 *     the credit notes on one invoice never sum beyond its total.
 * Each operation is a COMMANDS entry (its arbitrary and how it runs, with the statuses it may answer).
 * A refund or a credit note may ask for more than is left: the refusal is part of the story.
 *
 * Deterministic: a fixed seed (MONEY_PROPERTY_SEED, MONEY_PROPERTY_RUNS for more runs); a failure
 * reports the story, which replays it.
 */
const SEED = Number(process.env.MONEY_PROPERTY_SEED ?? 90_002)
const RUNS = Number(process.env.MONEY_PROPERTY_RUNS ?? 4)
const TRIAL_DAYS = 14
const DAY = 86_400_000
const CARDS = {
  good: { number: '4242 4242 4242 4242', expiry_month: 12, expiry_year: 2099 },
  fails: { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 },
}

/** What a story has to act on, and what the property follows along. */
interface World {
  t: TestApp
  c: BillingFixture
  now: number
  /** Promotional credits added less deducted through the route. */
  promotionalGranted: number
  log: string[]
}

const invoicesOf = (w: World) =>
  json<any[]>(w.t, 200, { url: `${SUB}/${w.c.id}/invoices`, query: { limit: '500' }, token: w.c.token })
const detailsOf = (w: World) => json(w.t, 200, { url: `${SUB}/${w.c.id}/details`, token: w.c.token })
const notesOf = (w: World) =>
  json<any[]>(w.t, 200, { url: `${SUB}/${w.c.id}/credit_notes`, query: { limit: '500' }, token: w.c.token })
const post = (w: World, path: string, body: unknown) =>
  call(w.t, { method: 'POST', url: `${SUB}/${w.c.id}/${path}`, body })

/** An unpaid invoice chosen by `pick`, or none. */
async function unpaidInvoice(w: World, pick: number) {
  const unpaid = (await invoicesOf(w)).filter((i) => i.status === 'payment_due' || i.status === 'not_paid')
  return unpaid.length ? unpaid[pick % unpaid.length] : undefined
}

function expectOneOf(res: { statusCode: number; body: string }, allowed: number[], what: string) {
  assert.ok(allowed.includes(res.statusCode), `${what}: ${res.statusCode} ${res.body}`)
}

function expectStatus(res: { statusCode: number; body: string }, expected: number, what: string) {
  assert.equal(res.statusCode, expected, `${what}: ${res.body}`)
}

interface Command<C> {
  weight: number
  arbitrary: fc.Arbitrary<C>
  run(w: World, command: C): Promise<void>
}
const command = <C>(c: Command<C>) => c

const COMMANDS = {
  wait: command({
    weight: 4,
    arbitrary: fc.integer({ min: 1000, max: 40 * DAY }),
    async run(w, ms) {
      w.now += ms
      await moveTo(w.t, new Date(w.now).toISOString())
    },
  }),
  card: command({
    weight: 1,
    arbitrary: fc.constantFrom<keyof typeof CARDS>('good', 'fails'),
    async run(w, card) {
      const res = await call(w.t, { method: 'PUT', url: `${SUB}/${w.c.id}/payment_source`, body: CARDS[card] })
      assert.ok(res.statusCode === 200 || res.statusCode === 409, `card: ${res.body}`)
    },
  }),
  record_payment: command({
    weight: 3,
    arbitrary: fc.record({ pick: fc.nat(), share: fc.constantFrom(0.25, 0.5, 1, 1.5) }),
    async run(w, { pick, share }) {
      const invoice = await unpaidInvoice(w, pick)
      if (!invoice) return
      const amount = Math.max(1, Math.round(invoice.amount_due * share))
      expectStatus(
        await post(w, `invoices/${invoice.id}/record_payment`, { amount, payment_method: 'cash' }),
        200,
        'pay',
      )
    },
  }),
  void: command({
    weight: 2,
    arbitrary: fc.nat(),
    async run(w, pick) {
      const invoice = await unpaidInvoice(w, pick)
      if (!invoice) return
      const untouched = invoice.amount_paid + invoice.write_off_amount + invoice.amount_adjusted === 0
      expectStatus(await post(w, `invoices/${invoice.id}/void`, {}), untouched ? 200 : 409, 'void')
    },
  }),
  write_off: command({
    weight: 1,
    arbitrary: fc.nat(),
    async run(w, pick) {
      const invoice = await unpaidInvoice(w, pick)
      if (invoice) expectStatus(await post(w, `invoices/${invoice.id}/write_off`, {}), 200, 'write off')
    },
  }),
  refund: command({
    weight: 2,
    arbitrary: fc.record({ pick: fc.nat(), share: fc.constantFrom(0.3, 1, 2) }),
    async run(w, { pick, share }) {
      const paid = (await invoicesOf(w)).filter((i) => i.status === 'paid' && i.amount_paid > i.amount_refunded)
      if (!paid.length) return
      const invoice = paid[pick % paid.length]
      const amount = Math.max(1, Math.round((invoice.amount_paid - invoice.amount_refunded) * share))
      const res = await post(w, `invoices/${invoice.id}/refund`, { amount, reason_code: 'other' })
      // More than is refundable is a 400; all of it already credited by notes is a 409.
      expectOneOf(res, share > 1 ? [400] : [200, 400, 409], 'refund')
    },
  }),
  credit_note: command({
    weight: 2,
    arbitrary: fc.record({ pick: fc.nat(), share: fc.constantFrom(0.2, 0.6, 1.2) }),
    async run(w, { pick, share }) {
      const open = (await invoicesOf(w)).filter((i) => i.status !== 'voided')
      if (!open.length) return
      const invoice = open[pick % open.length]
      const type = invoice.status === 'paid' ? 'refundable' : 'adjustment'
      const total = Math.max(1, Math.round(invoice.total * share))
      const body = { reference_invoice_id: invoice.id, type, total, reason_code: 'waiver' }
      const res = await post(w, 'credit_notes', body)
      expectOneOf(res, share > 1 ? [400] : [202, 400, 409], `${type} credit note`)
    },
  }),
  credit_note_refund: command({
    weight: 1,
    arbitrary: fc.record({ pick: fc.nat(), share: fc.constantFrom(0.5, 1, 1.5) }),
    async run(w, { pick, share }) {
      const held = (await notesOf(w)).filter((n) => n.type === 'refundable' && n.amount_available > 0)
      if (!held.length) return
      const note = held[pick % held.length]
      const amount = Math.max(1, Math.round(note.amount_available * share))
      const res = await post(w, `credit_notes/${note.id}/refund`, { amount })
      expectStatus(res, amount > note.amount_available ? 400 : 200, 'credit note refund')
    },
  }),
  promotional_credits: command({
    weight: 3,
    arbitrary: fc.record({
      type: fc.constantFrom<'add' | 'deduct'>('add', 'add', 'deduct'),
      amount: fc.integer({ min: 1, max: 20_000 }),
    }),
    async run(w, { type, amount }) {
      const held = (await detailsOf(w)).customer.promotional_credits
      const refused = type === 'deduct' && amount > held
      const res = await post(w, 'promotional_credits', { type, amount, description: 'Property' })
      expectStatus(res, refused ? 400 : 200, 'promotional credits')
      if (!refused) w.promotionalGranted += type === 'add' ? amount : -amount
    },
  }),
  charge: command({
    weight: 3,
    arbitrary: fc.record({ amount: fc.integer({ min: 1, max: 50_000 }), now: fc.boolean() }),
    async run(w, { amount, now }) {
      const { status } = await json(w.t, 200, { url: `${SUB}/${w.c.id}/status`, token: w.c.token })
      const res = await post(w, 'charges', { amount, description: 'Property charge', invoice_immediately: now })
      expectStatus(res, status === 'cancelled' ? 409 : 200, `charge on ${status}`)
    },
  }),
}
type CommandName = keyof typeof COMMANDS
type Step = {
  [K in CommandName]: { kind: K; args: (typeof COMMANDS)[K] extends Command<infer C> ? C : never }
}[CommandName]

const step: fc.Arbitrary<Step> = fc.oneof(
  ...(Object.keys(COMMANDS) as CommandName[]).map((kind) => ({
    weight: COMMANDS[kind].weight,
    arbitrary: (COMMANDS[kind].arbitrary as fc.Arbitrary<unknown>).map((args) => ({ kind, args }) as Step),
  })),
)
const story = fc.record({
  start: fc.integer({ min: Date.UTC(2050, 0, 1), max: Date.UTC(2054, 11, 31) }),
  card: fc.constantFrom<keyof typeof CARDS>('good', 'good', 'fails'),
  steps: fc.array(step, { minLength: 3, maxLength: 9 }),
})
type Story = typeof story extends fc.Arbitrary<infer S> ? S : never

const promotionalTaken = (invoice: any) =>
  invoice.discounts
    .filter((d: any) => d.entity_type === 'promotional_credits')
    .reduce((sum: number, d: any) => sum + d.amount, 0)

async function checkProperty(w: World) {
  const invoices = await invoicesOf(w)
  for (const i of invoices) {
    const settled = i.amount_paid + i.credits_applied + i.amount_adjusted + i.write_off_amount
    if (i.status === 'voided') {
      assert.equal(i.amount_due, 0, `voided ${i.id} owes nothing`)
      assert.ok(settled <= i.total, `voided ${i.id}: settled ${settled} ≤ total ${i.total}`)
    } else {
      assert.equal(settled + i.amount_due, i.total, `invoice ${i.id} adds up`)
      if (i.status === 'paid') assert.equal(settled, i.total, `paid ${i.id}: settled = total`)
    }
    assert.ok((i.amount_refunded ?? 0) <= i.amount_paid, `invoice ${i.id}: refunds ≤ payments`)
    assert.ok(i.total >= 0 && promotionalTaken(i) >= 0, `invoice ${i.id}: no negative figure`)
  }
  const customer = (await detailsOf(w)).customer
  for (const balance of ['promotional_credits', 'refundable_credits', 'excess_payments'])
    assert.ok(customer[balance] >= 0, `${balance} = ${customer[balance]} ≥ 0`)
  const kept = invoices.filter((i) => i.status !== 'voided').reduce((sum, i) => sum + promotionalTaken(i), 0)
  assert.equal(customer.promotional_credits, w.promotionalGranted - kept, 'promotional credits: granted − taken')
  const notes = await notesOf(w)
  for (const n of notes) assert.ok(n.amount_available >= 0, `credit note ${n.id}: available ≥ 0`)
  for (const i of invoices) {
    const credited = notes.filter((n) => n.reference_invoice_id === i.id).reduce((sum, n) => sum + n.total, 0)
    assert.ok(credited <= i.total, `invoice ${i.id}: credit notes ${credited} ≤ total ${i.total}`)
  }
}

onEachEngine('money operations, any story,', { TEST_CLOCK_ENABLED: true, TRIAL_DAYS }, (t) => {
  async function play(s: Story) {
    await startAt(t, new Date(s.start).toISOString())
    const c = await billedCompany(t, { plans: { basic: { price: 100 } }, company: { plan_quantity: 1 } })
    const w: World = { t, c, now: s.start, promotionalGranted: 0, log: [`start ${new Date(s.start).toISOString()}`] }
    try {
      await COMMANDS.card.run(w, s.card)
      // Past the trial: the first invoice exists for the operations to act on.
      await COMMANDS.wait.run(w, TRIAL_DAYS * DAY + 1000)
      for (const st of s.steps) {
        w.log.push(JSON.stringify(st))
        await (COMMANDS[st.kind] as Command<unknown>).run(w, st.args)
        await checkProperty(w)
      }
    } catch (error) {
      throw new Error(`${(error as Error).message}\nstory:\n  ${w.log.join('\n  ')}`, { cause: error })
    } finally {
      // Quiet this company's future jobs: later stories start at other dates on the same service.
      const left = await call(t, { url: `${SUB}/${c.id}/status`, token: c.token })
      if (left.statusCode === 200 && left.json().status !== 'cancelled')
        await cancel(t, c.id, c.token, '?end_of_term=false')
    }
  }

  it('every invoice adds up, refunds ≤ payments, no balance below zero, for any story', async () => {
    await fc.assert(fc.asyncProperty(story, play), { seed: SEED, numRuns: RUNS, endOnFailure: true })
  })
})
