import { it } from 'node:test'
import assert from 'node:assert/strict'
import { company, companyClient, type CompanyFixture } from './helpers/factories.ts'
import { PLATFORM_ONLY, WRITABLE_FIELDS } from '../src/modules/companies/company-patch.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/** A value for each writable field, different from what the factory's company has. */
const SAMPLES: Record<string, unknown> = {
  name: 'Acme Italia S.r.l.',
  address: 'Via Roma 1',
  city: 'Milano',
  province: 'MI',
  zip: '20121',
  country: 'SM',
  phone: '+39 02 1234567',
  vat: 'IT01234567890',
  vat_number: 'SM12345',
  vat_number_status: 'valid',
  fiscal_code: 'RSSMRA80A01H501U',
  pec: 'acme@pec.example.it',
  codice_destinatario: 'M5UXCR1',
  tax_code: 'RSSMRA85T10A562S',
  sdi_code: 'M5UXCR1',
  billing_email: 'billing@acme.example',
  admin_user_id: '5b0f5a4e-8a4e-4d1e-9f53-0c8c0e6b1a11',
  admin_user_email: 'admin@acme.example',
  timezone: 'Europe/San_Marino',
  number_of_employees: 42,
  location_info: { long: '9.19', lat: '45.46' },
  preferences: { stamping_enabled: 'true' },
}

onEachEngine('PATCH and GET /api/v1/companies', (t) => {
  const url = (c: CompanyFixture) => `/api/v1/companies/${c.id}`
  const patch = (
    c: CompanyFixture,
    body: unknown,
    token: string | null = c.token,
    contentType = 'application/merge-patch+json',
  ) =>
    t.call({
      method: 'PATCH',
      url: url(c),
      token,
      body: JSON.stringify(body),
      headers: { 'content-type': contentType },
    })
  const changeLog = async (c: CompanyFixture) =>
    (
      await t.app.database.db
        .selectFrom('companies')
        .select('change_log')
        .where('id', '=', c.id)
        .executeTakeFirstOrThrow()
    ).change_log

  it('changes each writable field, one patch at a time, and the next read shows it', async () => {
    // A field added to the creation schema becomes writable here: it needs a sample above.
    assert.deepEqual(
      WRITABLE_FIELDS.filter((f) => !(f in SAMPLES)),
      [],
      'every writable field has a sample value in this test',
    )
    const c = await company(t)
    for (const field of WRITABLE_FIELDS) {
      // The fields that decide the company's tax: a platform client's (companies-tax-identity.test.ts).
      const res = await patch(c, { [field]: SAMPLES[field] }, PLATFORM_ONLY.includes(field) ? t.platformToken : c.token)
      assert.equal(res.statusCode, 202, `${field}: ${res.body}`)
      assert.equal(res.body, '')
      const got = await t.json(200, { url: url(c), token: c.token })
      assert.deepEqual(got[field], SAMPLES[field], field)
    }
    const log = await changeLog(c)
    assert.equal(log.length, WRITABLE_FIELDS.length, 'one change_log entry per patch')
    assert.equal(log[0]!.action, 'updated')
    assert.equal(log[0]!.by, c.client.client_id)
    assert.deepEqual(Object.keys(log[0]!.changes), ['name'])
    // Each patch is a company.updated event; the internal change_log is in none of them.
    const events = await t.json<any[]>(200, {
      url: `/api/v1/companies/${c.id}/events`,
      token: t.platformToken,
      query: { type: 'company.updated', limit: '500' },
    })
    assert.ok(events.length >= WRITABLE_FIELDS.length, `${events.length} company.updated events`)
    for (const e of events)
      assert.ok(
        !('change_log' in e.data.object) && !('change_log' in (e.data.previous_attributes ?? {})),
        JSON.stringify(e.data).slice(0, 300),
      )
  })

  it('merges (RFC 7396): left out keeps, null clears, objects merge member by member; application/json too', async () => {
    const c = await company(t, {
      city: 'Roma',
      phone: '06 1',
      preferences: { stamping_enabled: 'false', theme: 'dark' },
      location_info: { long: '12.49', lat: '41.89' },
    })
    assert.equal(
      (
        await patch(
          c,
          { phone: null, preferences: { theme: null, lang: 'it' }, location_info: { lat: '41.90' } },
          c.token,
          'application/json',
        )
      ).statusCode,
      202,
    )
    const got = await t.json(200, { url: url(c), token: c.token })
    assert.equal(got.city, 'Roma')
    assert.equal(got.phone, null)
    assert.deepEqual(got.preferences, { stamping_enabled: 'false', lang: 'it' })
    assert.deepEqual(got.location_info, { long: '12.49', lat: '41.90' })
    const [entry] = (await changeLog(c)).slice(-1)
    assert.deepEqual(entry!.changes.phone, ['06 1', null])
    assert.deepEqual(entry!.changes.location_info, [
      { long: '12.49', lat: '41.89' },
      { long: '12.49', lat: '41.90' },
    ])
    // location_info: null clears it; then half of one is a 400 (both members are required).
    assert.equal((await patch(c, { location_info: null })).statusCode, 202)
    const half = await patch(c, { location_info: { lat: '1' } })
    assert.equal(half.statusCode, 400)
    assert.match(half.json().errors, /body\/location_info\/long/)
    // A patch that changes nothing: 202 and no entry.
    const before = (await changeLog(c)).length
    assert.equal((await patch(c, { city: 'Roma' })).statusCode, 202)
    assert.equal((await patch(c, {})).statusCode, 202)
    assert.equal((await changeLog(c)).length, before)
  })

  it('refuses disabled and the subscription fields, naming the field and the route that changes it', async () => {
    const c = await company(t)
    const disabled = await patch(c, { disabled: true })
    assert.equal(disabled.statusCode, 400)
    assert.match(disabled.json().errors, /body\/disabled .*PUT \/api\/v1\/companies\/\{company_id\}/)
    const both = await patch(c, { subscription_status: 'active', plan_quantity: 9, name: 'Not applied' })
    assert.equal(both.statusCode, 400)
    assert.deepEqual(
      both.json().details.map((d: { field: string }) => d.field),
      ['body/subscription_status', 'body/plan_quantity'],
    )
    assert.match(both.json().details[1].message, /update\/\{subscription_id\}/)
    for (const field of ['id', 'subscription_plan', 'subscribed_features', 'trial_expiration_date']) {
      const res = await patch(c, { [field]: 'x' })
      assert.equal(res.statusCode, 400, field)
      assert.match(res.json().errors, new RegExp(`body/${field} is not writable`))
    }
    const got = await t.json(200, { url: url(c), token: c.token })
    assert.notEqual(got.name, 'Not applied')
    assert.equal(got.disabled, false)
  })

  it('checks values as creation does: every problem at once in details, null on a required field, unknown fields', async () => {
    const c = await company(t)
    const bad = await patch(c, { billing_email: 'not-an-email', number_of_employees: -1, name: null, colour: 'red' })
    assert.equal(bad.statusCode, 400)
    const fields = bad
      .json()
      .details.map((d: { field: string }) => d.field)
      .sort()
    assert.deepEqual(fields, ['body/billing_email', 'body/colour', 'body/name', 'body/number_of_employees'])
    for (const [body, field] of [
      [{ country: 'ZZ' }, 'country'],
      [{ country: 'it' }, 'country'],
      [{ timezone: 'Mars/Olympus' }, 'timezone'],
      [{ name: '   ' }, 'name'],
      [{ timezone: null }, 'timezone'],
      [{ preferences: null }, 'preferences'],
    ] as const) {
      const res = await patch(c, body)
      assert.equal(res.statusCode, 400, JSON.stringify(body))
      assert.match(res.json().errors, new RegExp(`body/${field}`))
    }
    const notJson = await t.call({
      method: 'PATCH',
      url: url(c),
      token: c.token,
      body: '[1]',
      headers: { 'content-type': 'application/merge-patch+json' },
    })
    assert.equal(notJson.statusCode, 400)
  })

  it("a company token patches its own company only (another's: 404); read:company alone is 403; platform may", async () => {
    const a = await company(t)
    const b = await company(t)
    assert.equal((await patch(b, { city: 'Bari' }, a.token)).statusCode, 404)
    const reader = await companyClient(t, a.id, ['read:company'])
    const readToken = await t.tokenFor(reader.client_id, reader.client_secret)
    assert.equal((await patch(a, { city: 'Bari' }, readToken)).statusCode, 403)
    assert.equal((await patch(a, { city: 'Bari' }, null)).statusCode, 401)
    assert.equal((await patch(a, { city: 'Bari' }, t.platformToken)).statusCode, 202)
    assert.equal((await t.json(200, { url: url(a), token: a.token })).city, 'Bari')
    const missing = await t.call({
      method: 'PATCH',
      url: '/api/v1/companies/00000000-0000-4000-8000-000000000000',
      body: { city: 'X' },
    })
    assert.equal(missing.statusCode, 404)
  })

  it('the cached read of the company shows the patch at once', async () => {
    const c = await company(t, { city: 'Roma' })
    assert.equal((await t.json(200, { url: url(c), token: c.token })).city, 'Roma')
    assert.equal((await t.json(200, { url: url(c), token: c.token })).city, 'Roma')
    assert.equal((await patch(c, { city: 'Napoli' })).statusCode, 202)
    assert.equal((await t.json(200, { url: url(c), token: c.token })).city, 'Napoli')
  })

  it('GET /api/v1/companies: platform only, filters q, disabled, subscription_status, pages by name', async () => {
    const tag = `Zq${Date.now().toString(36)}`
    const x = await company(t, { name: `${tag} Alpha` })
    const y = await company(t, { name: `${tag.toLowerCase()} beta` })
    const z = await company(t, { name: `${tag} Gamma` })
    assert.equal((await t.call({ method: 'PUT', url: url(z), token: z.token })).statusCode, 202)
    assert.equal((await t.call({ url: '/api/v1/companies', token: x.token })).statusCode, 403)
    const names = (list: { name: string }[]) => list.map((c) => c.name)
    const found = await t.json(200, { url: '/api/v1/companies', query: { q: tag.toUpperCase() } })
    assert.equal(names(found).length, 3)
    assert.deepEqual(new Set(found.map((c: { id: string }) => c.id)), new Set([x.id, y.id, z.id]))
    const enabled = await t.json(200, { url: '/api/v1/companies', query: { q: tag, disabled: 'false' } })
    assert.deepEqual(new Set(enabled.map((c: { id: string }) => c.id)), new Set([x.id, y.id]))
    const off = await t.json(200, { url: '/api/v1/companies', query: { q: tag, disabled: 'true' } })
    assert.deepEqual(
      off.map((c: { id: string }) => c.id),
      [z.id],
    )
    assert.equal(off[0].disabled, true)
    const trial = await t.json(200, { url: '/api/v1/companies', query: { q: tag, subscription_status: 'in_trial' } })
    assert.equal(trial.length, 3)
    assert.deepEqual(
      await t.json(200, { url: '/api/v1/companies', query: { q: tag, subscription_status: 'active' } }),
      [],
    )
    // A literal % or _ is text to find, not a wildcard.
    assert.deepEqual(await t.json(200, { url: '/api/v1/companies', query: { q: `${tag}%` } }), [])
    const badStatus = await t.call({ url: '/api/v1/companies', query: { subscription_status: 'trialing' } })
    assert.equal(badStatus.statusCode, 400)
    assert.match(badStatus.json().errors, /querystring\/subscription_status must be one of .*"in_trial"/)
    // Paged: the same companies, two then one.
    const first = await t.call({ url: '/api/v1/companies', query: { q: tag, limit: '2' } })
    assert.equal(first.statusCode, 200)
    assert.deepEqual(first.json(), found.slice(0, 2))
    const next = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link))
    assert.ok(next, String(first.headers.link))
    const second = await t.call({ url: next[1]! })
    assert.deepEqual(second.json(), found.slice(2))
    assert.equal(second.headers.link, undefined)
  })
})
