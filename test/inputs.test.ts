import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { locationId, uniq, type TestApp } from './helpers/app.ts'
import { addToTeams, company, contract, subsidiary, team } from './helpers/factories.ts'
import { createComm, getComm } from './communications.fixtures.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

/** The input rules that hold for every route (docs/api-contract.md, "Strict bodies"). */

const api = (companyId: string) => `/api/v1/companies/${companyId}`
const up = (id: string) => id.toUpperCase()

onEachEngine('input rules', (t) => {
  async function refused(request: Parameters<TestApp['call']>[0], errors: RegExp) {
    const res = await t.call(request)
    assert.equal(
      res.statusCode,
      400,
      `${request.method ?? 'GET'} ${request.url} ${JSON.stringify(request.body)}: ${res.body}`,
    )
    assert.equal(res.json().code, 'validation_failed')
    assert.match(res.json().errors, errors)
  }

  describe('UUIDs are case-insensitive', () => {
    it('a company token reads its own company, contract and team through upper-case ids', async () => {
      const c = await company(t)
      const k = await contract(t, c.id)
      const tm = await team(t, c.id)
      assert.equal(up(c.id) !== c.id, true, 'the id has letters to change')
      const got = await t.json(200, { url: api(up(c.id)), token: c.token })
      assert.equal(got.id, c.id)
      assert.equal((await t.json(200, { url: `${api(up(c.id))}/contracts/${up(k)}`, token: c.token })).id, k)
      assert.equal((await t.json(200, { url: `${api(up(c.id))}/teams/${up(tm)}`, token: c.token })).id, tm)
      // Still another company's id for any other company's token.
      const other = await company(t)
      assert.equal((await t.call({ url: api(up(c.id)), token: other.token })).statusCode, 404)
    })

    it('a write through one spelling of the id shows at once in a read through the other (no stale cache)', async () => {
      const c = await company(t)
      assert.equal((await t.json(200, { url: api(up(c.id)) })).disabled, false)
      await t.json(202, { method: 'PUT', url: api(c.id) })
      assert.equal((await t.json(200, { url: api(up(c.id)) })).disabled, true)
      // And the other way round: written upper, read lower.
      assert.equal((await t.json(200, { url: api(c.id) })).disabled, true)
      await t.json(202, { method: 'PUT', url: `${api(up(c.id))}/enable` })
      assert.equal((await t.json(200, { url: api(c.id) })).disabled, false)
      assert.equal((await t.json(200, { url: api(up(c.id)) })).disabled, false)

      // A cached list, read by the company's own token.
      assert.deepEqual(await t.json(200, { url: `${api(up(c.id))}/teams`, token: c.token }), [])
      const tm = await team(t, c.id, {}, c.token)
      assert.deepEqual(
        (await t.json<any[]>(200, { url: `${api(up(c.id))}/teams`, token: c.token })).map((x) => x.id),
        [tm],
      )
    })

    it("an upper-case id in a query and a path is the company's own: the estimate (9) of a company token", async () => {
      const c = await company(t)
      const query = {
        company_id: up(c.id),
        product_sku: c.productSku,
        subscription_plan: c.planSku,
        plan_quantity: '5',
      }
      const res = await t.call({ url: `/api/v1/subscription/${up(c.id)}/estimate`, token: c.token, query })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().estimate.subscription_estimate.status, 'in_trial')
    })

    it('a uuid is its 36 characters: a urn:uuid: prefix is 400 naming the field, not a database error', async () => {
      const c = await company(t)
      await refused({ url: api(`urn:uuid:${c.id}`) }, /^params\/company_id must match format "uuid"$/)
    })

    it('upper-case ids in bodies are accepted and stored lower-case', async () => {
      const c = await company(t)
      const s = await subsidiary(t, c.id)
      const leader = await contract(t, c.id)
      const member = await contract(t, c.id)
      const res = await t.call({
        method: 'POST',
        url: `${api(c.id)}/teams`,
        token: c.token,
        body: { name: 'Upper', code: uniq('UP'), subsidiary_id: up(s), team_leader_ids: [up(leader), leader] },
      })
      assert.equal(res.statusCode, 202, res.body)
      const tm = locationId(res)
      const got = await t.json(200, { url: `${api(c.id)}/teams/${tm}`, token: c.token })
      assert.equal(got.subsidiary_id, s)
      assert.deepEqual(got.team_leader_ids, [leader])

      // The body's team_id must equal the path's: the same id in either case does.
      await t.json(202, {
        method: 'PUT',
        url: `${api(c.id)}/teams/${tm}/upgrade_contract`,
        token: c.token,
        body: { contract_id: up(member), team_id: up(tm) },
      })
      const members = await t.json<any[]>(200, { url: `${api(c.id)}/teams/${tm}/contracts`, token: c.token })
      assert.deepEqual(
        members
          .filter((m) => m.is_leader)
          .map((m) => m.id)
          .sort(),
        [leader, member].sort(),
      )

      const k = locationId(
        await t.call({
          method: 'POST',
          url: `${api(c.id)}/contracts`,
          token: c.token,
          body: { first_name: 'A', last_name: 'B', subsidiary_id: up(s) },
        }),
      )
      assert.equal((await t.json(200, { url: `${api(c.id)}/contracts/${k}`, token: c.token })).subsidiary_id, s)

      // A field that takes a uuid or another kind of id: the uuid is lower-cased, the other kept.
      const comm = await createComm(t, c, { status: 'draft', sender_id: up(member) })
      assert.equal((await getComm(t, c, comm)).sender_id, member)
      const own = await createComm(t, c, { status: 'draft', sender_id: c.client.client_id })
      assert.equal((await getComm(t, c, own)).sender_id, c.client.client_id)
    })
  })

  describe('bodies that would be ignored are refused', () => {
    it('33 (disable) and enable take no body: any body is 400 and changes nothing', async () => {
      const c = await company(t)
      await refused(
        { method: 'PUT', url: api(c.id), token: c.token, body: { name: 'Renamed' } },
        /this route disables the company and takes no body/i,
      )
      await refused({ method: 'PUT', url: api(c.id), body: {} }, /takes no body/)
      const still = await t.json(200, { url: api(c.id) })
      assert.equal(still.disabled, false)
      assert.notEqual(still.name, 'Renamed')

      await t.json(202, { method: 'PUT', url: api(c.id) })
      await refused(
        { method: 'PUT', url: `${api(c.id)}/enable`, body: { disabled: false } },
        /this route enables the company and takes no body/i,
      )
      assert.equal((await t.json(200, { url: api(c.id) })).disabled, true)
      await t.json(202, { method: 'PUT', url: `${api(c.id)}/enable` })
      assert.equal((await t.json(200, { url: api(c.id) })).disabled, false)
    })

    it("a contract's team_ids is read-only: sent back unchanged it is ignored, another value is 400 naming the team routes", async () => {
      const c = await company(t)
      const k = await contract(t, c.id)
      const tm = await team(t, c.id)
      const other = await team(t, c.id)
      await addToTeams(t, c.id, k, [tm])
      const url = `${api(c.id)}/contracts/${k}`
      const current = await t.json(200, { url, token: c.token })
      assert.deepEqual(current.team_ids, [tm])

      await t.json(202, { method: 'PUT', url, token: c.token, body: { ...current, last_name: 'Bianchi' } })
      await t.json(202, {
        method: 'PUT',
        url,
        token: c.token,
        body: { ...current, last_name: 'Bianchi', team_ids: [up(tm), tm] },
      })
      for (const teamIds of [[], [tm, other], [other]]) {
        await refused(
          { method: 'PUT', url, token: c.token, body: { ...current, team_ids: teamIds } },
          /body\/team_ids is read-only/,
        )
      }
      const res = await t.call({ method: 'PUT', url, token: c.token, body: { ...current, team_ids: [] } })
      for (const path of [
        '/teams/{team_id}/upgrade_contract',
        '/teams/{team_id}/downgrade_contract',
        '/teams/add_contract',
        '/teams/{team_id}/remove_contract',
      ]) {
        assert.ok(res.json().errors.includes(path), `${path} in ${res.body}`)
      }
      assert.match(res.json().errors, /POST \/api\/v1\/companies\/\{company_id\}\/teams\b/)
      const after = await t.json(200, { url, token: c.token })
      assert.deepEqual(after.team_ids, [tm])
      assert.equal(after.last_name, 'Bianchi')

      // A new contract is in no team yet.
      await refused(
        {
          method: 'POST',
          url: `${api(c.id)}/contracts`,
          token: c.token,
          body: { first_name: 'A', last_name: 'B', team_ids: [tm] },
        },
        /body\/team_ids is read-only/,
      )
      await t.json(202, {
        method: 'POST',
        url: `${api(c.id)}/contracts`,
        token: c.token,
        body: { first_name: 'A', last_name: 'B', team_ids: [] },
      })
    })
  })

  describe('messages and bounds', () => {
    it('a NUL character in any string of a body, query or path is 400 naming the field', async () => {
      const c = await company(t)
      const nul = 'a\u0000b'
      const cases: Array<[Parameters<TestApp['call']>[0], string]> = [
        [{ method: 'POST', url: `${api(c.id)}/subsidiaries`, body: { name: nul } }, 'body/name'],
        [{ method: 'POST', url: `${api(c.id)}/subsidiaries`, body: { name: 'Roma', city: nul } }, 'body/city'],
        [
          { method: 'POST', url: `${api(c.id)}/contracts`, body: { first_name: 'A', last_name: nul } },
          'body/last_name',
        ],
        [{ method: 'POST', url: `${api(c.id)}/holidays`, body: { name: nul, day: '2026-05-01' } }, 'body/name'],
        [{ method: 'POST', url: `${api(c.id)}/clients`, body: { name: nul, scopes: ['read:team'] } }, 'body/name'],
        [
          {
            method: 'POST',
            url: '/api/v1/subscription/plans',
            body: {
              plan: { sku: uniq('p'), name: 'P', price: 1, plan_family: nul, period_unit: 'month', features: [] },
            },
          },
          'body/plan/plan_family',
        ],
        [
          {
            method: 'POST',
            url: '/api/v1/companies',
            body: { name: 'N', country: 'IT', product_sku: 'x', subscription_plan: 'y', preferences: { theme: nul } },
          },
          'body/preferences/theme',
        ],
        [
          {
            method: 'POST',
            url: '/api/v1/companies',
            body: {
              name: 'N',
              country: 'IT',
              product_sku: 'x',
              subscription_plan: 'y',
              preferences: { [nul]: 'dark' },
            },
          },
          'body/preferences',
        ],
        [{ url: '/api/v1/subscription/plans', query: { name: nul } }, 'querystring/name'],
        [{ url: '/api/v1/subscription/plans/by_sku/a%00b' }, 'params/sku'],
      ]
      for (const [request, field] of cases) {
        await refused(request, new RegExp(`^${field.replace(/\//g, '\\/')}\\S* must not contain the NUL character`))
      }
    })

    it('an enum error lists every allowed value', async () => {
      const c = await company(t)
      const planBody = (fields: Record<string, unknown>) => ({
        plan: {
          sku: uniq('p'),
          name: 'P',
          price: 1,
          plan_family: 'core',
          period_unit: 'month',
          features: [],
          ...fields,
        },
      })
      await refused(
        { method: 'POST', url: '/api/v1/subscription/plans', body: planBody({ period_unit: 'week' }) },
        /body\/plan\/period_unit must be one of "month", "year"$/,
      )
      await refused(
        { method: 'POST', url: '/api/v1/subscription/plans', body: planBody({ period_unit: 7 }) },
        /body\/plan\/period_unit must be one of "month", "year"$/,
      )
      await refused(
        { url: '/api/v1/subscription/products', query: { visible: 'maybe' } },
        /querystring\/visible must be one of "true", "false"$/,
      )
      await refused(
        { url: `${api(c.id)}/communications`, token: c.token, query: { status: 'sent' } },
        /querystring\/status must be one of "draft", "scheduled", "active", "submitted", "discontinued"$/,
      )
      await refused(
        {
          method: 'POST',
          url: `${api(c.id)}/holidays`,
          token: c.token,
          body: { name: 'H', day: '2026-05-01', recurrent: 'monthly' },
        },
        /body\/recurrent must be one of "none", "yearly"$/,
      )
    })

    it('a name or code that is only white space is 400 naming the field', async () => {
      const c = await company(t)
      const blank = ' \t\u00a0'
      const cases: Array<[Parameters<TestApp['call']>[0], string]> = [
        [{ method: 'POST', url: `${api(c.id)}/subsidiaries`, body: { name: blank } }, 'body/name'],
        [
          { method: 'POST', url: `${api(c.id)}/contracts`, body: { first_name: blank, last_name: 'B' } },
          'body/first_name',
        ],
        [
          { method: 'POST', url: `${api(c.id)}/contracts`, body: { first_name: 'A', last_name: ' ' } },
          'body/last_name',
        ],
        [{ method: 'POST', url: `${api(c.id)}/teams`, body: { name: blank, code: uniq('T') } }, 'body/name'],
        [{ method: 'POST', url: `${api(c.id)}/teams`, body: { name: 'N', code: ' ' } }, 'body/code'],
        [{ method: 'POST', url: `${api(c.id)}/holidays`, body: { name: blank, day: '2026-05-01' } }, 'body/name'],
        [{ method: 'POST', url: `${api(c.id)}/clients`, body: { name: blank, scopes: ['read:team'] } }, 'body/name'],
        [
          {
            method: 'POST',
            url: '/api/v1/subscription/plans',
            body: { plan: { sku: uniq('p'), name: blank, price: 1, plan_family: 'core', period_unit: 'month' } },
          },
          'body/plan/name',
        ],
        [
          {
            method: 'POST',
            url: '/api/v1/subscription/plans',
            body: { plan: { sku: uniq('p'), name: 'P', price: 1, plan_family: blank, period_unit: 'month' } },
          },
          'body/plan/plan_family',
        ],
        [
          {
            method: 'POST',
            url: '/api/v1/companies',
            body: { name: blank, country: 'IT', product_sku: 'x', subscription_plan: 'y' },
          },
          'body/name',
        ],
      ]
      for (const [request, field] of cases) {
        await refused(request, new RegExp(`^${field.replace(/\//g, '\\/')} must not be blank`))
      }
      // White space around a real name is still a name.
      await t.json(202, { method: 'POST', url: `${api(c.id)}/subsidiaries`, body: { name: ' Roma ' } })
    })

    it('holiday days are 1900-01-01 to 2199-12-31', async () => {
      const c = await company(t)
      const url = `${api(c.id)}/holidays`
      for (const day of ['1899-12-31', '2200-01-01', '0001-01-01', '9999-12-31']) {
        await refused(
          { method: 'POST', url, token: c.token, body: { name: 'H', day } },
          /^body\/day must be a day from 1900-01-01 to 2199-12-31/,
        )
      }
      await refused(
        {
          method: 'POST',
          url,
          token: c.token,
          body: { name: 'H', day: '2026-01-01', recurrent: 'yearly', recurrent_until: '2200-01-01' },
        },
        /^body\/recurrent_until must be a day from 1900-01-01 to 2199-12-31/,
      )
      const first = locationId(
        await t.call({ method: 'POST', url, token: c.token, body: { name: 'First', day: '1900-01-01' } }),
      )
      await t.json(202, { method: 'POST', url, token: c.token, body: { name: 'Last', day: '2199-12-31' } })
      await refused(
        { method: 'PUT', url: `${url}/${first}`, token: c.token, body: { name: 'First', day: '1899-12-31' } },
        /^body\/day must be a day from/,
      )
      // Each accepted day can be read in its year.
      const y1900 = await t.json<any[]>(200, {
        url: `${api(c.id)}/all_holidays`,
        token: c.token,
        query: { year: '1900' },
      })
      assert.deepEqual(
        y1900.filter((h) => h.source === 'company').map((h) => h.day),
        ['1900-01-01'],
      )
      const y2199 = await t.json<any[]>(200, {
        url: `${api(c.id)}/all_holidays`,
        token: c.token,
        query: { year: '2199' },
      })
      assert.deepEqual(
        y2199.filter((h) => h.source === 'company').map((h) => h.day),
        ['2199-12-31'],
      )
    })

    it('year queries are 1900 to 2199: outside is 400 naming year', async () => {
      const c = await company(t)
      for (const url of [`${api(c.id)}/all_holidays`, `${api(c.id)}/communications`]) {
        for (const year of ['1899', '2200', '9999']) {
          await refused({ url, token: c.token, query: { year } }, /^querystring\/year must be (>=|<=) (1900|2199)$/)
        }
        for (const year of ['1900', '2199'])
          assert.equal((await t.call({ url, token: c.token, query: { year } })).statusCode, 200, `${url} ${year}`)
      }
    })
  })

  describe('every problem at once (details)', () => {
    const leader = '3f1c2f60-0000-4000-8000-000000000000'

    async function details(request: Parameters<TestApp['call']>[0]) {
      const res = await t.call(request)
      assert.equal(res.statusCode, 400, res.body)
      const body = res.json()
      assert.equal(body.code, 'validation_failed')
      return body as { errors: string; details: Array<{ field: string; message: string }> }
    }

    it('a body with three problems gets three details, each naming its field; errors still names the first', async () => {
      const c = await company(t)
      const body = await details({
        method: 'POST',
        url: `${api(c.id)}/teams`,
        body: { name: '   ', code: 'ok', team_leader_ids: [leader, leader, 'nope'], color: 'red' },
      })
      assert.deepEqual(body.details, [
        { field: 'body/color', message: 'body/color is not a known field' },
        { field: 'body/name', message: 'body/name must not be blank (white space only)' },
        { field: 'body/team_leader_ids/2', message: 'body/team_leader_ids/2 must match format "uuid"' },
      ])
      assert.equal(body.errors, 'body/color is not a known field')
      assert.equal((await t.json<unknown[]>(200, { url: `${api(c.id)}/teams` })).length, 0, 'nothing stored')
    })

    it('a query with two bad parameters gets two details; a union of values lists them all', async () => {
      const c = await company(t)
      const body = await details({ url: `${api(c.id)}/communications`, query: { year: 'abc', status: 'bogus' } })
      assert.deepEqual(body.details, [
        { field: 'querystring/year', message: 'querystring/year must be integer' },
        {
          field: 'querystring/status',
          message: 'querystring/status must be one of "draft", "scheduled", "active", "submitted", "discontinued"',
        },
      ])
      assert.equal(body.errors, 'querystring/year must be integer')
    })

    it('two bad path parameters get two details', async () => {
      const body = await details({ url: '/api/v1/companies/not-a-company/teams/not-a-team' })
      assert.deepEqual(
        body.details.map((d) => d.field),
        ['params/company_id', 'params/team_id'],
      )
      assert.equal(body.errors, body.details[0]!.message)
    })

    it('problems in several parts of a request (path, body, query) are all listed, in that order', async () => {
      const c = await company(t)
      const body = await details({
        method: 'PUT',
        url: `${api(c.id)}/contracts/not-a-contract`,
        query: { bogus: '1' },
        body: { first_name: 5, colour: 'red' },
      })
      const fields = body.details.map((d) => d.field)
      assert.equal(fields[0], 'params/contract_id')
      assert.deepEqual(body.details.at(-1), {
        field: 'querystring/bogus',
        message: 'querystring/bogus is not a known field',
      })
      assert.ok(
        fields.slice(1, -1).every((f) => f.startsWith('body/')),
        fields.join(', '),
      )
      for (const detail of [
        { field: 'body/colour', message: 'body/colour is not a known field' },
        { field: 'body/first_name', message: 'body/first_name must be string' },
      ]) {
        assert.ok(
          body.details.some((d) => d.field === detail.field && d.message === detail.message),
          `${detail.message} in ${fields.join(', ')}`,
        )
      }
      assert.equal(body.errors, 'params/contract_id must match format "uuid"')
      const bodyAndQuery = await details({
        method: 'POST',
        url: `${api(c.id)}/teams`,
        query: { bogus: '1' },
        body: { name: 'ab' },
      })
      assert.deepEqual(
        bodyAndQuery.details.map((d) => d.field),
        ['body/code', 'querystring/bogus'],
      )
    })

    it('every string holding a NUL is a detail', async () => {
      const c = await company(t)
      const body = await details({
        method: 'POST',
        url: `${api(c.id)}/teams`,
        body: { name: 'a\u0000b', code: 'c\u0000' },
      })
      assert.deepEqual(body.details, [
        { field: 'body/name', message: 'body/name must not contain the NUL character' },
        { field: 'body/code', message: 'body/code must not contain the NUL character' },
      ])
    })

    it('a check of the service naming a field is the one detail; a refusal of the whole request has none', async () => {
      const c = await company(t)
      const body = await details({
        method: 'POST',
        url: `${api(c.id)}/teams`,
        body: { name: 'ab', code: 'cd', team_leader_ids: [leader] },
      })
      assert.deepEqual(body.details, [{ field: 'body/team_leader_ids', message: body.errors }])
      assert.match(body.errors, /^body\/team_leader_ids must name contracts of this company/)
      const res = await t.call({
        method: 'POST',
        url: `${api(c.id)}/teams`,
        body: '{"name":',
        headers: { 'content-type': 'application/json' },
      })
      assert.equal(res.statusCode, 400)
      assert.deepEqual(res.json(), { errors: 'The body is not valid JSON', code: 'validation_failed' })
    })

    it('at most 100 details, the first 100 problems in order', async () => {
      const c = await company(t)
      const body = await details({
        method: 'POST',
        url: `${api(c.id)}/teams`,
        body: { name: 'ab', code: 'cd', team_leader_ids: Array.from({ length: 150 }, (_, i) => `x${i}`) },
      })
      assert.equal(body.details.length, 100)
      assert.deepEqual(
        body.details.map((d) => d.field),
        Array.from({ length: 100 }, (_, i) => `body/team_leader_ids/${i}`),
      )
    })
  })
})
