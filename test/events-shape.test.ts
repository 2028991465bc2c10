import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { TestApp } from './helpers/app.ts'
import { addToTeams, company, contract, subsidiary, team, type CompanyFixture } from './helpers/factories.ts'
import { commsUrl, createComm, getComm, messagesOf, putComm } from './communications.fixtures.ts'
import {
  at,
  billedCompany,
  cancel,
  detailsOf,
  json,
  removeCancellation,
  setCard,
  SUB,
  update,
} from './subscriptions-helpers.ts'
import { endpointSteps } from './helpers/webhook-endpoints.ts'
import type { FakeChargebee } from './helpers/fake-chargebee.ts'
import { chargebeeApp, chargebeeCompany, deliver } from './chargebee.fixtures.ts'
import { EVENT_TYPES, type EventType } from '../src/modules/events/outbox.ts'
import { onEachEngine, forEachEngine } from './helpers/engine-suites.ts'

/**
 * An event's data.object is the resource as its own GET answers it (decisions §9.6): for every
 * event type, the change is made through HTTP, then the event's object is compared with the
 * resource's GET taken right after (before, for a deletion). Every type of the catalogue needs a
 * case here, or a reason no HTTP request can cause it.
 */

interface Caused {
  companyId: string
  token?: string
  expected: unknown
}
type Case = (t: TestApp) => Promise<Caused>
/** A case on an app whose subscriptions Chargebee manages (its webhooks are HTTP requests too). */
type ChargebeeCase = { chargebee: (t: TestApp, fake: FakeChargebee) => Promise<Caused> }

const companyUrl = (id: string) => `/api/v1/companies/${id}`
const getCompany = (t: TestApp, c: CompanyFixture) => t.json(200, { url: companyUrl(c.id) })
const getContract = (t: TestApp, c: CompanyFixture, id: string) =>
  t.json(200, { url: `${companyUrl(c.id)}/contracts/${id}`, token: c.token })
const getTeam = (t: TestApp, c: CompanyFixture, id: string) =>
  t.json(200, { url: `${companyUrl(c.id)}/teams/${id}`, token: c.token })
const getHoliday = (t: TestApp, c: CompanyFixture, id: string) =>
  t.json(200, { url: `${companyUrl(c.id)}/holidays/${id}`, token: c.token })
const member = async (t: TestApp, c: CompanyFixture, teamId: string, contractId: string) =>
  (await t.json<any[]>(200, { url: `${companyUrl(c.id)}/teams/${teamId}/contracts`, token: c.token })).find(
    (m) => m.id === contractId,
  )
const subscriptionOf = async (t: TestApp, c: { id: string; token: string }) => (await detailsOf(t, c)).subscription

async function accepted(t: TestApp, request: Parameters<TestApp['call']>[0]) {
  const res = await t.call(request)
  assert.ok(
    res.statusCode >= 200 && res.statusCode < 300,
    `${request.method} ${request.url}: ${res.statusCode} ${res.body}`,
  )
  return res
}

async function holiday(t: TestApp, c: CompanyFixture) {
  const res = await accepted(t, {
    method: 'POST',
    url: `${companyUrl(c.id)}/holidays`,
    token: c.token,
    body: { name: 'Patrono', day: '2026-06-24' },
  })
  return res.headers.location!.toString().split('/').pop()!
}

async function delivered(t: TestApp) {
  const c = await company(t)
  const k = await contract(t, c.id)
  const x = await team(t, c.id, { team_leader_ids: [k] })
  const sendAt = new Date(t.clock.now().getTime() - 1000).toISOString()
  const comm = await createComm(t, c, { send_at: sendAt, destination_team_ids: [x], action_required: 'acknowledge' })
  await t.app.services.scheduler.runDue()
  const [m] = await messagesOf(t, c, comm, sendAt)
  return { c, comm, sendAt, message: m }
}

const messageNow = async (t: TestApp, d: Awaited<ReturnType<typeof delivered>>) =>
  (await messagesOf(t, d.c, d.comm, d.sendAt)).find((m) => m.id === d.message.id)

const FAILING = { number: '4000 0000 0000 0341', expiry_month: 12, expiry_year: 2099 }

/** A billed company with a card whose trial has ended: active, its first invoice paid (with a failing card: payment_due). */
async function activated(t: TestApp, card?: Record<string, unknown>) {
  const c = await billedCompany(t, { start: '2027-01-01T10:00:00.000Z' })
  await setCard(t, c.id, card)
  await at(t, '2027-01-31T10:00:00.000Z')
  return c
}

const invoiceOf = async (t: TestApp, c: CompanyFixture) => {
  const [latest] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
  return json(t, 200, { url: `${SUB}/${c.id}/invoices/${latest.id}`, token: c.token })
}

const NO_ROUTE = 'no route deletes it'

/** A Chargebee-managed company, its subscription moved at Chargebee by `change`, then reported by `type`. */
function reported(
  type: string,
  change: (s: any, fake: FakeChargebee) => void,
  options: { active?: boolean } = {},
): ChargebeeCase {
  return {
    async chargebee(t, fake) {
      const c = await chargebeeCompany(t, fake)
      if (options.active) {
        fake.change(c.subscriptionId, (s) =>
          Object.assign(s, {
            status: 'active',
            current_term_start: s.trial_end,
            current_term_end: s.trial_end + 30 * 86_400,
          }),
        )
        assert.equal(
          (await deliver(t, fake.event('subscription_activated', { subscriptionId: c.subscriptionId }))).json().outcome,
          'applied',
        )
      }
      fake.change(c.subscriptionId, (s) => change(s, fake))
      assert.equal(
        (await deliver(t, fake.event(type, { subscriptionId: c.subscriptionId }))).json().outcome,
        'applied',
        type,
      )
      return { companyId: c.id, expected: await subscriptionOf(t, c) }
    },
  }
}

async function chargebeeCard(t: TestApp, fake: FakeChargebee) {
  const c = await chargebeeCompany(t, fake)
  const source = {
    ...fake.addCard(c.id, { brand: 'visa', last4: '4242', expiry_month: 12, expiry_year: 2099 }),
    resource_version: 1000,
  }
  assert.equal(
    (await deliver(t, fake.event('payment_source_added', { customerId: c.id, payment_source: source }))).json().outcome,
    'applied',
  )
  return { c, source }
}

/** A Chargebee-managed company with one invoice copied from Chargebee (payment_due), read as GET .../invoices/{id} answers it. */
async function chargebeeInvoice(t: TestApp, fake: FakeChargebee) {
  const c = await chargebeeCompany(t, fake)
  fake.change(c.subscriptionId, (s) =>
    Object.assign(s, {
      status: 'active',
      current_term_start: s.trial_end,
      current_term_end: s.trial_end + 30 * 86_400,
    }),
  )
  const invoice = fake.addInvoice(c.subscriptionId, { status: 'payment_due', first_invoice: true })
  assert.equal((await deliver(t, fake.event('invoice_generated', { invoice }))).json().outcome, 'applied')
  const read = async () => {
    const [latest] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
    return latest ? json(t, 200, { url: `${SUB}/${c.id}/invoices/${latest.id}`, token: c.token }) : undefined
  }
  return { c, invoice, read }
}

async function chargebeeCreditNote(t: TestApp, fake: FakeChargebee) {
  const { c, invoice } = await chargebeeInvoice(t, fake)
  const note = fake.addCreditNote(invoice.id, { total: 1200, amount_available: 1200 })
  assert.equal((await deliver(t, fake.event('credit_note_created', { credit_note: note }))).json().outcome, 'applied')
  const read = async () => (await json<any[]>(t, 200, { url: `${SUB}/${c.id}/credit_notes`, token: c.token }))[0]
  return { c, note, read }
}

const CASES: Record<EventType, Case | ChargebeeCase | { notCausedOverHttp: string } | { todo: string }> = {
  'company.created': async (t) => {
    const c = await company(t)
    return { companyId: c.id, expected: await getCompany(t, c) }
  },
  'company.updated': async (t) => {
    const c = await company(t)
    await accepted(t, {
      method: 'PATCH',
      url: companyUrl(c.id),
      body: { name: 'Renamed S.p.A.', phone: '+39 02 1234567' },
    })
    return { companyId: c.id, expected: await getCompany(t, c) }
  },
  'company.disabled': async (t) => {
    const c = await company(t)
    await accepted(t, { method: 'PUT', url: companyUrl(c.id) })
    return { companyId: c.id, expected: await getCompany(t, c) }
  },
  'company.enabled': async (t) => {
    const c = await company(t)
    await accepted(t, { method: 'PUT', url: companyUrl(c.id) })
    await accepted(t, { method: 'PUT', url: `${companyUrl(c.id)}/enable` })
    return { companyId: c.id, expected: await getCompany(t, c) }
  },
  'company.deleted': { notCausedOverHttp: NO_ROUTE },
  'subsidiary.created': async (t) => {
    const c = await company(t)
    const s = await subsidiary(t, c.id)
    return {
      companyId: c.id,
      token: c.token,
      expected: await t.json(200, { url: `${companyUrl(c.id)}/subsidiaries/${s}`, token: c.token }),
    }
  },
  'subsidiary.updated': { notCausedOverHttp: 'no route changes a subsidiary' },
  'subsidiary.deleted': { notCausedOverHttp: NO_ROUTE },
  'contract.created': async (t) => {
    const c = await company(t)
    const k = await contract(t, c.id, { subsidiary_id: await subsidiary(t, c.id) })
    return { companyId: c.id, expected: await getContract(t, c, k) }
  },
  'contract.updated': async (t) => {
    const c = await company(t)
    const k = await contract(t, c.id)
    await addToTeams(t, c.id, k, [await team(t, c.id)])
    await accepted(t, {
      method: 'PUT',
      url: `${companyUrl(c.id)}/contracts/${k}`,
      token: c.token,
      body: { first_name: 'Giulia', last_name: 'Verdi', email: null, active: false },
    })
    return { companyId: c.id, expected: await getContract(t, c, k) }
  },
  'contract.deleted': { notCausedOverHttp: NO_ROUTE },
  'team.created': async (t) => {
    const c = await company(t)
    const x = await team(t, c.id, { team_leader_ids: [await contract(t, c.id), await contract(t, c.id)] })
    return { companyId: c.id, expected: await getTeam(t, c, x) }
  },
  'team.updated': async (t) => {
    const c = await company(t)
    const x = await team(t, c.id)
    await accepted(t, {
      method: 'PUT',
      url: `${companyUrl(c.id)}/teams/${x}`,
      token: c.token,
      body: {
        name: 'Night shift',
        code: 'NIGHT',
        subsidiary_id: await subsidiary(t, c.id),
        team_leader_ids: [await contract(t, c.id)],
      },
    })
    return { companyId: c.id, expected: await getTeam(t, c, x) }
  },
  'team.deleted': { notCausedOverHttp: NO_ROUTE },
  'team.member_added': async (t) => {
    const c = await company(t)
    const k = await contract(t, c.id)
    const x = await team(t, c.id)
    await addToTeams(t, c.id, k, [x, await team(t, c.id)])
    return { companyId: c.id, expected: await member(t, c, x, k) }
  },
  'team.member_updated': async (t) => {
    const c = await company(t)
    const k = await contract(t, c.id)
    const x = await team(t, c.id)
    await addToTeams(t, c.id, k, [x])
    await accepted(t, {
      method: 'PUT',
      url: `${companyUrl(c.id)}/teams/${x}/upgrade_contract`,
      token: c.token,
      body: { contract_id: k },
    })
    return { companyId: c.id, expected: await member(t, c, x, k) }
  },
  'team.member_removed': async (t) => {
    const c = await company(t)
    const k = await contract(t, c.id)
    const x = await team(t, c.id, { team_leader_ids: [k] })
    const before = await member(t, c, x, k)
    await accepted(t, {
      method: 'PUT',
      url: `${companyUrl(c.id)}/teams/${x}/remove_contract`,
      token: c.token,
      body: { contract_id: k },
    })
    return { companyId: c.id, expected: before }
  },
  'holiday.created': async (t) => {
    const c = await company(t)
    const h = await holiday(t, c)
    return { companyId: c.id, expected: await getHoliday(t, c, h) }
  },
  'holiday.updated': async (t) => {
    const c = await company(t)
    const h = await holiday(t, c)
    await accepted(t, {
      method: 'PUT',
      url: `${companyUrl(c.id)}/holidays/${h}`,
      token: c.token,
      body: { name: 'Santo Patrono', day: '2026-06-24', recurrent: 'yearly', recurrent_until: '2030-12-31' },
    })
    return { companyId: c.id, expected: await getHoliday(t, c, h) }
  },
  'holiday.deleted': async (t) => {
    const c = await company(t)
    const h = await holiday(t, c)
    const before = await getHoliday(t, c, h)
    await accepted(t, { method: 'DELETE', url: `${companyUrl(c.id)}/holidays/${h}`, token: c.token })
    return { companyId: c.id, expected: before }
  },
  'communication.created': async (t) => {
    const c = await company(t)
    const comm = await createComm(t, c, { destination_team_ids: [await team(t, c.id)] })
    return { companyId: c.id, expected: await getComm(t, c, comm) }
  },
  'communication.updated': async (t) => {
    const c = await company(t)
    const x = await team(t, c.id)
    const comm = await createComm(t, c, { destination_team_ids: [x] })
    await putComm(t, c, comm, {
      subject: 'Fire drill moved',
      message: 'Meet at the gate.',
      send_at: '2099-02-01T09:00:00.000Z',
      destination_team_ids: [x],
    })
    return { companyId: c.id, expected: await getComm(t, c, comm) }
  },
  'communication.deleted': { notCausedOverHttp: NO_ROUTE },
  'communication.occurrence_delivered': async (t) => {
    const d = await delivered(t)
    return { companyId: d.c.id, expected: await getComm(t, d.c, d.comm) }
  },
  'message.opened': async (t) => {
    const d = await delivered(t)
    await accepted(t, { method: 'PUT', url: commsUrl(d.c.id, `/messages/${d.message.id}/open`), token: d.c.token })
    return { companyId: d.c.id, expected: await messageNow(t, d) }
  },
  'message.acknowledged': async (t) => {
    const d = await delivered(t)
    await accepted(t, { method: 'PUT', url: commsUrl(d.c.id, `/messages/${d.message.id}/action`), token: d.c.token })
    return { companyId: d.c.id, expected: await messageNow(t, d) }
  },
  'subscription.created': async (t) => {
    const c = await billedCompany(t)
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.payment_source_added': async (t) => {
    const c = await billedCompany(t)
    await setCard(t, c.id)
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.activated': async (t) => {
    const c = await activated(t)
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.renewed': async (t) => {
    const c = await activated(t)
    await at(t, '2027-02-28T10:00:00.000Z')
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.changes_scheduled': async (t) => {
    const c = await activated(t)
    const body = { plan_quantity: 2, end_of_term: true }
    assert.equal((await update(t, c.id, c.subscriptionId, body, c.token)).statusCode, 200)
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.scheduled_changes_removed': async (t) => {
    const c = await activated(t)
    const body = { plan_quantity: 2, end_of_term: true }
    assert.equal((await update(t, c.id, c.subscriptionId, body, c.token)).statusCode, 200)
    await accepted(t, { method: 'PUT', url: `${SUB}/${c.id}/remove_scheduled_changes`, token: c.token })
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.pause_scheduled': async (t) => {
    const c = await activated(t)
    await accepted(t, {
      method: 'PUT',
      url: `${SUB}/${c.id}/pause`,
      token: c.token,
      body: { pause_option: 'end_of_term' },
    })
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.cancellation_scheduled': async (t) => {
    const c = await billedCompany(t)
    assert.equal((await cancel(t, c.id, c.token, '?end_of_term=true')).statusCode, 200)
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.scheduled_cancellation_removed': async (t) => {
    const c = await billedCompany(t)
    assert.equal((await cancel(t, c.id, c.token, '?end_of_term=true')).statusCode, 200)
    assert.equal((await removeCancellation(t, c.id, c.subscriptionId, c.token)).statusCode, 200)
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.cancelled': async (t) => {
    const c = await billedCompany(t)
    assert.equal((await cancel(t, c.id, c.token, '?end_of_term=false')).statusCode, 200)
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.changed': async (t) => {
    const c = await billedCompany(t, { plans: { basic: { price: 29.9 }, gold: { price: 49.9 } } })
    const res = await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.gold, plan_quantity: 7 }, c.token)
    assert.equal(res.statusCode, 200, res.body)
    return { companyId: c.id, expected: await subscriptionOf(t, c) }
  },
  'subscription.reactivated': {
    async chargebee(t, fake) {
      const caused = await reported(
        'subscription_cancelled',
        (s) => Object.assign(s, { status: 'cancelled', cancelled_at: s.current_term_start + 86_400 }),
        { active: true },
      ).chargebee(t, fake)
      const id = (caused.expected as { id: string }).id
      fake.change(id, (s) => {
        s.status = 'active'
        delete s.cancelled_at
      })
      assert.equal(
        (await deliver(t, fake.event('subscription_reactivated', { subscriptionId: id }))).json().outcome,
        'applied',
      )
      return {
        companyId: caused.companyId,
        expected: (await t.json(200, { url: `${SUB}/${caused.companyId}/details` })).subscription,
      }
    },
  },
  'subscription.paused': reported(
    'subscription_paused',
    (s) => {
      s.status = 'paused'
    },
    { active: true },
  ),
  'subscription.resumed': {
    async chargebee(t, fake) {
      const caused = await reported(
        'subscription_paused',
        (s) => {
          s.status = 'paused'
        },
        { active: true },
      ).chargebee(t, fake)
      const id = (caused.expected as { id: string }).id
      fake.change(id, (s) => {
        s.status = 'active'
      })
      assert.equal(
        (await deliver(t, fake.event('subscription_resumed', { subscriptionId: id }))).json().outcome,
        'applied',
      )
      return {
        companyId: caused.companyId,
        expected: (await t.json(200, { url: `${SUB}/${caused.companyId}/details` })).subscription,
      }
    },
  },
  'subscription.started': reported('subscription_started', (s) => {
    s.status = 'active'
    s.subscription_items[0].quantity = 3
  }),
  'subscription.trial_extended': reported('subscription_trial_extended', (s) =>
    Object.assign(s, { trial_end: s.trial_end + 7 * 86_400, current_term_end: s.trial_end + 7 * 86_400 }),
  ),
  'subscription.deleted': reported('subscription_deleted', () => {}),
  'subscription.payment_source_updated': {
    async chargebee(t, fake) {
      const { c, source } = await chargebeeCard(t, fake)
      const renewed = { ...source, resource_version: 3000, card: { ...source.card, expiry_year: 2100 } }
      assert.equal(
        (await deliver(t, fake.event('payment_source_updated', { customerId: c.id, payment_source: renewed }))).json()
          .outcome,
        'applied',
      )
      return { companyId: c.id, expected: await subscriptionOf(t, c) }
    },
  },
  'subscription.payment_source_deleted': {
    async chargebee(t, fake) {
      const { c, source } = await chargebeeCard(t, fake)
      assert.equal(
        (
          await deliver(
            t,
            fake.event('payment_source_deleted', {
              customerId: c.id,
              payment_source: { ...source, resource_version: 5000 },
            }),
          )
        ).json().outcome,
        'applied',
      )
      return { companyId: c.id, expected: await subscriptionOf(t, c) }
    },
  },
  'subscription.reconciled': {
    notCausedOverHttp: 'written by the reconciliation job with Chargebee, not by a request',
  },
  // The engine inserts the invoice, then charges it in the same transaction: no GET ever shows
  // it as created. Its object is the GET's answer with the charge's changes undone (the
  // payment_failed event's previous_attributes, in the API's fields and units too).
  'invoice.created': async (t) => {
    const c = await activated(t, FAILING)
    const [failed] = await t.json<any[]>(200, {
      url: `${companyUrl(c.id)}/events`,
      query: { type: 'invoice.payment_failed', limit: '1' },
    })
    return { companyId: c.id, expected: { ...(await invoiceOf(t, c)), ...failed.data.previous_attributes } }
  },
  'invoice.paid': async (t) => {
    const c = await activated(t)
    return { companyId: c.id, expected: await invoiceOf(t, c) }
  },
  'invoice.payment_failed': async (t) => {
    const c = await activated(t, FAILING)
    return { companyId: c.id, expected: await invoiceOf(t, c) }
  },
  'invoice.not_paid': async (t) => {
    const c = await activated(t, FAILING)
    for (const day of ['2027-02-01', '2027-02-03', '2027-02-05']) await at(t, `${day}T10:00:00.000Z`)
    return { companyId: c.id, expected: await invoiceOf(t, c) }
  },
  'invoice.payment_recorded': async (t) => {
    const c = await activated(t, FAILING)
    const { id } = await invoiceOf(t, c)
    await accepted(t, {
      method: 'POST',
      url: `${SUB}/${c.id}/invoices/${id}/record_payment`,
      body: { amount: 100, payment_method: 'cash' },
    })
    return { companyId: c.id, expected: await invoiceOf(t, c) }
  },
  'invoice.written_off': async (t) => {
    const c = await activated(t, FAILING)
    const { id } = await invoiceOf(t, c)
    await accepted(t, {
      method: 'POST',
      url: `${SUB}/${c.id}/invoices/${id}/write_off`,
      body: { comment: 'Not collectable' },
    })
    return { companyId: c.id, expected: await invoiceOf(t, c) }
  },
  'invoice.refunded': async (t) => {
    const c = await activated(t)
    const { id } = await invoiceOf(t, c)
    const body = { amount: 100, reason_code: 'other' }
    await accepted(t, { method: 'POST', url: `${SUB}/${c.id}/invoices/${id}/refund`, body })
    return { companyId: c.id, expected: await invoiceOf(t, c) }
  },
  'credit_note.refunded': async (t) => {
    const c = await activated(t)
    const { id } = await invoiceOf(t, c)
    const body = { reference_invoice_id: id, type: 'refundable', total: 500, reason_code: 'waiver' }
    const created = await accepted(t, { method: 'POST', url: `${SUB}/${c.id}/credit_notes`, body })
    const url = String(created.headers.location)
    await accepted(t, { method: 'POST', url: `${url}/refund`, body: { amount: 200 } })
    return { companyId: c.id, expected: await json(t, 200, { url, token: c.token }) }
  },
  'customer.promotional_credits_changed': async (t) => {
    const c = await billedCompany(t, { start: '2027-01-01T10:00:00.000Z' })
    const body = { amount: 500, description: 'Referral bonus', type: 'add' }
    await accepted(t, { method: 'POST', url: `${SUB}/${c.id}/promotional_credits`, body })
    return { companyId: c.id, expected: (await detailsOf(t, c)).customer }
  },
  // A charge has no GET of its own: its invoice's line shows it (entity_id the charge's id).
  'charge.created': async (t) => {
    const c = await activated(t)
    const body = { amount: 500, description: 'Setup', invoice_immediately: true }
    await accepted(t, { method: 'POST', url: `${SUB}/${c.id}/charges`, body })
    const invoice = await invoiceOf(t, c)
    const [line] = invoice.line_items
    const expected = {
      id: line.entity_id,
      subscription_id: invoice.subscription_id,
      amount: line.amount,
      description: line.description,
      currency_code: invoice.currency_code,
      invoice_id: invoice.id,
      date: invoice.date,
    }
    return { companyId: c.id, expected }
  },
  'invoice.voided': {
    async chargebee(t, fake) {
      const { c, invoice, read } = await chargebeeInvoice(t, fake)
      const voided = fake.changeInvoice(invoice.id, (i) =>
        Object.assign(i, { status: 'voided', amount_due: 0, voided_at: i.date + 3600 }),
      )
      assert.equal((await deliver(t, fake.event('invoice_updated', { invoice: voided }))).json().outcome, 'applied')
      return { companyId: c.id, expected: await read() }
    },
  },
  'invoice.updated': {
    async chargebee(t, fake) {
      const { c, invoice, read } = await chargebeeInvoice(t, fake)
      const moved = fake.changeInvoice(invoice.id, (i) => Object.assign(i, { due_date: i.date + 14 * 86_400 }))
      assert.equal((await deliver(t, fake.event('invoice_updated', { invoice: moved }))).json().outcome, 'applied')
      return { companyId: c.id, expected: await read() }
    },
  },
  'credit_note.created': async (t) => {
    const c = await activated(t)
    assert.equal((await cancel(t, c.id, c.token, '?end_of_term=false')).statusCode, 200)
    const [note] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/credit_notes`, token: c.token })
    return { companyId: c.id, expected: note }
  },
  'credit_note.updated': {
    async chargebee(t, fake) {
      const { c, note, read } = await chargebeeCreditNote(t, fake)
      const used = {
        ...note,
        amount_allocated: 200,
        amount_available: 1000,
        resource_version: note.resource_version + 1,
      }
      assert.equal(
        (await deliver(t, fake.event('credit_note_updated', { credit_note: used }))).json().outcome,
        'applied',
      )
      return { companyId: c.id, expected: await read() }
    },
  },
  'invoice.deleted': {
    async chargebee(t, fake) {
      const { c, invoice, read } = await chargebeeInvoice(t, fake)
      const before = await read()
      assert.equal(
        (
          await deliver(
            t,
            fake.event('invoice_deleted', {
              invoice: { ...invoice, deleted: true, resource_version: invoice.resource_version + 1 },
            }),
          )
        ).json().outcome,
        'applied',
      )
      assert.equal(await read(), undefined)
      return { companyId: c.id, expected: before }
    },
  },
  'credit_note.deleted': {
    async chargebee(t, fake) {
      const { c, note, read } = await chargebeeCreditNote(t, fake)
      const before = await read()
      assert.equal(
        (
          await deliver(
            t,
            fake.event('credit_note_deleted', {
              credit_note: { ...note, deleted: true, resource_version: note.resource_version + 2 },
            }),
          )
        ).json().outcome,
        'applied',
      )
      assert.equal(await read(), undefined)
      return { companyId: c.id, expected: before }
    },
  },
  ping: {
    notCausedOverHttp:
      'a ping stands for no resource: its object is the endpoint and a message (webhook-endpoints tests)',
  },
}

describe('events shape catalogue', () => {
  it('has a case, or a reason, for every event type', () => {
    const missing = EVENT_TYPES.filter((type) => !(type in CASES))
    assert.deepEqual(missing, [], `event types without a case in test/events-shape.test.ts: ${missing.join(', ')}`)
    const unknown = Object.keys(CASES).filter((type) => !(EVENT_TYPES as readonly string[]).includes(type))
    assert.deepEqual(unknown, [])
  })
})

onEachEngine(
  'event objects as their GET answers them',
  { TEST_CLOCK_ENABLED: true, WEBHOOK_ALLOW_PRIVATE_TARGETS: true },
  (t) => {
    const { receivers, listen, endpoint, deliverNow } = endpointSteps(() => t)
    after(async () => {
      await Promise.all(receivers.map((r) => r.close()))
    })

    it('a webhook delivery carries the event as the log answers it', async () => {
      const c = await company(t)
      const r = await listen('ok')
      await endpoint(c.id, { url: r.url }, c.token)
      const k = await contract(t, c.id)
      await addToTeams(t, c.id, k, [await team(t, c.id, { team_leader_ids: [k] })])
      await deliverNow()
      assert.ok(r.received.length >= 3, `${r.received.length} deliveries`)
      for (const got of r.received) {
        const sent = JSON.parse(got.body)
        assert.deepEqual(sent, await t.json(200, { url: `/api/v1/events/${sent.id}` }), sent.type)
      }
    })

    for (const type of EVENT_TYPES) {
      const spec = CASES[type]
      if (typeof spec !== 'function') {
        if ('todo' in spec) it(type, { todo: spec.todo }, () => {})
        continue
      }
      it(`${type}: data.object equals the resource's GET`, async () => {
        const caused = await spec(t)
        const [event] = await t.json<any[]>(200, {
          url: `${companyUrl(caused.companyId)}/events`,
          query: { type, limit: '1' },
        })
        assert.ok(event, `no ${type} event`)
        assert.deepEqual(event.data.object, caused.expected)
        // The log's single event and its list agree.
        assert.deepEqual(await t.json(200, { url: `/api/v1/events/${event.id}` }), event)
      })
    }
  },
)

// Its own hooks: the app comes with a fake Chargebee (chargebeeApp), closed after the app.
forEachEngine('event objects of Chargebee-managed subscriptions as their GET answers them', (engine) => {
  let t: TestApp
  let fake: FakeChargebee
  before(async () => {
    ;({ t, fake } = await chargebeeApp(engine))
  })
  after(async () => {
    await t?.close()
    await fake?.close()
  })

  for (const type of EVENT_TYPES) {
    const spec = CASES[type]
    if (typeof spec === 'function' || !('chargebee' in spec)) continue
    it(`${type}: data.object equals the resource's GET`, async () => {
      const caused = await spec.chargebee(t, fake)
      const [event] = await t.json<any[]>(200, {
        url: `${companyUrl(caused.companyId)}/events`,
        query: { type, limit: '1' },
      })
      assert.ok(event, `no ${type} event`)
      assert.deepEqual(event.data.object, caused.expected)
    })
  }
})
