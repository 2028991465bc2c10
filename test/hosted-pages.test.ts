import { it, beforeEach } from 'node:test'
import assert from 'node:assert/strict'
import { billedCompany, detailsOf, setCard, statusOf, type BillingFixture } from './subscriptions-helpers.ts'
import { ALLOWED, BACK, PageSession, assertHtml, pathOf, stateOf } from './hosted-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const CARD = '4242 4242 4242 4242'

onEachEngine('hosted pages (/hosted/)', { REDIRECT_ALLOWED_HOSTS: ALLOWED }, (t) => {
  let c: BillingFixture
  // A company of its own for each test (on Basic × 5, in trial, no card): none reads what another changed.
  beforeEach(async () => {
    c = await billedCompany(t, { plans: { basic: { price: 29.9, name: 'Basic' }, pro: { price: 49.9, name: 'Pro' } } })
  })

  it('manager page: lists the allowed plans, shows the estimate, confirming changes the plan once (created → requested → succeeded)', async () => {
    const page = new PageSession(t, await pathOf(t, 'manager', c.id, c.token))
    assert.equal(await stateOf(t, page.path), 'created')
    const view = await page.get()
    assertHtml(view, 200)
    assert.match(view.body, /<html lang="en">/)
    assert.match(view.body, /Basic — €29\.90 per month/)
    assert.match(view.body, /Pro — €49\.90 per month/)
    assert.match(view.body, /<label for="plan-0">/)
    assert.match(
      String(view.headers['set-cookie']),
      /^hosted_csrf=[^;]+; Path=\/hosted\/manager\/[^;]+; HttpOnly; SameSite=Strict$/,
    )
    assert.match(String(view.headers['content-security-policy']), /form-action 'self' https:\/\/app\.example\.com/)
    assert.equal(await stateOf(t, page.path), 'requested')

    const estimate = await page.post('estimate', { plan: c.plans.pro!, quantity: '5' })
    assertHtml(estimate, 200)
    // In trial: the first full term of Pro, 5 × 49.90 + 22 % VAT.
    assert.match(estimate.body, /€304\.39/)
    assert.equal((await statusOf(t, c)).plan, c.plans.basic, 'nothing changes before confirming')

    const confirm = await page.post('confirm', { plan: c.plans.pro!, quantity: '5' })
    assert.equal(confirm.statusCode, 303, confirm.body)
    const location = new URL(String(confirm.headers.location))
    assert.equal(`${location.origin}${location.pathname}`, BACK)
    assert.equal(location.searchParams.get('state'), 'succeeded')
    assert.match(location.searchParams.get('id') ?? '', /^[0-9a-f-]{36}$/)
    assert.equal((await statusOf(t, c)).plan, c.plans.pro)
    assert.equal(await stateOf(t, page.path), 'succeeded')

    // A double submit and a later visit are refused with a page, not applied again.
    assertHtml(await page.post('confirm', { plan: c.plans.basic!, quantity: '7' }), 409)
    const used = await page.get()
    assertHtml(used, 409)
    assert.match(used.body, /already been used/)
    assert.equal((await statusOf(t, c)).plan, c.plans.pro)
  })

  it('manager page: a plan outside the product is refused with an HTML 400, and the page can still be used', async () => {
    const page = new PageSession(t, await pathOf(t, 'manager', c.id, c.token))
    await page.get()
    const res = await page.post('confirm', { plan: 'no-such-plan', quantity: '1' })
    assertHtml(res, 400)
    assert.equal(await stateOf(t, page.path), 'requested')
    assertHtml(await page.post('estimate', { plan: c.plans.basic!, quantity: '0' }), 400)
    const leave = await page.post('leave')
    assert.equal(leave.statusCode, 303)
    assert.equal(new URL(String(leave.headers.location)).searchParams.get('state'), 'cancelled')
    assert.equal(await stateOf(t, page.path), 'cancelled')
    assertHtml(await page.post('confirm', { plan: c.plans.basic!, quantity: '1' }), 409)
  })

  it('finishes a page once when the same form is submitted twice at the same time', async () => {
    const page = new PageSession(t, await pathOf(t, 'manager', c.id, c.token))
    await page.get()
    const [first, second] = await Promise.all([
      page.post('confirm', { plan: c.plans.basic!, quantity: '4' }),
      page.post('confirm', { plan: c.plans.pro!, quantity: '6' }),
    ])
    assert.deepEqual([first.statusCode, second.statusCode].sort(), [303, 409])
    const won = first.statusCode === 303 ? { plan: c.plans.basic, quantity: 4 } : { plan: c.plans.pro, quantity: 6 }
    const details = await detailsOf(t, c)
    assert.deepEqual({ plan: details.subscription.plan_id, quantity: details.subscription.plan_quantity }, won)
  })

  it('escapes what it shows from the catalogue', async () => {
    const odd = await billedCompany(t, {
      plans: { odd: { price: 10, name: '<img src=x onerror=alert(1)> "Odd" & co' } },
    })
    const view = await new PageSession(t, await pathOf(t, 'manager', odd.id, odd.token)).get()
    assertHtml(view, 200)
    assert.ok(!view.body.includes('<img'), 'no markup from data')
    assert.match(view.body, /&lt;img src=x onerror=alert\(1\)&gt; &quot;Odd&quot; &amp; co/)
  })

  it('speaks Italian by Accept-Language', async () => {
    const page = new PageSession(t, await pathOf(t, 'manager', c.id, c.token), 'fr;q=1, it-IT;q=0.9, en;q=0.5')
    const view = await page.get()
    assertHtml(view, 200)
    assert.match(view.body, /<html lang="it">/)
    assert.match(view.body, /Scegli il tuo piano/)
    assert.match(view.body, /49,90\s€ al mese/)
    assert.equal(view.headers['content-language'], 'it')
  })

  it('refuses a form without its token, with a wrong cookie, or from another origin (403), and changes nothing', async () => {
    const page = new PageSession(t, await pathOf(t, 'manager', c.id, c.token))
    await page.get()
    const fields = { plan: c.plans.pro!, quantity: '9' }
    const refused = [
      await page.post('confirm', fields, {}, { csrf: null }),
      await page.post('confirm', fields, {}, { cookie: null }),
      await page.post('confirm', fields, {}, { csrf: 'x'.repeat(43) }),
      await page.post('confirm', fields, {}, { cookie: 'hosted_csrf=forged' }),
      await page.post('confirm', fields, { origin: 'https://evil.example' }),
      await page.post('confirm', fields, { 'sec-fetch-site': 'cross-site' }),
      await page.post('confirm', fields, { origin: 'null' }),
    ]
    for (const res of refused) {
      assertHtml(res, 403)
      assert.match(res.body, /could not be verified/)
    }
    assert.equal(await stateOf(t, page.path), 'requested')
    assert.equal((await statusOf(t, c)).plan, c.plans.basic)
    // What a browser sends under Referrer-Policy: no-referrer: Origin null, but same-origin fetch metadata.
    const ok = await page.post('confirm', fields, { origin: 'null', 'sec-fetch-site': 'same-origin' })
    assert.equal(ok.statusCode, 303, ok.body)
    const own = await pathOf(t, 'manager', c.id, c.token)
    const again = new PageSession(t, own)
    await again.get()
    assert.equal((await again.post('leave', {}, { origin: 'http://localhost:80' })).statusCode, 303)
  })

  it('refuses an unknown token (404), a token of another kind (404) and an expired page (410)', async () => {
    assertHtml(await new PageSession(t, `/hosted/manager/${'A'.repeat(43)}`).get(), 404)
    assertHtml(await new PageSession(t, '/hosted/manager/short').get(), 404)
    const manager = await pathOf(t, 'manager', c.id, c.token)
    assertHtml(await new PageSession(t, manager.replace('/manager/', '/portal/')).get(), 404)
    const page = new PageSession(t, manager)
    await page.get()
    const portal = new PageSession(t, await pathOf(t, 'portal', c.id, c.token))
    await portal.get()
    t.clock.advance(3600 * 1000)
    try {
      const expired = await page.get()
      assertHtml(expired, 410)
      assert.match(expired.body, /expired/)
      assertHtml(await page.post('leave'), 410)
      assertHtml(await portal.post('logout'), 410)
      assert.equal(await stateOf(t, page.path), 'requested')
    } finally {
      t.clock.advance(-3600 * 1000)
    }
  })

  it('payment page: a wrong number is refused without echoing it; a valid card keeps brand, last 4 and expiry only', async () => {
    const page = new PageSession(t, await pathOf(t, 'payment', c.id, c.token))
    assertHtml(await page.get(), 200)
    assert.equal(await stateOf(t, page.path), 'requested')
    const wrong = await page.post('submit', { number: '4242 4242 4242 4241', expiry_month: '12', expiry_year: '2099' })
    assertHtml(wrong, 400)
    assert.match(wrong.body, /role="alert"/)
    assert.match(wrong.body, /id="number"[^>]*aria-invalid="true"/)
    assert.ok(!wrong.body.includes('4241'), 'the refused number is not written back')
    assertHtml(await page.post('submit', { number: CARD, expiry_month: '1', expiry_year: '2001' }), 400)
    const ok = await page.post('submit', { number: CARD, expiry_month: '12', expiry_year: '2099' })
    assert.equal(ok.statusCode, 303, ok.body)
    assert.equal(new URL(String(ok.headers.location)).searchParams.get('state'), 'succeeded')
    assert.deepEqual((await detailsOf(t, c)).customer.payment_method, {
      type: 'card',
      brand: 'visa',
      last4: '4242',
      expiry_month: 12,
      expiry_year: 2099,
    })
    assertHtml(await page.post('submit', { number: CARD, expiry_month: '12', expiry_year: '2099' }), 409)
    const stored =
      JSON.stringify(
        await t.app.database.db.selectFrom('subscriptions').selectAll().where('company_id', '=', c.id).execute(),
      ) +
      JSON.stringify(
        await t.app.database.db.selectFrom('subscription_events').selectAll().where('company_id', '=', c.id).execute(),
      )
    assert.ok(!stored.includes('4242424242424242') && !stored.includes('4242 4242'), 'the number is stored nowhere')
  })

  it('portal: logs in on the first visit, cancels at the end of the term, undoes it, logs out (once)', async () => {
    // The company moves to Pro × 5 and gives a card, through the manager page and the platform's route.
    const manager = new PageSession(t, await pathOf(t, 'manager', c.id, c.token))
    await manager.get()
    assert.equal((await manager.post('confirm', { plan: c.plans.pro!, quantity: '5' })).statusCode, 303)
    await setCard(t, c.id)
    const page = new PageSession(t, await pathOf(t, 'portal', c.id, c.token))
    const view = await page.get()
    assertHtml(view, 200)
    assert.equal(await stateOf(t, page.path), 'logged_in')
    assert.match(view.body, /visa ending in 4242, expires 12\/2099/)
    // In trial: the first full term of Pro, 5 × 49.90 + 22 % VAT, as the manager page estimated it.
    assert.match(view.body, /id="next-charge">€304\.39 on /)

    const cancel = await page.post('cancel')
    assert.equal(cancel.statusCode, 303)
    assert.equal(cancel.headers.location, `${page.path}?done=cancelled`)
    assert.notEqual((await statusOf(t, c)).scheduled_cancellation_at, null)
    const after = await page.get('?done=cancelled')
    assert.match(after.body, /role="status"[^>]*>Your subscription will end on /)
    assert.match(after.body, /id="next-charge">None scheduled/)
    assert.match(after.body, /Undo the cancellation/)
    assertHtml(await page.post('cancel'), 409)

    assert.equal((await page.post('undo')).statusCode, 303)
    assert.equal((await statusOf(t, c)).scheduled_cancellation_at, null)
    assertHtml(await page.post('undo'), 409)

    const logout = await page.post('logout')
    assert.equal(logout.statusCode, 303)
    assert.equal(logout.headers.location, BACK)
    assert.equal(await stateOf(t, page.path), 'logged_out')
    assertHtml(await page.get(), 409)
    assertHtml(await page.post('cancel'), 409)
    assert.equal((await statusOf(t, c)).scheduled_cancellation_at, null)
  })

  it('serves its stylesheet and answers a malformed form as an HTML page', async () => {
    const css = await t.app.inject({ url: '/hosted/assets/hosted.css' })
    assert.equal(css.statusCode, 200)
    assert.match(String(css.headers['content-type']), /^text\/css/)
    const page = new PageSession(t, await pathOf(t, 'portal', c.id, c.token))
    await page.get()
    const big = await t.app.inject({
      method: 'POST',
      url: `${page.path}/cancel`,
      payload: 'a='.padEnd(20_000, 'x'),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    assertHtml(big, 413)
    // A JSON body (fields that are not strings) is not a form: 415, never a 500.
    const json = await t.app.inject({
      method: 'POST',
      url: `${page.path}/cancel`,
      payload: { csrf: 1, number: 4242 },
      headers: { cookie: page.cookie },
    })
    assertHtml(json, 415)
  })
})
