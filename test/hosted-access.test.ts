import { it } from 'node:test'
import assert from 'node:assert/strict'
import { companyClient } from './helpers/factories.ts'
import { billedCompany, detailsOf, type BillingFixture } from './subscriptions-helpers.ts'
import { ALLOWED, PageSession, assertHtml, open, pathOf, stateOf } from './hosted-helpers.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * Who may still use a hosted page or portal session: not the customer of a disabled company
 * (403 until the platform enables it again), not the holder of a link made by a client that
 * has since been revoked (410: the link is withdrawn for good). Each test makes its own company.
 */
onEachEngine('hosted pages of disabled companies and revoked clients', { REDIRECT_ALLOWED_HOSTS: ALLOWED }, (t) => {
  const disable = (c: BillingFixture) => t.json(202, { method: 'PUT', url: `/api/v1/companies/${c.id}` })
  const enable = (c: BillingFixture) => t.json(202, { method: 'PUT', url: `/api/v1/companies/${c.id}/enable` })

  /** The three pages of a company, each opened once in a browser (so it holds its form token and cookie). */
  async function pagesOf(c: BillingFixture, token: string) {
    const pages = {
      manager: new PageSession(t, await pathOf(t, 'manager', c.id, token)),
      payment: new PageSession(t, await pathOf(t, 'payment', c.id, token)),
      portal: new PageSession(t, await pathOf(t, 'portal', c.id, token)),
    }
    for (const page of Object.values(pages)) assertHtml(await page.get(), 200)
    return pages
  }

  it('refuses every page and form of a disabled company (403, nothing changes), and serves them again once it is enabled', async () => {
    const c = await billedCompany(t)
    const pages = await pagesOf(c, c.token)
    await disable(c)
    for (const page of Object.values(pages)) {
      const res = await page.get()
      assertHtml(res, 403)
      assert.match(res.body, /not available/)
    }
    assertHtml(await pages.portal.post('cancel'), 403)
    assertHtml(await pages.portal.post('logout'), 403)
    assertHtml(await pages.manager.post('confirm', { plan: c.plans.basic!, quantity: '7' }), 403)
    assertHtml(await pages.manager.post('leave'), 403)
    assertHtml(
      await pages.payment.post('submit', { number: '4242 4242 4242 4242', expiry_month: '12', expiry_year: '2099' }),
      403,
    )
    assert.equal(await stateOf(t, pages.portal.path), 'logged_in')
    assert.equal(await stateOf(t, pages.manager.path), 'requested')
    assert.equal(await stateOf(t, pages.payment.path), 'requested')

    await enable(c)
    const { subscription, customer } = await detailsOf(t, c)
    assert.equal(subscription.scheduled_cancellation_at, null, 'the portal cancelled nothing')
    assert.equal(subscription.plan_quantity, 5, 'the manager page changed nothing')
    assert.equal(customer.payment_method, null, 'the payment page kept no card')
    assertHtml(await pages.portal.get(), 200)
    assert.equal((await pages.portal.post('cancel')).statusCode, 303)
  })

  it("opens no new page for a disabled company: 403 to its own token and to the platform's", async () => {
    const c = await billedCompany(t)
    await disable(c)
    for (const kind of ['manager', 'portal', 'payment'] as const) {
      const own = await open(t, kind, c.id, c.token)
      assert.equal(own.statusCode, 403, own.body)
      const platform = await open(t, kind, c.id, t.platformToken)
      assert.equal(platform.statusCode, 403, platform.body)
      assert.deepEqual(platform.json(), { errors: 'The company is disabled', code: 'forbidden' })
    }
    const count = await t.app.database.db
      .selectFrom('hosted_pages')
      .select((e) => e.fn.countAll<string>().as('n'))
      .where('company_id', '=', c.id)
      .executeTakeFirstOrThrow()
    assert.equal(Number(count.n), 0)
  })

  it('withdraws the pages a client made once it is revoked (410), and only those', async () => {
    const c = await billedCompany(t)
    const maker = await companyClient(t, c.id, ['read:company', 'write:company'])
    const pages = await pagesOf(c, await t.tokenFor(maker.client_id, maker.client_secret))
    const kept = new PageSession(t, await pathOf(t, 'portal', c.id, c.token))
    const byPlatform = new PageSession(t, await pathOf(t, 'payment', c.id, t.platformToken))
    await t.json(204, { method: 'DELETE', url: `/api/v1/companies/${c.id}/clients/${maker.client_id}` })

    for (const page of Object.values(pages)) {
      const res = await page.get()
      assertHtml(res, 410)
      assert.match(res.body, /withdrawn/)
    }
    assertHtml(await pages.portal.post('cancel'), 410)
    assertHtml(await pages.manager.post('confirm', { plan: c.plans.basic!, quantity: '7' }), 410)
    assertHtml(
      await pages.payment.post('submit', { number: '4242 4242 4242 4242', expiry_month: '12', expiry_year: '2099' }),
      410,
    )
    const { subscription, customer } = await detailsOf(t, c)
    assert.equal(subscription.scheduled_cancellation_at, null)
    assert.equal(subscription.plan_quantity, 5)
    assert.equal(customer.payment_method, null)
    // Pages made by other clients live on.
    assertHtml(await kept.get(), 200)
    assertHtml(await byPlatform.get(), 200)
  })
})

onEachEngine("the token endpoint for a disabled company's clients", (t) => {
  const token = (client: { client_id: string; client_secret: string }, secret = client.client_secret) =>
    t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      payload: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: secret },
    })

  it('answers 400 unauthorized_client while the company is disabled, and tokens again once it is enabled', async () => {
    const c = await billedCompany(t)
    assert.equal((await token(c.client)).statusCode, 200)
    await t.json(202, { method: 'PUT', url: `/api/v1/companies/${c.id}` })
    const refused = await token(c.client)
    assert.equal(refused.statusCode, 400, refused.body)
    assert.deepEqual(refused.json(), {
      error: 'unauthorized_client',
      error_description: "The client's company is disabled",
      errors: "The client's company is disabled",
      code: 'forbidden',
    })
    assert.equal(refused.headers['cache-control'], 'no-store')
    // Wrong credentials stay what they are: nothing is said about the company to who holds no secret.
    const wrong = await token(c.client, 'not-the-secret-0123456789')
    assert.equal(wrong.statusCode, 401)
    assert.equal(wrong.json().error, 'invalid_client')
    await t.json(202, { method: 'PUT', url: `/api/v1/companies/${c.id}/enable` })
    assert.equal((await token(c.client)).statusCode, 200)
  })

  it("documents unauthorized_client among the token endpoint's errors", async () => {
    const doc = await t.json(200, { url: '/openapi.json', token: null })
    const error = JSON.stringify(
      doc.components.schemas[
        doc.paths['/oauth/token'].post.responses['400'].content['application/json'].schema.$ref.split('/').pop()
      ],
    )
    assert.match(error, /unauthorized_client/)
  })
})
