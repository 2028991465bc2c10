import { it } from 'node:test'
import assert from 'node:assert/strict'
import {
  SUB,
  at,
  billedCompany,
  call,
  cancel,
  detailsOf,
  eventsOf,
  json,
  moveTo,
  setCard,
  statusOf,
  unix,
  update,
} from './subscriptions-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'
import { ALLOWED, PageSession, assertHtml, pathOf } from './hosted-helpers.ts'

/**
 * Pause and resume on the local engine. A company in the US pays no VAT here, so an invoice's total
 * is the plan's price: basic, 1 × 30.00. Each story: a trial in January, then monthly terms from
 * the 31st (Feb 28, Mar 31, ...), in years that are not leap years.
 */
onEachEngine('pause and resume', { TEST_CLOCK_ENABLED: true, REDIRECT_ALLOWED_HOSTS: ALLOWED }, (t) => {
  const plans = { basic: { price: 30, features: ['stamping'] }, pro: { price: 50 } }
  const company = { plan_quantity: 1, country: 'US', timezone: 'America/New_York' }

  async function active(year: string) {
    const c = await billedCompany(t, { start: `${year}-01-01T00:00:00.000Z`, plans, company })
    await setCard(t, c.id)
    await at(t, `${year}-01-31T00:00:00.000Z`)
    await moveTo(t, `${year}-02-10T00:00:00.000Z`)
    return c
  }
  const invoicesOf = async (c: { id: string; token: string }) =>
    (await json(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })).map((i: any) => [
      i.date,
      i.period_start,
      i.period_end,
      i.total,
    ])
  const pause = (c: { id: string; token: string }, body: unknown, token: string | undefined = c.token) =>
    call(t, { method: 'PUT', url: `${SUB}/${c.id}/pause`, token, body })
  const resume = (c: { id: string; token: string }, body?: unknown, token: string | undefined = c.token) =>
    call(t, { method: 'PUT', url: `${SUB}/${c.id}/resume`, token, ...(body !== undefined ? { body } : {}) })

  it('paused over two renewals bills nothing; resumed, a new term starts that day, billed then', async () => {
    const c = await active('2081')
    const paused = await pause(c, { pause_option: 'immediately' })
    assert.equal(paused.statusCode, 200, paused.body)
    const p = paused.json().subscription
    assert.deepEqual(
      [p.status, p.pause_date, p.resume_date, p.next_billing_at],
      ['paused', unix('2081-02-10T00:00:00Z'), null, null],
    )
    assert.deepEqual((await statusOf(t, c)).features, [], 'the plan features are withdrawn')

    // Feb 28 and Mar 31 pass: no renewal, no invoice beyond the trial's end (30.00).
    await at(t, '2081-02-28T00:00:00.000Z')
    await at(t, '2081-03-31T00:00:00.000Z')
    assert.deepEqual(await invoicesOf(c), [
      [unix('2081-01-31T00:00:00Z'), unix('2081-01-31T00:00:00Z'), unix('2081-02-28T00:00:00Z'), 3000],
    ])
    assert.equal((await statusOf(t, c)).status, 'paused')

    await moveTo(t, '2081-04-15T00:00:00.000Z')
    const resumed = await resume(c, { resume_option: 'immediately' })
    assert.equal(resumed.statusCode, 200, resumed.body)
    const r = resumed.json().subscription
    // A new term Apr 15 → May 15, billed in full that day: 30.00.
    assert.deepEqual(
      [r.status, r.current_term_start, r.current_term_end, r.pause_date, r.next_billing_at],
      ['active', unix('2081-04-15T00:00:00Z'), unix('2081-05-15T00:00:00Z'), null, unix('2081-05-15T00:00:00Z')],
    )
    assert.deepEqual((await invoicesOf(c))[0], [
      unix('2081-04-15T00:00:00Z'),
      unix('2081-04-15T00:00:00Z'),
      unix('2081-05-15T00:00:00Z'),
      3000,
    ])
    assert.deepEqual((await statusOf(t, c)).features, ['stamping'])
    // And the term renews on its new day: May 15, 30.00.
    await at(t, '2081-05-15T00:00:00.000Z')
    assert.equal((await invoicesOf(c)).length, 3)
    assert.deepEqual(
      (await eventsOf(t, c.id)).slice(-3).map((e) => [e.type, e.to, e.at]),
      [
        ['paused', 'paused', '2081-02-10T00:00:00.000Z'],
        ['resumed', 'active', '2081-04-15T00:00:00.000Z'],
        ['renewed', 'active', '2081-05-15T00:00:00.000Z'],
      ],
    )
    const events = await json(t, 200, {
      url: `/api/v1/companies/${c.id}/events`,
      query: { type: 'subscription.resumed' },
      token: c.token,
    })
    assert.equal(events[0].data.object.status, 'active')
  })

  it("paused at the term's end with a resume date: the term ends paused, and resumes on that date", async () => {
    const c = await active('2082')
    await update(t, c.id, c.subscriptionId, { subscription_plan: c.plans.pro, end_of_term: true }, c.token)
    const res = await pause(c, { pause_option: 'end_of_term', resume_date: unix('2082-04-10T00:00:00Z') })
    assert.equal(res.statusCode, 200, res.body)
    const s = res.json().subscription
    // Still active until Feb 28; the pause replaces the change scheduled for then.
    assert.deepEqual(
      [s.status, s.pause_date, s.resume_date, s.next_billing_at, s.has_scheduled_changes],
      ['active', unix('2082-02-28T00:00:00Z'), unix('2082-04-10T00:00:00Z'), unix('2082-04-10T00:00:00Z'), false],
    )
    assert.equal((await pause(c, { pause_option: 'immediately' })).statusCode, 409, 'a pause is already scheduled')

    await at(t, '2082-02-28T00:00:00.000Z')
    assert.equal((await statusOf(t, c)).status, 'paused')
    assert.equal((await invoicesOf(c)).length, 1, 'no renewal invoice')
    // Apr 10: resumed by itself, a term Apr 10 → May 10 billed that day on basic, 30.00.
    await at(t, '2082-04-10T00:00:00.000Z')
    const d = (await detailsOf(t, c)).subscription
    assert.deepEqual(
      [d.status, d.plan_id, d.current_term_end, d.resume_date],
      ['active', c.plans.basic, unix('2082-05-10T00:00:00Z'), null],
    )
    assert.deepEqual((await invoicesOf(c))[0], [
      unix('2082-04-10T00:00:00Z'),
      unix('2082-04-10T00:00:00Z'),
      unix('2082-05-10T00:00:00Z'),
      3000,
    ])
    assert.deepEqual(
      (await eventsOf(t, c.id)).slice(-3).map((e) => [e.type, e.actor === 'scheduler']),
      [
        ['pause_scheduled', false],
        ['paused', true],
        ['resumed', true],
      ],
    )
  })

  it('the hosted portal shows the change scheduled, then the pause and its resume date', async () => {
    const c = await active('2084')
    await update(t, c.id, c.subscriptionId, { plan_quantity: 2, end_of_term: true }, c.token)
    const portal = new PageSession(t, await pathOf(t, 'portal', c.id, c.token))
    let page = await portal.get()
    assertHtml(page, 200)
    assert.match(page.body, new RegExp(`<dd id="scheduled-change">${c.plans.basic} × 2</dd>`))
    // The next charge is the renewal under the new choice: 2 × 30.00 on Feb 28.
    assert.match(page.body, /<dd id="next-charge">[^<]*60[.,]00/)

    await pause(c, { pause_option: 'immediately', resume_date: unix('2084-05-01T00:00:00Z') })
    page = await portal.get()
    assert.match(page.body, /<dd id="status">Paused<\/dd>/)
    assert.match(page.body, /<dd id="pause-date">/)
    assert.match(page.body, /<dd id="resume-date">/)
    assert.doesNotMatch(page.body, /id="scheduled-change"/)
  })

  it('refuses what cannot be paused or resumed', async () => {
    const c = await billedCompany(t, { start: '2083-01-01T00:00:00.000Z', plans, company })
    const other = await billedCompany(t, { plans, company })
    // In trial: 409; an active one cannot be resumed: 409.
    assert.equal((await pause(c, { pause_option: 'immediately' })).statusCode, 409)
    await setCard(t, c.id)
    await at(t, '2083-01-31T00:00:00.000Z')
    assert.equal((await resume(c)).statusCode, 409)
    // A resume date not after the pause's start: 400; unknown options and fields: 400.
    const now = unix('2083-01-31T00:00:00Z')
    assert.equal((await pause(c, { pause_option: 'immediately', resume_date: now })).statusCode, 400)
    assert.equal(
      (await pause(c, { pause_option: 'end_of_term', resume_date: unix('2083-02-28T00:00:00Z') })).statusCode,
      400,
    )
    assert.equal((await pause(c, { pause_option: 'later' })).statusCode, 400)
    assert.equal((await pause(c, {})).statusCode, 400)
    assert.equal((await resume(c, { resume_option: 'specific_date' })).statusCode, 400)
    // Tokens: none 401; another company's 404; the platform's may.
    assert.equal((await pause(c, { pause_option: 'immediately' }, '')).statusCode, 401)
    assert.equal((await pause(c, { pause_option: 'immediately' }, other.token)).statusCode, 404)
    assert.equal((await resume(c, undefined, other.token)).statusCode, 404)
    assert.equal((await statusOf(t, c)).status, 'active')
    // Paused, a change and a second pause are refused: 409.
    const byPlatform = { method: 'PUT', url: `${SUB}/${c.id}/pause`, body: { pause_option: 'immediately' } } as const
    assert.equal((await call(t, byPlatform)).statusCode, 200)
    assert.equal((await pause(c, { pause_option: 'immediately' })).statusCode, 409)
    assert.equal((await update(t, c.id, c.subscriptionId, { plan_quantity: 2 }, c.token)).statusCode, 409)
    // Resumed, then set to cancel: a pause is refused until the cancellation is removed (409).
    assert.equal((await resume(c)).statusCode, 200)
    assert.equal((await cancel(t, c.id, c.token)).statusCode, 200)
    assert.equal((await pause(c, { pause_option: 'end_of_term' })).statusCode, 409)
    // Cancelled: 409 for both.
    assert.equal((await cancel(t, c.id, c.token, '?end_of_term=false')).statusCode, 200)
    assert.equal((await pause(c, { pause_option: 'immediately' })).statusCode, 409)
    assert.equal((await resume(c)).statusCode, 409)
  })
})
