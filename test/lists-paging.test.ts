import { it, before } from 'node:test'
import assert from 'node:assert/strict'
import { company, companyClient, contract, subsidiary, team } from './helpers/factories.ts'
import { commsUrl, createComm, organisation, runAt } from './communications.fixtures.ts'
import { CompiledQuery, sql } from 'kysely'
import { Contract } from '../src/modules/companies/companies.schemas.ts'
import { CONTRACT_ORDER, contractsQuery } from '../src/modules/companies/companies.repository.ts'
import { keyset } from '../src/db/keyset.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const DAY_MS = 86_400_000

/** The next page's URL from a Link header, or undefined when there is none. */
function nextOf(link: string | string[] | undefined): string | undefined {
  if (link === undefined) return undefined
  const match = /^<([^>]+)>; rel="next"$/.exec(String(link))
  assert.ok(match, `Link header: ${String(link)}`)
  return match[1]
}

onEachEngine('lists and paging', (t, engine) => {
  let org: Awaited<ReturnType<typeof organisation>>
  let token: string
  let commId: string
  let firstSendAt: string
  const lists: Array<{
    name: string
    url: string
    query?: Record<string, string>
    token?: 'company' | 'platform' | 'none'
    items?: (body: any) => unknown[]
  }> = []

  before(async () => {
    org = await organisation(t)
    await company(t)
    const { c, subA, teamX } = org
    token = c.token
    const companyUrl = `/api/v1/companies/${c.id}`
    // Ties on purpose: equal names (ordered by id), equal days (by name), equal send_at (by id).
    await subsidiary(t, c.id, { name: 'Same' })
    await subsidiary(t, c.id, { name: 'Same' })
    await contract(t, c.id, { first_name: 'Eva', last_name: 'Bianchi' })
    await contract(t, c.id, { first_name: 'Eva', last_name: 'Bianchi' })
    await team(t, c.id, { name: 'Same', code: 'S2', subsidiary_id: subA })
    await team(t, c.id, { name: 'Same', code: 'S1' })
    for (const [name, day, subsidiary_id] of [
      ['Patrono', '2026-06-24', null],
      ['Festa', '2026-06-24', null],
      ['Chiusura', '2026-08-14', null],
      ['Inventario', '2026-01-07', null],
      ['Locale', '2026-03-01', subA],
      ['Locale', '2026-03-01', subA],
      ['Fiera', '2026-02-01', subA],
    ] as const) {
      assert.equal(
        (await t.call({ method: 'POST', url: `${companyUrl}/holidays`, token, body: { name, day, subsidiary_id } }))
          .statusCode,
        202,
      )
    }
    for (const send_at of ['2099-01-01T09:00:00.000Z', '2099-01-01T09:00:00.000Z', '2098-05-01T09:00:00.000Z'])
      await createComm(t, c, { send_at, destination_team_ids: [teamX] })
    // A communication delivered on three days to team X's three active members.
    firstSendAt = new Date(t.clock.now().getTime() - 1000).toISOString()
    const until = new Date(t.clock.now().getTime() + 3 * DAY_MS).toISOString().slice(0, 10)
    commId = await createComm(t, c, {
      send_at: firstSendAt,
      recurrent: 'daily',
      recurrent_until: until,
      destination_team_ids: [teamX],
    })
    await t.app.services.scheduler.runDue()
    await runAt(t, new Date(t.clock.now().getTime() + DAY_MS + 1000))
    await runAt(t, new Date(t.clock.now().getTime() + 2 * DAY_MS + 1000))
    for (let i = 0; i < 3; i++) {
      assert.equal(
        (
          await t.call({
            method: 'POST',
            url: '/api/v1/subscription/addons',
            body: { name: i < 2 ? 'Same addon' : `Addon ${i}`, price: 1, period_unit: 'month' },
          })
        ).statusCode,
        202,
      )
      assert.equal(
        (
          await t.call({
            method: 'POST',
            url: '/api/v1/subscription/coupons',
            body: { code: `PAGE${i}${engine}`, name: 'Coupon', discount_type: 'percentage', discount_value: 10 },
          })
        ).statusCode,
        202,
      )
    }
    await companyClient(t, c.id, ['read:company'])
    await companyClient(t, c.id, ['read:company'])

    lists.push(
      { name: 'companies', url: '/api/v1/companies', token: 'platform' },
      { name: 'subsidiaries', url: `${companyUrl}/subsidiaries` },
      { name: 'contracts', url: `${companyUrl}/contracts` },
      { name: 'contracts of a team', url: `${companyUrl}/contracts`, query: { team_id: teamX, active: 'true' } },
      { name: 'teams', url: `${companyUrl}/teams` },
      { name: 'team members', url: `${companyUrl}/teams/${teamX}/contracts` },
      { name: 'company holidays (26)', url: `${companyUrl}/holidays` },
      { name: 'subsidiary holidays (31)', url: `${companyUrl}/subsidiaries/${subA}/holidays` },
      { name: 'all holidays (30)', url: `${companyUrl}/all_holidays`, query: { year: '2026' } },
      { name: 'communications (22)', url: commsUrl(c.id) },
      { name: 'report (29)', url: commsUrl(c.id, `/${commId}/report`) },
      {
        name: 'messages (32)',
        url: commsUrl(c.id, `/messages/by_communication/${commId}`),
        query: { send_at: firstSendAt },
        items: (b) => b.messages,
      },
      { name: 'inbox', url: `${companyUrl}/contracts/${org.contracts.a1}/messages`, items: (b) => b.messages },
      { name: 'plans (5)', url: '/api/v1/subscription/plans', token: 'none' },
      { name: 'products (13)', url: '/api/v1/subscription/products', token: 'none' },
      { name: 'addons', url: '/api/v1/subscription/addons', token: 'none' },
      { name: 'coupons', url: '/api/v1/subscription/coupons', token: 'platform' },
      { name: 'company clients', url: `${companyUrl}/clients` },
      { name: 'authorized scopes (25)', url: `${companyUrl}/authorized/scopes` },
    )
  })

  const tokenOf = (which: 'company' | 'platform' | 'none' = 'company') =>
    which === 'company' ? token : which === 'platform' ? t.platformToken : null

  it('walks every list with limit=1 (and 2) to its end and gets the unpaged list, in the same order', async () => {
    for (const list of lists) {
      const whole = await t.call({
        url: list.url,
        query: { ...list.query, ...(list.items ? { page_size: '100' } : {}) },
        token: tokenOf(list.token),
      })
      assert.equal(whole.statusCode, 200, `${list.name}: ${whole.body}`)
      assert.equal(whole.headers.link, undefined, `${list.name}: no Link without limit`)
      const expected = list.items ? list.items(whole.json()) : whole.json()
      assert.ok(expected.length >= 2, `${list.name} has ${expected.length} items: too few to page`)
      for (const limit of [1, 2]) {
        const walked: unknown[] = []
        let url: string | undefined = `${list.url}?${new URLSearchParams({ ...list.query, limit: String(limit) })}`
        let pages = 0
        while (url) {
          const res = await t.call({ url, token: tokenOf(list.token) })
          assert.equal(res.statusCode, 200, `${list.name} page ${pages + 1}: ${res.body}`)
          const items = list.items ? list.items(res.json()) : res.json()
          assert.ok(items.length <= limit && items.length > 0, `${list.name}: page of ${items.length}`)
          walked.push(...items)
          url = nextOf(res.headers.link)
          if (url)
            assert.ok(url.startsWith(`${list.url}?`), `${list.name}: the next URL is the list's own path (${url})`)
          pages++
          assert.ok(pages <= expected.length, `${list.name}: more pages than items`)
        }
        assert.deepEqual(walked, expected, `${list.name} walked with limit=${limit}`)
        assert.equal(pages, Math.ceil(expected.length / limit), list.name)
      }
    }
  })

  it('keeps the other query parameters in the next URL, and the envelope of 32 counts the pages', async () => {
    const res = await t.call({
      url: commsUrl(org.c.id, `/messages/by_communication/${commId}`),
      query: { send_at: firstSendAt, limit: '1' },
      token,
    })
    assert.equal(res.statusCode, 200, res.body)
    const body = res.json()
    assert.equal(body.page, 1)
    assert.equal(body.page_size, 1)
    assert.equal(body.total, 3)
    const next = nextOf(res.headers.link)!
    assert.equal(new URL(next, 'http://x').searchParams.get('send_at'), firstSendAt)
    const second = (await t.call({ url: next, token })).json()
    assert.equal(second.page, 2)
    const mixed = await t.call({
      url: commsUrl(org.c.id, `/messages/by_communication/${commId}`),
      query: { send_at: firstSendAt, limit: '1', page: '2' },
      token,
    })
    assert.equal(mixed.statusCode, 400)
    assert.match(mixed.json().errors, /querystring\/page/)
  })

  it('refuses a bad limit or cursor with a 400 naming it', async () => {
    const url = `/api/v1/companies/${org.c.id}/contracts`
    for (const limit of ['0', '501', 'ten', '1.5']) {
      const res = await t.call({ url, query: { limit }, token })
      assert.equal(res.statusCode, 400, limit)
      assert.match(res.json().errors, /querystring\/limit/)
    }
    assert.equal((await t.call({ url, query: { limit: '500' }, token })).statusCode, 200)
    const first = await t.call({ url, query: { limit: '1' }, token })
    const cursor = new URL(nextOf(first.headers.link)!, 'http://x').searchParams.get('cursor')!
    const refused = async (query: Record<string, string>, path = url, why = /querystring\/cursor/) => {
      const res = await t.call({ url: path, query, token })
      assert.equal(res.statusCode, 400, `${JSON.stringify(query)}: ${res.body}`)
      assert.match(res.json().errors, why)
      assert.equal(res.json().details[0].field, 'querystring/cursor')
    }
    await refused({ limit: '1', cursor: 'not a cursor!' })
    await refused({ limit: '1', cursor: cursor.slice(0, -3) })
    await refused({ limit: '1', cursor: `${cursor}x` })
    // Decoded, altered and encoded again: its key no longer has the list's shape.
    const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    await refused({
      limit: '1',
      cursor: Buffer.from(JSON.stringify({ ...decoded, k: [1, 2, 3] })).toString('base64url'),
    })
    await refused(
      { limit: '1', cursor: Buffer.from(JSON.stringify({ ...decoded, f: 'x' })).toString('base64url') },
      url,
      /another list or to other filters/,
    )
    await refused({ cursor }, url, /needs limit/)
    // Another list, another filter set, another company's same list.
    await refused({ limit: '1', cursor }, `/api/v1/companies/${org.c.id}/subsidiaries`, /another list/)
    await refused({ limit: '1', cursor, active: 'true' }, url, /other filters/)
    // A cursor still works with another limit: the limit is not a filter.
    assert.equal((await t.call({ url, query: { limit: '3', cursor }, token })).statusCode, 200)
  })

  it('filters contracts by active, subsidiary_id, team_id and q', async () => {
    const { c, subA, teamX, teamY, contracts } = org
    const ids = async (query: Record<string, string>) =>
      new Set(
        (await t.json(200, { url: `/api/v1/companies/${c.id}/contracts`, query, token })).map(
          (k: { id: string }) => k.id,
        ),
      )
    assert.deepEqual(await ids({ active: 'false' }), new Set([contracts.off]))
    assert.deepEqual(await ids({ subsidiary_id: subA }), new Set([contracts.a1, contracts.a2, contracts.off]))
    assert.deepEqual(await ids({ subsidiary_id: subA, active: 'true' }), new Set([contracts.a1, contracts.a2]))
    assert.deepEqual(await ids({ team_id: teamY }), new Set([contracts.a1, contracts.n1]))
    assert.deepEqual(await ids({ team_id: teamX, subsidiary_id: subA }), new Set([contracts.a1, contracts.off]))
    const named = await contract(t, c.id, {
      first_name: 'Giulia',
      last_name: 'Verdi_Neri',
      email: 'g.verdi@Example.com',
    })
    assert.deepEqual(await ids({ q: 'giulia verdi' }), new Set([named]))
    assert.deepEqual(await ids({ q: 'EXAMPLE.COM' }).then((s) => s.has(named)), true)
    assert.deepEqual(await ids({ q: 'verdi_' }), new Set([named]))
    assert.deepEqual(await ids({ q: 'verdi%' }), new Set())
    for (const query of [{ active: 'maybe' }, { subsidiary_id: 'x' }, { team_id: '1' }, { q: '' }] as Array<
      Record<string, string>
    >) {
      const res = await t.call({ url: `/api/v1/companies/${c.id}/contracts`, query, token })
      assert.equal(res.statusCode, 400, JSON.stringify(query))
      assert.match(res.json().errors, new RegExp(`querystring/${Object.keys(query)[0]}`))
    }
  })

  it("reads a page of contracts, first or after a cursor, from one index in the list's order (migration 0038)", async () => {
    const { db } = t.app.database
    // The list's own query (the repository's, with its teams' subquery), a first page and a
    // page after a cursor, as listContracts builds them.
    const pages = [
      keyset(contractsQuery(db, org.c.id), CONTRACT_ORDER, { limit: 50 }),
      keyset(contractsQuery(db, org.c.id), CONTRACT_ORDER, { limit: 50, after: ['Bianchi', 'Eva', org.contracts.a1] }),
    ].map((query) => query.compile())
    // Every column a contract shows but its teams is read, so none may be left out of the index.
    const shown = Object.keys(Contract.properties).filter((column) => column !== 'team_ids')
    for (const column of shown) assert.match(pages[0]!.sql, new RegExp(`"c"."${column}"`), column)
    for (const page of pages) {
      // Costs left aside (a test's table is small): whether the index alone can answer.
      const plan = await db.transaction().execute(async (trx) => {
        for (const setting of ['enable_seqscan', 'enable_bitmapscan', 'enable_sort'])
          await sql`SELECT set_config(${setting}, 'off', true)`.execute(trx)
        const {
          rows: [row],
        } = await trx.executeQuery<Record<string, unknown>>(
          CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${page.sql}`, [...page.parameters]),
        )
        const json = row!['QUERY PLAN']
        return JSON.stringify(typeof json === 'string' ? JSON.parse(json) : json)
      })
      assert.match(plan, /"Node Type":"Index Only Scan"[^{}]*"Index Name":"contracts_page_idx"/, plan)
      assert.doesNotMatch(plan, /"Node Type":"Sort"/, plan)
    }
  })

  it('filters teams by subsidiary_id and q (name or code), and the cached whole list stays as it was', async () => {
    const { c, subA } = org
    const url = `/api/v1/companies/${c.id}/teams`
    const whole = await t.json(200, { url, token })
    const bySub = await t.json(200, { url, query: { subsidiary_id: subA }, token })
    assert.deepEqual(
      bySub.map((x: { code: string }) => x.code),
      ['S2'],
    )
    const same = await t.json(200, { url, query: { q: 'sAmE' }, token })
    assert.deepEqual(
      same.map((x: { code: string }) => x.code),
      ['S1', 'S2'],
      'ties on name ordered by code',
    )
    assert.deepEqual(
      (await t.json(200, { url, query: { q: 's1' }, token })).map((x: { code: string }) => x.code),
      ['S1'],
    )
    assert.deepEqual(await t.json(200, { url, token }), whole)
  })

  it('filters communications (22) by year and status, paged', async () => {
    const url = commsUrl(org.c.id)
    const y2099 = await t.json(200, { url, query: { year: '2099' }, token })
    assert.equal(y2099.length, 2)
    assert.ok(y2099[0].id > y2099[1].id, 'equal send_at: newest id first')
    const first = await t.call({ url, query: { year: '2099', status: 'scheduled', limit: '1' }, token })
    assert.deepEqual(first.json(), [y2099[0]])
    const second = await t.call({ url: nextOf(first.headers.link)!, token })
    assert.deepEqual(second.json(), [y2099[1]])
    assert.equal(second.headers.link, undefined)
    assert.deepEqual(await t.json(200, { url, query: { status: 'draft' }, token }), [])
  })

  it('documents limit, cursor and the Link header on every list route', async () => {
    const doc = await t.json(200, { url: '/openapi.json', token: null })
    const listOps = Object.entries(doc.paths as Record<string, Record<string, any>>)
      .flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })))
      .filter(({ method, op }) => method === 'get' && op.parameters?.some((p: { name: string }) => p.name === 'cursor'))
    assert.ok(listOps.length >= 18, `${listOps.length} list routes documented`)
    for (const { path, op } of listOps) {
      assert.ok(
        op.parameters.some((p: { name: string; in: string }) => p.name === 'limit' && p.in === 'query'),
        path,
      )
      assert.ok(op.responses['200'].headers?.link, `${path}: Link documented`)
    }
    for (const path of lists.map((l) =>
      l.url.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '{id}'),
    )) {
      assert.ok(
        listOps.some(({ path: p }) => p.replace(/\{[a-z_]+\}/g, '{id}') === path),
        `${path} takes a cursor`,
      )
    }
  })
})
