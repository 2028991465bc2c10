import { it } from 'node:test'
import assert from 'node:assert/strict'
import { company } from './helpers/factories.ts'
import { SUB, at, billedCompany, call, estimate, json, setCard } from './subscriptions-helpers.ts'
import { readMigrations } from '../src/db/migrate.ts'
import { sql } from 'kysely'
import { onEachEngine } from './helpers/engine-suites.ts'

/**
 * A company's tax identity (decisions §9.1; docs/billing.md, "Taxes and currencies"): its
 * `country`, `vat_number` and `vat_number_status` are set by a platform client only, the VAT
 * number is checked against its country's pattern, and reverse charge applies only while the
 * platform has marked the number `valid`.
 */
onEachEngine("a company's tax identity", { TEST_CLOCK_ENABLED: true }, (t) => {
  const url = (c: { id: string }) => `/api/v1/companies/${c.id}`
  const patch = (c: { id: string }, body: unknown, token?: string) =>
    call(t, { method: 'PATCH', url: url(c), body, token })
  const read = (c: { id: string }) => json(t, 200, { url: url(c) })
  const german = (fields: Record<string, unknown> = {}) =>
    company(t, { country: 'DE', timezone: 'Europe/Berlin', vat_number: 'DE123456789', ...fields })

  it('refuses a company token any change of country, vat_number or vat_number_status: 403 forbidden naming the field, nothing applied', async () => {
    const c = await german()
    for (const [field, value] of [
      ['country', 'AT'],
      ['vat_number', 'DE999999999'],
      ['vat_number', null],
      ['vat_number_status', 'valid'],
    ] as const) {
      const res = await patch(c, { name: 'Not applied', [field]: value }, c.token)
      assert.equal(res.statusCode, 403, `${field}: ${res.body}`)
      assert.equal(res.json().code, 'forbidden')
      assert.match(res.json().errors, new RegExp(`body/${field}\\b`), field)
      assert.deepEqual(
        res.json().details.map((d: { field: string }) => d.field),
        [`body/${field}`],
      )
    }
    // Every refused field at once.
    const all = await patch(c, { country: 'AT', vat_number: 'ATU12345678', vat_number_status: 'valid' }, c.token)
    assert.equal(all.statusCode, 403)
    assert.deepEqual(
      all.json().details.map((d: { field: string }) => d.field),
      ['body/country', 'body/vat_number', 'body/vat_number_status'],
    )
    const got = await read(c)
    assert.deepEqual(
      [got.name !== 'Not applied', got.country, got.vat_number, got.vat_number_status],
      [true, 'DE', 'DE123456789', 'not_validated'],
    )
  })

  it('accepts from a company token the values it already has (a company read and sent back), however the number is spelled', async () => {
    const c = await german()
    const res = await patch(
      c,
      { name: 'Sent back', country: 'DE', vat_number: 'de 123.456-789', vat_number_status: 'not_validated' },
      c.token,
    )
    assert.equal(res.statusCode, 202, res.body)
    const got = await read(c)
    assert.deepEqual(
      [got.name, got.country, got.vat_number, got.vat_number_status],
      ['Sent back', 'DE', 'DE123456789', 'not_validated'],
    )
    // The whole company as read, sent back by its own token.
    const {
      id: _i,
      disabled: _d,
      subscription_id: _s,
      subscription_customer_id: _c,
      subscription_status: _st,
      subscription_expiration_date: _e,
      trial_expiration_date: _t,
      subscribed_features: _f,
      subscription_plan: _p,
      plan_quantity: _q,
      ...writable
    } = got
    assert.equal((await patch(c, writable, c.token)).statusCode, 202)
    // A company without a VAT number sends null back.
    const plain = await company(t)
    assert.equal((await patch(plain, { vat_number: null, country: 'IT' }, plain.token)).statusCode, 202)
  })

  it('lets a platform client set them: a new number starts not_validated, the platform marks it valid or invalid, a changed number starts over', async () => {
    const c = await company(t)
    assert.deepEqual([(await read(c)).vat_number, (await read(c)).vat_number_status], [null, null])
    assert.equal(
      (await patch(c, { country: 'DE', timezone: 'Europe/Berlin', vat_number: 'DE 123 456 789' })).statusCode,
      202,
    )
    let got = await read(c)
    assert.deepEqual([got.country, got.vat_number, got.vat_number_status], ['DE', 'DE123456789', 'not_validated'])
    for (const status of ['valid', 'invalid', 'not_validated', 'valid']) {
      assert.equal((await patch(c, { vat_number_status: status })).statusCode, 202)
      assert.equal((await read(c)).vat_number_status, status)
    }
    // The same number again keeps its status; another number starts over.
    assert.equal((await patch(c, { vat_number: 'DE123456789' })).statusCode, 202)
    assert.equal((await read(c)).vat_number_status, 'valid')
    assert.equal((await patch(c, { vat_number: 'DE987654321' })).statusCode, 202)
    got = await read(c)
    assert.deepEqual([got.vat_number, got.vat_number_status], ['DE987654321', 'not_validated'])
    // A number and its status in one patch: the platform checked it before sending both.
    assert.equal((await patch(c, { vat_number: 'DE111111111', vat_number_status: 'valid' })).statusCode, 202)
    assert.equal((await read(c)).vat_number_status, 'valid')
    // No number, no status.
    assert.equal((await patch(c, { vat_number: null })).statusCode, 202)
    got = await read(c)
    assert.deepEqual([got.vat_number, got.vat_number_status], [null, null])
    const orphan = await patch(c, { vat_number_status: 'valid' })
    assert.equal(orphan.statusCode, 400)
    assert.match(orphan.json().errors, /^body\/vat_number_status/)
    const nulled = await patch(c, { vat_number: 'DE123456789', vat_number_status: null })
    assert.equal(nulled.statusCode, 400)
    assert.match(nulled.json().errors, /body\/vat_number_status/)
    const unknown = await patch(c, { vat_number: 'DE123456789', vat_number_status: 'checked' })
    assert.equal(unknown.statusCode, 400)
    assert.match(unknown.json().errors, /body\/vat_number_status.*valid.*invalid.*not_validated/)
    // The change is in the change_log and in the company.updated event.
    const events = await json<any[]>(t, 200, {
      url: `/api/v1/companies/${c.id}/events`,
      query: { type: 'company.updated' },
    })
    assert.ok(
      events.some(
        (e) =>
          e.data.previous_attributes?.vat_number_status === 'not_validated' &&
          e.data.object.vat_number_status === 'valid',
      ),
      JSON.stringify(events.map((e) => e.data.previous_attributes)),
    )
  })

  it("checks the number against its country's pattern (no checksum): 400 naming vat_number otherwise, at creation and in a PATCH", async () => {
    const good: [string, string, string][] = [
      ['DE', 'DE123456789', 'DE123456789'],
      ['AT', 'ATU12345678', 'ATU12345678'],
      ['BE', 'BE0123456789', 'BE0123456789'],
      ['FR', 'FR AB 123456789', 'FRAB123456789'],
      ['FR', 'FR12345678901', 'FR12345678901'],
      ['NL', 'NL123456789B01', 'NL123456789B01'],
      ['ES', 'ESX1234567X', 'ESX1234567X'],
      ['IE', 'IE1234567WA', 'IE1234567WA'],
      ['IE', 'IE1S23456A', 'IE1S23456A'],
      ['IT', 'IT01234567890', 'IT01234567890'],
      ['GR', 'EL094259216', 'EL094259216'],
      ['CY', 'CY12345678X', 'CY12345678X'],
      ['RO', 'RO12', 'RO12'],
      ['SE', 'SE123456789001', 'SE123456789001'],
      ['CH', 'CHE-123.456.789 MWST', 'CHE123456789MWST'],
      ['NO', 'NO123456789MVA', 'NO123456789MVA'],
      ['GB', 'GB123456789', 'GB123456789'],
      ['GB', 'XI123456789', 'XI123456789'],
      ['GB', 'GBGD001', 'GBGD001'],
      ['SM', 'SM12345', 'SM12345'],
      ['US', 'US123456789', 'US123456789'],
    ]
    const bad: [string, unknown][] = [
      ['DE', 'DE12345678'],
      ['DE', 'DE1234567890'],
      ['DE', 'DEX23456789'],
      ['DE', 'ATU12345678'],
      ['AT', 'AT12345678'],
      ['FR', 'FRIO123456789'],
      ['NL', 'NL123456789B1'],
      ['GR', 'GR094259216'],
      ['IT', 'IT0123456789'],
      ['BE', 'BE2123456789'],
      ['CH', 'CH123456789'],
      ['GB', 'GB12345678'],
      ['US', 'DE123456789'],
      ['US', 'US1'],
      ['DE', 'DE 123/456'],
      ['DE', 123],
    ]
    const setup = await company(t)
    const body = (country: string, vat_number: unknown) => ({
      name: 'Acme',
      country,
      timezone: 'UTC',
      product_sku: setup.productSku,
      subscription_plan: setup.planSku,
      vat_number,
    })
    for (const [country, input, stored] of good) {
      const res = await call(t, { method: 'POST', url: '/api/v1/companies', body: body(country, input) })
      assert.equal(res.statusCode, 202, `${country} ${input}: ${res.body}`)
      const got = await json(t, 200, { url: String(res.headers.location) })
      assert.deepEqual([got.vat_number, got.vat_number_status], [stored, 'not_validated'], `${country} ${input}`)
    }
    for (const [country, input] of bad) {
      const res = await call(t, { method: 'POST', url: '/api/v1/companies', body: body(country, input) })
      assert.equal(res.statusCode, 400, `${country} ${input}: ${res.body}`)
      assert.equal(res.json().code, 'validation_failed')
      assert.match(res.json().errors, /^body\/vat_number/, `${country} ${input}`)
      const patched = await patch(setup, { country, vat_number: input })
      assert.equal(patched.statusCode, 400, `PATCH ${country} ${input}: ${patched.body}`)
      assert.match(patched.json().errors, /^body\/vat_number/, `PATCH ${country} ${input}`)
    }
    // A country moved away from its number's prefix: the number must move with it (or go).
    const c = await german()
    const moved = await patch(c, { country: 'AT' })
    assert.equal(moved.statusCode, 400)
    assert.match(moved.json().errors, /^body\/vat_number .*AT/)
    assert.equal((await patch(c, { country: 'AT', vat_number: 'ATU12345678' })).statusCode, 202)
    assert.equal((await patch(c, { country: 'IT', vat_number: null })).statusCode, 202)
  })

  it('takes vat_number_status at creation (platform) only with a vat_number, null only without one', async () => {
    const setup = await company(t)
    const body = (fields: Record<string, unknown>) => ({
      name: 'Acme',
      country: 'DE',
      timezone: 'Europe/Berlin',
      product_sku: setup.productSku,
      subscription_plan: setup.planSku,
      ...fields,
    })
    const valid = await call(t, {
      method: 'POST',
      url: '/api/v1/companies',
      body: body({ vat_number: 'DE123456789', vat_number_status: 'valid' }),
    })
    assert.equal(valid.statusCode, 202, valid.body)
    assert.equal((await json(t, 200, { url: String(valid.headers.location) })).vat_number_status, 'valid')
    const orphan = await call(t, {
      method: 'POST',
      url: '/api/v1/companies',
      body: body({ vat_number_status: 'valid' }),
    })
    assert.equal(orphan.statusCode, 400)
    assert.match(orphan.json().errors, /^body\/vat_number_status/)
    // A company as read, posted back: null beside no number; beside a number, null is a 400.
    assert.equal(
      (
        await call(t, {
          method: 'POST',
          url: '/api/v1/companies',
          body: body({ vat_number: null, vat_number_status: null }),
        })
      ).statusCode,
      202,
    )
    const nulled = await call(t, {
      method: 'POST',
      url: '/api/v1/companies',
      body: body({ vat_number: 'DE123456789', vat_number_status: null }),
    })
    assert.equal(nulled.statusCode, 400)
    assert.match(nulled.json().errors, /^body\/vat_number_status/)
    const listed = await json<any[]>(t, 200, { url: '/api/v1/companies', query: { q: 'Acme', limit: '500' } })
    assert.ok(listed.every((c) => 'vat_number_status' in c))
  })

  it('reverse-charges a German business only while its number is valid: the estimate and the invoice', async () => {
    const c = await billedCompany(t, {
      start: '2027-03-02T00:00:00.000Z',
      plans: { gold: { price: 30, features: ['stamping'] } },
      company: { plan_quantity: 1, country: 'DE', timezone: 'Europe/Berlin', vat_number: 'DE123456789' },
    })
    const taxes = async (token?: string | null) => {
      const res = await estimate(
        t,
        c.subscriptionId,
        { company_id: c.id, product_sku: c.productSku, subscription_plan: c.planSku, plan_quantity: '1' },
        token,
      )
      assert.equal(res.statusCode, 200, res.body)
      return res.json().estimate.invoice_estimate.taxes
    }
    const VAT = [{ name: 'DE VAT', rate: 19, amount: 570 }]
    const REVERSE = [{ name: 'Reverse charge', rate: 0, amount: 0 }]
    // not_validated: German VAT, for the company's own token, the platform and anyone.
    assert.deepEqual([await taxes(c.token), await taxes(), await taxes(null)], [VAT, VAT, VAT])
    assert.equal((await patch(c, { vat_number_status: 'valid' })).statusCode, 202)
    assert.deepEqual([await taxes(c.token), await taxes(null)], [REVERSE, REVERSE])
    assert.equal((await patch(c, { vat_number_status: 'invalid' })).statusCode, 202)
    assert.deepEqual(await taxes(c.token), VAT)

    // The trial's conversion invoice, while the number is invalid: 30.00 + 19 %.
    await setCard(t, c.id)
    await at(t, '2027-04-01T00:00:00.000Z')
    const [first] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
    assert.deepEqual([first.total, first.taxes], [3570, VAT])
    // Marked valid: the renewal is reverse-charged.
    assert.equal((await patch(c, { vat_number_status: 'valid' })).statusCode, 202)
    await at(t, '2027-05-01T00:00:00.000Z')
    const [renewal] = await json<any[]>(t, 200, { url: `${SUB}/${c.id}/invoices`, token: c.token })
    assert.deepEqual(
      [renewal.total, renewal.taxes, renewal.line_items.map((l: any) => l.tax_exempt_reason)],
      [3000, REVERSE, ['reverse_charge']],
    )
  })

  it('documents vat_number_status, the 403 and the platform-only fields in the OpenAPI document', async () => {
    const doc = await t.json<any>(200, { url: '/openapi.json', token: null })
    const company = doc.components.schemas.Company
    const values = (s: any): unknown[] =>
      s.anyOf
        ? s.anyOf.flatMap(values)
        : (s.enum ?? (s.const !== undefined ? [s.const] : s.type === 'null' ? [null] : []))
    assert.deepEqual(values(company.properties.vat_number_status), ['valid', 'invalid', 'not_validated', null])
    assert.deepEqual(values(doc.components.schemas.CompanyInput.properties.vat_number_status), [
      'valid',
      'invalid',
      'not_validated',
      null,
    ])
    const patchOp = doc.paths['/api/v1/companies/{company_id}'].patch
    assert.ok(patchOp.responses['403'], 'PATCH documents its 403')
    assert.match(patchOp.description, /country, vat_number and vat_number_status/)
  })
})

onEachEngine('migration 0041', (t) => {
  it('gives the companies that had a vat_number not_validated (taxed until a platform client marks it valid), the others none', async () => {
    const business = await billedCompany(t, {
      company: { country: 'DE', timezone: 'Europe/Berlin', vat_number: 'DE123456789', vat_number_status: 'valid' },
    })
    const consumer = await billedCompany(t, { company: { country: 'DE', timezone: 'Europe/Berlin' } })
    // The database as it was before 0041, then 0041 as a deploy applies it.
    const db = t.app.database.db
    await sql`ALTER TABLE companies DROP CONSTRAINT companies_vat_number_status_check, DROP COLUMN vat_number_status`.execute(
      db,
    )
    await sql.raw(readMigrations().find((m) => m.version === '0041_vat_number_status')!.sql).execute(db)
    const read = async (c: { id: string }) => {
      const got = await json(t, 200, { url: `/api/v1/companies/${c.id}` })
      return [got.vat_number, got.vat_number_status]
    }
    assert.deepEqual(
      [await read(business), await read(consumer)],
      [
        ['DE123456789', 'not_validated'],
        [null, null],
      ],
    )
    const taxes = async () =>
      (
        await estimate(t, business.subscriptionId, {
          company_id: business.id,
          product_sku: business.productSku,
          subscription_plan: business.planSku,
          plan_quantity: '5',
        })
      ).json().estimate.invoice_estimate.taxes
    assert.deepEqual(await taxes(), [{ name: 'DE VAT', rate: 19, amount: 2841 }])
    assert.equal(
      (
        await call(t, {
          method: 'PATCH',
          url: `/api/v1/companies/${business.id}`,
          body: { vat_number_status: 'valid' },
        })
      ).statusCode,
      202,
    )
    assert.deepEqual(await taxes(), [{ name: 'Reverse charge', rate: 0, amount: 0 }])
    // The database refuses a status without a number, or a number without one.
    await assert.rejects(
      sql`UPDATE companies SET vat_number_status = NULL WHERE id = ${business.id}`.execute(db),
      /companies_vat_number_status_check/,
    )
    await assert.rejects(
      sql`UPDATE companies SET vat_number_status = 'valid' WHERE id = ${consumer.id}`.execute(db),
      /companies_vat_number_status_check/,
    )
  })
})
