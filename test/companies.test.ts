import { describe, it, before, beforeEach } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { locationId } from './helpers/app.ts'
import {
  company,
  companyClient,
  contract,
  plan,
  product,
  subsidiary,
  type CompanyFixture,
} from './helpers/factories.ts'
import { BASE_AREAS } from '../src/modules/oauth/scopes.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

onEachEngine('companies', (t) => {
  it('creates a company in trial and reads it with its subscription mirror', async () => {
    const c = await company(t, { name: 'Acme Srl', vat: 'IT01234567890' }, { features: ['stamping', 'expense'] })
    const body = await t.json(200, { url: `/api/v1/companies/${c.id}`, token: c.token })
    assert.equal(body.name, 'Acme Srl')
    assert.equal(body.subscription_status, 'in_trial')
    assert.equal(body.subscription_plan, c.planSku)
    assert.equal(body.plan_quantity, 5)
    assert.deepEqual(body.subscribed_features, ['stamping', 'expense'])
    const trialEnd = new Date(body.trial_expiration_date).getTime()
    assert.equal(Math.round((trialEnd - t.clock.now().getTime()) / 86_400_000), 30)
  })

  it('creates subsidiaries and contracts', async () => {
    const c = await company(t)
    const s = await subsidiary(t, c.id, { name: 'Torino' })
    const k = await contract(t, c.id, { subsidiary_id: s, first_name: 'Anna' })
    const got = await t.json(200, { url: `/api/v1/companies/${c.id}/contracts/${k}`, token: c.token })
    assert.deepEqual(got, {
      id: k,
      first_name: 'Anna',
      last_name: got.last_name,
      email: 'mario@example.com',
      subsidiary_id: s,
      team_ids: [],
      active: true,
    })
    const other = await company(t)
    const foreign = await subsidiary(t, other.id)
    const res = await t.call({
      method: 'POST',
      url: `/api/v1/companies/${c.id}/contracts`,
      token: c.token,
      body: { first_name: 'A', last_name: 'B', subsidiary_id: foreign },
    })
    assert.equal(res.statusCode, 400)
  })

  describe('creation (POST /api/v1/companies)', () => {
    let planSku: string
    let productSku: string
    let otherPlanSku: string
    before(async () => {
      planSku = (await plan(t, { features: ['expense'] })).sku
      otherPlanSku = (await plan(t)).sku
      productSku = (await product(t, [planSku])).sku
    })
    const valid = () => ({ name: 'Beta Spa', country: 'IT', product_sku: productSku, subscription_plan: planSku })

    it('answers 202 with the Location of the new company, which the platform reads', async () => {
      const res = await t.call({
        method: 'POST',
        url: '/api/v1/companies',
        body: {
          ...valid(),
          id: 'ignored',
          subscription_status: 'active',
          disabled: true,
          city: 'Roma',
          billing_email: 'billing@beta.example',
          location_info: { long: '12.49', lat: '41.89' },
          preferences: { stamping_enabled: 'true', theme: 'dark' },
          number_of_employees: 12,
        },
      })
      assert.equal(res.statusCode, 202, res.body)
      assert.equal(res.body, '')
      const id = locationId(res)
      assert.equal(res.headers.location, `/api/v1/companies/${id}`)
      const got = await t.json(200, { url: String(res.headers.location) })
      assert.equal(got.id, id)
      assert.equal(got.timezone, 'Europe/Rome', 'the default zone of Italy')
      assert.equal(got.subscription_status, 'in_trial')
      assert.equal(got.disabled, false)
      assert.equal(got.plan_quantity, 1)
      assert.equal(got.subscription_plan, planSku)
      // A missing field would be undefined, which `!== null` let pass: both are checked for what they are.
      assert.equal(got.subscription_customer_id, id, 'the customer is the company')
      assert.match(String(got.subscription_id), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      assert.deepEqual(got.location_info, { long: '12.49', lat: '41.89' })
      assert.deepEqual(got.preferences, { stamping_enabled: 'true', theme: 'dark' })
      assert.deepEqual(got.subscribed_features, ['expense'])
      assert.equal(got.subscription_expiration_date, got.trial_expiration_date)
      for (const field of [
        'address',
        'province',
        'zip',
        'phone',
        'vat',
        'fiscal_code',
        'pec',
        'codice_destinatario',
        'admin_user_id',
        'admin_user_email',
      ]) {
        assert.equal(got[field], null, field)
      }
    })

    it('refuses unknown products and plans, plans the product does not allow, bad zones and countries', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ product_sku: 'no-such-product' }, 'body/product_sku'],
        [{ subscription_plan: 'no-such-plan' }, 'body/subscription_plan'],
        [{ subscription_plan: otherPlanSku }, 'body/subscription_plan'],
        [{ timezone: 'Mars/Olympus' }, 'body/timezone'],
        [{ timezone: 'EST' }, 'body/timezone'],
        [{ country: 'it' }, 'body/country'],
        [{ country: 'ITA' }, 'body/country'],
        [{ country: 'XX' }, 'body/country'],
        [{ country: 'ZZ' }, 'body/country'],
        [{ name: 123 }, 'body/name'],
        [{ name: '' }, 'body/name'],
        [{ plan_quantity: 0 }, 'body/plan_quantity'],
        [{ plan_quantity: '2' }, 'body/plan_quantity'],
        [{ billing_email: 'not an email' }, 'body/billing_email'],
        [{ admin_user_id: 'u1' }, 'body/admin_user_id'],
        [{ location_info: { long: 1, lat: 2 } }, 'body/location_info/long'],
        [{ preferences: { stamping_enabled: true } }, 'body/preferences/stamping_enabled'],
        [{ owner: 'me' }, 'body/owner'],
        [{ product_sku: undefined }, 'body/product_sku'],
      ]
      const before = (
        await t.app.database.db
          .selectFrom('companies')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n
      for (const [change, field] of cases) {
        const res = await t.call({ method: 'POST', url: '/api/v1/companies', body: { ...valid(), ...change } })
        assert.equal(res.statusCode, 400, `${JSON.stringify(change)}: ${res.body}`)
        assert.equal(res.json().code, 'validation_failed')
        assert.ok(res.json().errors.includes(field), `"${res.json().errors}" names ${field}`)
      }
      const after = (
        await t.app.database.db
          .selectFrom('companies')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n
      assert.equal(Number(after), Number(before), 'nothing was stored')
    })

    it('is for platform clients only', async () => {
      const c = await company(t)
      const res = await t.call({ method: 'POST', url: '/api/v1/companies', token: c.token, body: valid() })
      assert.equal(res.statusCode, 403)
      assert.equal(res.json().code, 'forbidden')
      assert.equal(
        (await t.call({ method: 'POST', url: '/api/v1/companies', token: null, body: valid() })).statusCode,
        401,
      )
    })
  })

  describe('one company (25, 33, 34)', () => {
    let a: CompanyFixture
    let b: CompanyFixture
    before(async () => {
      a = await company(t, {}, { features: ['stamping', 'expense', 'team', 'orders'] })
      b = await company(t)
    })

    it('reads the company (34) with its own token, 404 for another company or an unknown one', async () => {
      const got = await t.json(200, { url: `/api/v1/companies/${a.id}`, token: a.token })
      assert.equal(got.id, a.id)
      assert.equal((await t.call({ url: `/api/v1/companies/${b.id}`, token: a.token })).statusCode, 404)
      const unknown = await t.call({ url: `/api/v1/companies/${randomUUID()}` })
      assert.equal(unknown.statusCode, 404)
      assert.equal(unknown.json().code, 'not_found')
      assert.equal((await t.call({ url: '/api/v1/companies/not-a-uuid' })).statusCode, 400)
    })

    it("lists the authorized scopes (25): the base set plus the plan's features", async () => {
      const scopes = await t.json(200, { url: `/api/v1/companies/${a.id}/authorized/scopes`, token: a.token })
      const apis = scopes.map((s: { api: string }) => s.api).sort()
      assert.deepEqual(apis, [...new Set([...BASE_AREAS, 'stamping', 'expense', 'orders'])].sort())
      const calendar = scopes.find((s: { api: string }) => s.api === 'calendar')
      assert.deepEqual(calendar, { name: 'Calendar', mode: ['read'], api: 'calendar' })
      assert.deepEqual(
        scopes.find((s: { api: string }) => s.api === 'expense'),
        { name: 'Expense', mode: ['read', 'write'], api: 'expense' },
      )
      const base = await t.json(200, { url: `/api/v1/companies/${b.id}/authorized/scopes`, token: b.token })
      assert.deepEqual(base.map((s: { api: string }) => s.api).sort(), [...BASE_AREAS, 'stamping'].sort())
      assert.equal(
        (await t.call({ url: `/api/v1/companies/${b.id}/authorized/scopes`, token: a.token })).statusCode,
        404,
      )
      assert.equal((await t.call({ url: `/api/v1/companies/${randomUUID()}/authorized/scopes` })).statusCode, 404)
    })

    it('disables a company (33): its tokens get 403 until the platform enables it again', async () => {
      const c = await company(t)
      const reader = await companyClient(t, c.id, ['read:company'])
      const readerToken = await t.tokenFor(reader.client_id, reader.client_secret)
      // Disabling needs write:company, and only on the company's own path.
      assert.equal(
        (await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}`, token: readerToken })).statusCode,
        403,
      )
      assert.equal((await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}`, token: a.token })).statusCode, 404)
      assert.equal((await t.call({ method: 'PUT', url: `/api/v1/companies/${randomUUID()}` })).statusCode, 404)
      await t.json(200, { url: `/api/v1/companies/${c.id}`, token: c.token })

      const res = await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}`, token: c.token })
      assert.equal(res.statusCode, 202, res.body)
      assert.equal(res.body, '')
      for (const token of [c.token, readerToken]) {
        const refused = await t.call({ url: `/api/v1/companies/${c.id}`, token })
        assert.equal(refused.statusCode, 403)
        assert.equal(refused.json().code, 'forbidden')
      }
      // A second disable changes nothing.
      await t.json(202, { method: 'PUT', url: `/api/v1/companies/${c.id}` })
      assert.equal((await t.json(200, { url: `/api/v1/companies/${c.id}` })).disabled, true)
      // Enabling is the platform's: a company token is refused, even an enabled company's.
      assert.equal(
        (await t.call({ method: 'PUT', url: `/api/v1/companies/${c.id}/enable`, token: c.token })).statusCode,
        403,
      )
      const byOther = await t.call({ method: 'PUT', url: `/api/v1/companies/${a.id}/enable`, token: a.token })
      assert.equal(byOther.statusCode, 403)
      assert.equal((await t.call({ method: 'PUT', url: `/api/v1/companies/${randomUUID()}/enable` })).statusCode, 404)
      await t.json(202, { method: 'PUT', url: `/api/v1/companies/${c.id}/enable` })
      assert.equal((await t.json(200, { url: `/api/v1/companies/${c.id}`, token: c.token })).disabled, false)
      await t.json(200, { url: `/api/v1/companies/${c.id}`, token: readerToken })
    })
  })

  describe('subsidiaries and contracts', () => {
    let a: CompanyFixture
    let b: CompanyFixture
    let bSubsidiary: string
    let bContract: string
    // Companies of their own for each test: a list read by one test holds only what it made.
    beforeEach(async () => {
      a = await company(t)
      b = await company(t)
      bSubsidiary = await subsidiary(t, b.id)
      bContract = await contract(t, b.id)
    })

    it('creates, lists and reads subsidiaries', async () => {
      const res = await t.call({
        method: 'POST',
        url: `/api/v1/companies/${a.id}/subsidiaries`,
        token: a.token,
        body: { id: 'ignored', name: 'Napoli', city: 'Napoli', country: 'IT' },
      })
      assert.equal(res.statusCode, 202, res.body)
      const id = locationId(res)
      assert.equal(res.headers.location, `/api/v1/companies/${a.id}/subsidiaries/${id}`)
      assert.deepEqual(await t.json(200, { url: String(res.headers.location), token: a.token }), {
        id,
        name: 'Napoli',
        city: 'Napoli',
        country: 'IT',
      })
      const minimal = await subsidiary(t, a.id, { city: undefined, country: undefined, name: 'Zeta' })
      const list = await t.json(200, { url: `/api/v1/companies/${a.id}/subsidiaries`, token: a.token })
      assert.deepEqual(
        list.map((s: { id: string }) => s.id),
        [id, minimal],
      )
      assert.deepEqual(list[1], { id: minimal, name: 'Zeta', city: null, country: null })
    })

    it("refuses bad subsidiaries (400) and other companies' ones (404)", async () => {
      for (const [body, field] of [
        [{ name: 'X', country: 'Italy' }, 'body/country'],
        [{ name: 'X', country: 'XX' }, 'body/country'],
        [{ name: 7 }, 'body/name'],
        [{ city: 'X' }, 'body/name'],
        [{ name: 'X', manager: 'Y' }, 'body/manager'],
      ] as const) {
        const res = await t.call({
          method: 'POST',
          url: `/api/v1/companies/${a.id}/subsidiaries`,
          token: a.token,
          body,
        })
        assert.equal(res.statusCode, 400, JSON.stringify(body))
        assert.ok(res.json().errors.includes(field), `"${res.json().errors}" names ${field}`)
      }
      assert.equal(
        (await t.call({ url: `/api/v1/companies/${a.id}/subsidiaries/${bSubsidiary}`, token: a.token })).statusCode,
        404,
      )
      assert.equal(
        (await t.call({ url: `/api/v1/companies/${b.id}/subsidiaries/${bSubsidiary}`, token: a.token })).statusCode,
        404,
      )
      assert.equal(
        (await t.call({ url: `/api/v1/companies/${a.id}/subsidiaries/${randomUUID()}`, token: a.token })).statusCode,
        404,
      )
      assert.equal((await t.call({ url: `/api/v1/companies/${randomUUID()}/subsidiaries` })).statusCode, 404)
      assert.equal(
        (await t.call({ method: 'POST', url: `/api/v1/companies/${randomUUID()}/subsidiaries`, body: { name: 'X' } }))
          .statusCode,
        404,
      )
    })

    it('creates, lists, reads and replaces contracts', async () => {
      const s = await subsidiary(t, a.id)
      const res = await t.call({
        method: 'POST',
        url: `/api/v1/companies/${a.id}/contracts`,
        token: a.token,
        body: { first_name: 'Giulia', last_name: 'Bianchi', subsidiary_id: s, team_ids: [] },
      })
      assert.equal(res.statusCode, 202, res.body)
      const id = locationId(res)
      assert.equal(res.headers.location, `/api/v1/companies/${a.id}/contracts/${id}`)
      assert.deepEqual(await t.json(200, { url: String(res.headers.location), token: a.token }), {
        id,
        first_name: 'Giulia',
        last_name: 'Bianchi',
        email: null,
        subsidiary_id: s,
        team_ids: [],
        active: true,
      })
      assert.ok(
        (await t.json(200, { url: `/api/v1/companies/${a.id}/contracts`, token: a.token })).some(
          (k: { id: string }) => k.id === id,
        ),
      )

      const put = await t.call({
        method: 'PUT',
        url: `/api/v1/companies/${a.id}/contracts/${id}`,
        token: a.token,
        body: { first_name: 'Giulia', last_name: 'Verdi', email: 'g@example.com', active: false },
      })
      assert.equal(put.statusCode, 202, put.body)
      assert.deepEqual(await t.json(200, { url: `/api/v1/companies/${a.id}/contracts/${id}`, token: a.token }), {
        id,
        first_name: 'Giulia',
        last_name: 'Verdi',
        email: 'g@example.com',
        subsidiary_id: null,
        team_ids: [],
        active: false,
      })
    })

    it('accepts back a contract as it was read, and a company as it was read plus its product', async () => {
      const k = await contract(t, a.id, { subsidiary_id: await subsidiary(t, a.id) })
      const url = `/api/v1/companies/${a.id}/contracts/${k}`
      const read = await t.json(200, { url, token: a.token })
      await t.json(202, { method: 'PUT', url, token: a.token, body: read })
      assert.deepEqual(await t.json(200, { url, token: a.token }), read)

      const readCompany = await t.json(200, { url: `/api/v1/companies/${a.id}` })
      const res = await t.call({
        method: 'POST',
        url: '/api/v1/companies',
        body: { ...readCompany, product_sku: a.productSku },
      })
      assert.equal(res.statusCode, 202, res.body)
      const copy = await t.json(200, { url: String(res.headers.location) })
      assert.notEqual(copy.id, a.id)
      assert.equal(copy.name, readCompany.name)
      assert.equal(copy.subscription_status, 'in_trial')
    })

    it("refuses bad contracts (400) and other companies' ones (404), leaving them unchanged", async () => {
      const url = `/api/v1/companies/${a.id}/contracts`
      for (const [body, field] of [
        [{ first_name: 'A' }, 'body/last_name'],
        [{ first_name: 'A', last_name: 5 }, 'body/last_name'],
        [{ first_name: 'A', last_name: 'B', email: 'nope' }, 'body/email'],
        [{ first_name: 'A', last_name: 'B', active: 'yes' }, 'body/active'],
        [{ first_name: 'A', last_name: 'B', subsidiary_id: 'x' }, 'body/subsidiary_id'],
        [{ first_name: 'A', last_name: 'B', subsidiary_id: bSubsidiary }, 'body/subsidiary_id'],
        [{ first_name: 'A', last_name: 'B', salary: 1 }, 'body/salary'],
      ] as const) {
        const res = await t.call({ method: 'POST', url, token: a.token, body })
        assert.equal(res.statusCode, 400, JSON.stringify(body))
        assert.ok(res.json().errors.includes(field), `"${res.json().errors}" names ${field}`)
      }
      const mine = await contract(t, a.id)
      const bad = await t.call({
        method: 'PUT',
        url: `${url}/${mine}`,
        token: a.token,
        body: { first_name: 'A', last_name: 'B', subsidiary_id: bSubsidiary },
      })
      assert.equal(bad.statusCode, 400)

      const before = await t.json(200, { url: `/api/v1/companies/${b.id}/contracts/${bContract}`, token: b.token })
      const change = { first_name: 'Stolen', last_name: 'Name' }
      assert.equal((await t.call({ url: `${url}/${bContract}`, token: a.token })).statusCode, 404)
      assert.equal(
        (await t.call({ method: 'PUT', url: `${url}/${bContract}`, token: a.token, body: change })).statusCode,
        404,
      )
      assert.equal(
        (
          await t.call({
            method: 'PUT',
            url: `/api/v1/companies/${b.id}/contracts/${bContract}`,
            token: a.token,
            body: change,
          })
        ).statusCode,
        404,
      )
      assert.equal((await t.call({ url: `/api/v1/companies/${b.id}/contracts`, token: a.token })).statusCode, 404)
      assert.equal(
        (await t.call({ method: 'PUT', url: `${url}/${randomUUID()}`, token: a.token, body: change })).statusCode,
        404,
      )
      assert.equal((await t.call({ url: `/api/v1/companies/${randomUUID()}/contracts` })).statusCode, 404)
      assert.deepEqual(
        await t.json(200, { url: `/api/v1/companies/${b.id}/contracts/${bContract}`, token: b.token }),
        before,
      )
    })
  })
})
