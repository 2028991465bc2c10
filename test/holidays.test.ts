import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { locationId } from './helpers/app.ts'
import { company, companyClient, subsidiary, type CompanyFixture } from './helpers/factories.ts'
import { createPublicHolidayCalendar } from '../src/modules/holidays/public-holidays.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const api = (companyId: string) => `/api/v1/companies/${companyId}`

onEachEngine('holidays', (t) => {
  let acme: CompanyFixture
  let other: CompanyFixture
  before(async () => {
    acme = await company(t)
    other = await company(t)
  })

  async function holiday(c: CompanyFixture, body: Record<string, unknown>) {
    const res = await t.call({
      method: 'POST',
      url: `${api(c.id)}/holidays`,
      token: c.token,
      body: { name: 'Patrono', day: '2026-06-24', ...body },
    })
    if (res.statusCode !== 202) throw new Error(`holiday: ${res.statusCode} ${res.body}`)
    return locationId(res)
  }
  const all = (c: CompanyFixture, year?: number) =>
    t.json<any[]>(200, {
      url: `${api(c.id)}/all_holidays`,
      token: c.token,
      ...(year ? { query: { year: String(year) } } : {}),
    })
  const own = (entries: any[], id: string) => entries.filter((e) => e.id === id).map((e) => e.day)

  it('defines holidays (202 + Location) and reads them: one, company-wide (26), per subsidiary (31)', async () => {
    const c = await company(t)
    const s = await subsidiary(t, c.id)
    const res = await t.call({
      method: 'POST',
      url: `${api(c.id)}/holidays`,
      token: c.token,
      body: {
        id: 'ignored',
        company_id: other.id,
        name: 'Fondazione',
        day: '2026-03-10',
        is_worker_holiday: false,
        recurrent: 'yearly',
        recurrent_until: '2030-03-10',
      },
    })
    assert.equal(res.statusCode, 202)
    assert.equal(res.body, '')
    const id = locationId(res)
    assert.equal(res.headers.location, `${api(c.id)}/holidays/${id}`)
    const got = await t.json(200, { url: res.headers.location as string, token: c.token })
    assert.deepEqual(got, {
      id,
      name: 'Fondazione',
      day: '2026-03-10',
      is_worker_holiday: false,
      recurrent: 'yearly',
      recurrent_until: '2030-03-10',
      subsidiary_id: null,
    })
    const early = await holiday(c, { name: 'Primo', day: '2026-01-02' })
    const branch = await holiday(c, { name: 'Filiale', day: '2026-05-05', subsidiary_id: s })
    const companyWide = await t.json<any[]>(200, { url: `${api(c.id)}/holidays`, token: c.token })
    assert.deepEqual(
      companyWide.map((h) => h.id),
      [early, id],
    )
    assert.deepEqual(companyWide[0], {
      id: early,
      name: 'Primo',
      day: '2026-01-02',
      is_worker_holiday: true,
      recurrent: 'none',
      recurrent_until: null,
      subsidiary_id: null,
    })
    const ofBranch = await t.json<any[]>(200, { url: `${api(c.id)}/subsidiaries/${s}/holidays`, token: c.token })
    assert.deepEqual(ofBranch, [
      {
        id: branch,
        name: 'Filiale',
        day: '2026-05-05',
        is_worker_holiday: true,
        recurrent: 'none',
        recurrent_until: null,
        subsidiary_id: s,
      },
    ])
    assert.deepEqual(
      await t.json(200, { url: `${api(c.id)}/subsidiaries/${await subsidiary(t, c.id)}/holidays`, token: c.token }),
      [],
    )
  })

  it('refuses invalid holidays with 400 naming the field, storing nothing', async () => {
    const c = await company(t)
    const foreignSubsidiary = await subsidiary(t, other.id)
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ day: '2026-02-30' }, /body\/day/],
      [{ day: '2027-02-29' }, /body\/day/],
      [{ day: '26-01-01' }, /body\/day/],
      [{ day: 20260101 }, /body\/day must be string/],
      [{ recurrent: 'yearly', recurrent_until: '2026-13-01' }, /body\/recurrent_until/],
      [
        { recurrent: 'yearly', day: '2026-06-24', recurrent_until: '2026-06-23' },
        /body\/recurrent_until must not be before body\/day/,
      ],
      [{ recurrent_until: '2030-01-01' }, /body\/recurrent_until is allowed only with recurrent "yearly"/],
      [{ recurrent: 'none', recurrent_until: '2030-01-01' }, /body\/recurrent_until is allowed only/],
      [{ recurrent: 'monthly' }, /body\/recurrent must be one of "none", "yearly"/],
      [{ name: '' }, /body\/name/],
      [{ name: undefined }, /body\/name is required/],
      [{ is_worker_holiday: 'yes' }, /body\/is_worker_holiday must be boolean/],
      [{ colour: 'red' }, /body\/colour is not a known field/],
      [{ subsidiary_id: foreignSubsidiary }, /body\/subsidiary_id is not a subsidiary of this company/],
      [{ subsidiary_id: crypto.randomUUID() }, /body\/subsidiary_id/],
    ]
    for (const [fields, message] of cases) {
      const res = await t.call({
        method: 'POST',
        url: `${api(c.id)}/holidays`,
        token: c.token,
        body: { name: 'X', day: '2026-06-24', ...fields },
      })
      assert.equal(res.statusCode, 400, JSON.stringify(fields))
      assert.equal(res.json().code, 'validation_failed')
      assert.match(res.json().errors, message, JSON.stringify(fields))
    }
    assert.deepEqual(await t.json(200, { url: `${api(c.id)}/holidays`, token: c.token }), [])
    assert.deepEqual(
      await t.json(200, { url: `${api(other.id)}/subsidiaries/${foreignSubsidiary}/holidays`, token: other.token }),
      [],
    )
    // A yearly holiday on a leap day is a real day, and may end on its first day.
    await holiday(c, { day: '2024-02-29', recurrent: 'yearly', recurrent_until: '2024-02-29' })
  })

  it('replaces (PUT, 202) and deletes (204) a holiday; unknown ones are 404', async () => {
    const s = await subsidiary(t, acme.id)
    const id = await holiday(acme, {
      name: 'Old',
      day: '2026-01-10',
      recurrent: 'yearly',
      recurrent_until: '2028-01-10',
      is_worker_holiday: false,
    })
    const url = `${api(acme.id)}/holidays/${id}`
    const res = await t.call({
      method: 'PUT',
      url,
      token: acme.token,
      body: { name: 'New', day: '2026-02-11', subsidiary_id: s },
    })
    assert.equal(res.statusCode, 202)
    assert.equal(res.body, '')
    assert.deepEqual(await t.json(200, { url, token: acme.token }), {
      id,
      name: 'New',
      day: '2026-02-11',
      is_worker_holiday: true,
      recurrent: 'none',
      recurrent_until: null,
      subsidiary_id: s,
    })
    assert.deepEqual(
      (await t.json<any[]>(200, { url: `${api(acme.id)}/subsidiaries/${s}/holidays`, token: acme.token })).map(
        (h) => h.id,
      ),
      [id],
    )
    const bad = await t.call({ method: 'PUT', url, token: acme.token, body: { name: 'New', day: '2026-02-30' } })
    assert.equal(bad.statusCode, 400)
    assert.equal((await t.json(200, { url, token: acme.token })).day, '2026-02-11')
    const del = await t.call({ method: 'DELETE', url, token: acme.token })
    assert.equal(del.statusCode, 204)
    assert.equal(del.body, '')
    for (const req of [
      { url },
      { method: 'DELETE' as const, url },
      { method: 'PUT' as const, url, body: { name: 'x', day: '2026-01-01' } },
    ]) {
      const gone = await t.call({ ...req, token: acme.token })
      assert.equal(gone.statusCode, 404, `${req.method ?? 'GET'} after delete`)
      assert.equal(gone.json().code, 'not_found')
    }
  })

  it('expands yearly holidays over the year asked, up to recurrent_until, Feb 29 only in leap years', async () => {
    const c = await company(t, { country: 'DE', timezone: 'Europe/Berlin' })
    const s = await subsidiary(t, c.id)
    const once = await holiday(c, { name: 'Betriebsausflug', day: '2027-07-01' })
    const yearly = await holiday(c, {
      name: 'Jubiläum',
      day: '2026-09-09',
      recurrent: 'yearly',
      recurrent_until: '2028-09-09',
    })
    const forever = await holiday(c, { name: 'Stadtfest', day: '2020-07-15', recurrent: 'yearly', subsidiary_id: s })
    const leap = await holiday(c, { name: 'Schalttag', day: '2024-02-29', recurrent: 'yearly' })
    const cutInside = await holiday(c, {
      name: 'Kurz',
      day: '2026-12-01',
      recurrent: 'yearly',
      recurrent_until: '2027-11-30',
    })
    const expected: Record<number, Record<string, string[]>> = {
      2025: { [once]: [], [yearly]: [], [forever]: ['2025-07-15'], [leap]: [], [cutInside]: [] },
      2026: {
        [once]: [],
        [yearly]: ['2026-09-09'],
        [forever]: ['2026-07-15'],
        [leap]: [],
        [cutInside]: ['2026-12-01'],
      },
      2027: {
        [once]: ['2027-07-01'],
        [yearly]: ['2027-09-09'],
        [forever]: ['2027-07-15'],
        [leap]: [],
        [cutInside]: [],
      },
      2028: {
        [once]: [],
        [yearly]: ['2028-09-09'],
        [forever]: ['2028-07-15'],
        [leap]: ['2028-02-29'],
        [cutInside]: [],
      },
      2029: { [once]: [], [yearly]: [], [forever]: ['2029-07-15'], [leap]: [], [cutInside]: [] },
      2032: { [once]: [], [yearly]: [], [forever]: ['2032-07-15'], [leap]: ['2032-02-29'], [cutInside]: [] },
    }
    for (const [year, byId] of Object.entries(expected)) {
      const entries = await all(c, Number(year))
      for (const [id, days] of Object.entries(byId)) assert.deepEqual(own(entries, id), days, `${year} ${id}`)
      assert.ok(entries.every((e) => e.day.startsWith(`${year}-`)))
    }
    const e2028 = await all(c, 2028)
    assert.deepEqual(
      e2028.find((e) => e.id === yearly),
      {
        id: yearly,
        name: 'Jubiläum',
        day: '2028-09-09',
        is_worker_holiday: true,
        recurrent: 'yearly',
        recurrent_until: '2028-09-09',
        subsidiary_id: null,
        source: 'company',
      },
    )
    assert.deepEqual(
      e2028.find((e) => e.id === forever),
      {
        id: forever,
        name: 'Stadtfest',
        day: '2028-07-15',
        is_worker_holiday: true,
        recurrent: 'yearly',
        recurrent_until: null,
        subsidiary_id: s,
        source: 'subsidiary',
      },
    )
    // Endpoint 26 and 31 still show the definitions, not the dates.
    assert.equal(
      (await t.json<any[]>(200, { url: `${api(c.id)}/holidays`, token: c.token })).find((h) => h.id === leap).day,
      '2024-02-29',
    )
  })

  it('merges the public holidays of the country: Italy has Ferragosto and Santo Stefano, Germany does not', async () => {
    const it2026 = await all(acme, 2026)
    const publicDays = (entries: any[]) => entries.filter((e) => e.source === 'public').map((e) => e.day)
    assert.ok(publicDays(it2026).includes('2026-08-15'))
    assert.ok(publicDays(it2026).includes('2026-12-26'))
    assert.ok(publicDays(it2026).includes('2026-04-25'))
    assert.ok(!publicDays(it2026).includes('2026-10-03'))
    const ferragosto = it2026.find((e) => e.day === '2026-08-15')
    assert.deepEqual(
      { ...ferragosto, name: undefined },
      {
        id: null,
        name: undefined,
        day: '2026-08-15',
        is_worker_holiday: true,
        recurrent: 'none',
        recurrent_until: null,
        subsidiary_id: null,
        source: 'public',
      },
    )
    // Only days off: Italy's Mother's Day (an observance) is not there.
    assert.ok(!publicDays(it2026).includes('2026-05-10'))

    const de = await company(t, { country: 'DE', timezone: 'Europe/Berlin' })
    const de2026 = publicDays(await all(de, 2026))
    assert.ok(de2026.includes('2026-10-03'))
    assert.ok(de2026.includes('2026-12-26'))
    assert.ok(!de2026.includes('2026-08-15'))
    // Heiliger Abend is a bank half-day in the data, not a day off.
    assert.ok(!de2026.includes('2026-12-24'))
    // Easter Monday moves with Easter.
    assert.ok(de2026.includes('2026-04-06'))
    assert.ok(publicDays(await all(de, 2027)).includes('2027-03-29'))
    assert.ok(!de2026.includes('2026-01-06'))
  })

  it('narrows public holidays to the province where the data knows it, else uses the country', async () => {
    const rome = await company(t, { province: 'RM' })
    const milan = await company(t, { province: 'MI' })
    const unknown = await company(t, { province: 'ZZ' })
    const bavaria = await company(t, { country: 'DE', timezone: 'Europe/Berlin', province: 'BY' })
    const has = async (c: CompanyFixture, day: string) =>
      (await all(c, 2026)).some((e) => e.source === 'public' && e.day === day)
    assert.equal(await has(rome, '2026-06-29'), true) // Santi Pietro e Paolo, Rome's patrons
    assert.equal(await has(milan, '2026-06-29'), false)
    assert.equal(await has(milan, '2026-12-07'), true) // Sant'Ambrogio, Milan's patron
    assert.equal(await has(unknown, '2026-06-29'), false)
    assert.equal(await has(unknown, '2026-08-15'), true)
    assert.equal(await has(bavaria, '2026-01-06'), true) // Heilige Drei Könige in Bavaria
  })

  it('sorts by day, then company, subsidiary and public holidays on the same day', async () => {
    const c = await company(t)
    const s = await subsidiary(t, c.id)
    const pub = await holiday(c, { name: 'Sub Ferragosto', day: '2026-08-15', subsidiary_id: s })
    const com = await holiday(c, { name: 'Ferie', day: '2020-08-15', recurrent: 'yearly' })
    const entries = await all(c, 2026)
    const days = entries.map((e) => e.day)
    assert.deepEqual(days, [...days].sort())
    assert.deepEqual(
      entries.filter((e) => e.day === '2026-08-15').map((e) => [e.source, e.id]),
      [
        ['company', com],
        ['subsidiary', pub],
        ['public', null],
      ],
    )
  })

  it("defaults the year to the current one in the company's time zone, from the service's clock", async () => {
    const rome = await company(t)
    const utc = await company(t, { timezone: 'UTC' })
    const id = await holiday(rome, { name: 'Capodanno aziendale', day: '2027-01-01', recurrent: 'yearly' })
    // Dated holidays of the other year: read beside the year's (both years are possible until
    // the company's time zone is known), and left out.
    const lastYearInRome = await holiday(rome, { name: 'Inventario', day: '2027-12-31' })
    const endedInRome = await holiday(rome, {
      name: 'Fine anno',
      day: '2020-12-31',
      recurrent: 'yearly',
      recurrent_until: '2027-12-31',
    })
    const nextYearInUtc = await holiday(utc, { name: 'Inventory', day: '2028-01-01' })
    const beginsInUtc = await holiday(utc, { name: 'Founders', day: '2028-03-01', recurrent: 'yearly' })
    try {
      t.clock.set('2027-12-31T23:30:00Z') // already 2028 in Rome, still 2027 in UTC
      // Tokens follow the clock too: take ones issued at the new time.
      for (const c of [rome, utc]) c.token = await t.tokenFor(c.client.client_id, c.client.client_secret)
      const inRome = await all(rome)
      assert.ok(inRome.length > 0 && inRome.every((e) => e.day.startsWith('2028-')))
      assert.deepEqual(own(inRome, id), ['2028-01-01'])
      assert.deepEqual(own(inRome, lastYearInRome), [])
      assert.deepEqual(own(inRome, endedInRome), [], 'a yearly holiday ended the year before')
      const inUtc = await all(utc)
      assert.ok(inUtc.length > 0 && inUtc.every((e) => e.day.startsWith('2027-')))
      assert.deepEqual(own(inUtc, nextYearInUtc), [])
      assert.deepEqual(own(inUtc, beginsInUtc), [], 'a yearly holiday that begins the year after')
    } finally {
      t.clock.set(new Date())
    }
  })

  it('refuses a bad year with 400', async () => {
    for (const year of ['abc', '1800', '2026.5', '99999']) {
      const res = await t.call({ url: `${api(acme.id)}/all_holidays`, token: acme.token, query: { year } })
      assert.equal(res.statusCode, 400, year)
      assert.match(res.json().errors, /querystring\/year/)
    }
    const res = await t.call({ url: `${api(acme.id)}/all_holidays`, token: acme.token, query: { month: '1' } })
    assert.equal(res.statusCode, 400)
  })

  it("answers 404 for another company's holiday or subsidiary on this company's path", async () => {
    const foreignSubsidiary = await subsidiary(t, other.id)
    const foreign = await holiday(other, { name: 'Theirs', subsidiary_id: foreignSubsidiary })
    const url = `${api(acme.id)}/holidays/${foreign}`
    for (const req of [
      { url },
      { method: 'DELETE' as const, url },
      { method: 'PUT' as const, url, body: { name: 'Hijack', day: '2026-01-01' } },
      { url: `${api(acme.id)}/subsidiaries/${foreignSubsidiary}/holidays` },
      { url: `${api(acme.id)}/subsidiaries/${crypto.randomUUID()}/holidays` },
    ]) {
      const res = await t.call({ ...req, token: acme.token })
      assert.equal(res.statusCode, 404, `${req.method ?? 'GET'} ${req.url}`)
      assert.equal(res.json().code, 'not_found')
    }
    const theirs = await t.json(200, { url: `${api(other.id)}/holidays/${foreign}`, token: other.token })
    assert.equal(theirs.name, 'Theirs')
    // Their holidays never show in this company's lists.
    assert.ok(!(await all(acme, 2026)).some((e) => e.id === foreign))
  })

  it("answers 404 to another company's token on every holiday route of this company, as for a missing company", async () => {
    const s = await subsidiary(t, acme.id)
    const id = await holiday(acme, { name: 'Mine' })
    const routes: Array<{ method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string; body?: unknown }> = [
      { method: 'POST', url: `${api(acme.id)}/holidays`, body: { name: 'x', day: '2026-01-01' } },
      { method: 'GET', url: `${api(acme.id)}/holidays` },
      { method: 'GET', url: `${api(acme.id)}/holidays/${id}` },
      { method: 'PUT', url: `${api(acme.id)}/holidays/${id}`, body: { name: 'x', day: '2026-01-01' } },
      { method: 'DELETE', url: `${api(acme.id)}/holidays/${id}` },
      { method: 'GET', url: `${api(acme.id)}/subsidiaries/${s}/holidays` },
      { method: 'GET', url: `${api(acme.id)}/all_holidays` },
    ]
    const missing = crypto.randomUUID()
    for (const route of routes) {
      const res = await t.call({ ...route, token: other.token })
      assert.equal(res.statusCode, 404, `${route.method} ${route.url}`)
      const gone = await t.call({ ...route, url: route.url.replace(acme.id, missing) })
      assert.equal(gone.statusCode, 404, `missing company: ${route.method} ${route.url}`)
    }
    assert.equal((await t.json(200, { url: `${api(acme.id)}/holidays/${id}`, token: acme.token })).name, 'Mine')
  })

  it('needs a token (401) with read:holiday to read and write:holiday to write (403)', async () => {
    const s = await subsidiary(t, acme.id)
    const id = await holiday(acme, { name: 'Guarded' })
    const reader = await companyClient(t, acme.id, ['read:holiday'])
    const readToken = await t.tokenFor(reader.client_id, reader.client_secret)
    const teamOnly = await companyClient(t, acme.id, ['read:team', 'write:team'])
    const teamToken = await t.tokenFor(teamOnly.client_id, teamOnly.client_secret)
    const reads = [
      `${api(acme.id)}/holidays`,
      `${api(acme.id)}/holidays/${id}`,
      `${api(acme.id)}/subsidiaries/${s}/holidays`,
      `${api(acme.id)}/all_holidays`,
    ]
    for (const url of reads) {
      assert.equal((await t.call({ url, token: null })).statusCode, 401, url)
      assert.equal((await t.call({ url, token: readToken })).statusCode, 200, url)
      const res = await t.call({ url, token: teamToken })
      assert.equal(res.statusCode, 403, url)
      assert.equal(res.json().code, 'insufficient_scope')
      assert.match(String(res.headers['www-authenticate']), /scope="read:holiday"/)
    }
    const writes: Array<{ method: 'POST' | 'PUT' | 'DELETE'; url: string; body?: unknown }> = [
      { method: 'POST', url: `${api(acme.id)}/holidays`, body: { name: 'x', day: '2026-01-01' } },
      { method: 'PUT', url: `${api(acme.id)}/holidays/${id}`, body: { name: 'x', day: '2026-01-01' } },
      { method: 'DELETE', url: `${api(acme.id)}/holidays/${id}` },
    ]
    for (const w of writes) {
      assert.equal((await t.call({ ...w, token: null })).statusCode, 401, w.url)
      const res = await t.call({ ...w, token: readToken })
      assert.equal(res.statusCode, 403, w.url)
      assert.match(String(res.headers['www-authenticate']), /scope="write:holiday"/)
    }
    assert.equal((await t.json(200, { url: `${api(acme.id)}/holidays/${id}`, token: acme.token })).name, 'Guarded')
  })
})

describe('public holiday calendar', () => {
  it('computes a (country, region, year) once and serves it from memory', () => {
    const calendar = createPublicHolidayCalendar()
    const first = calendar.forYear('IT', 'RM', 2026)
    assert.equal(calendar.forYear('IT', 'RM', 2026), first)
    assert.equal(calendar.forYear('IT', 'rm', 2026), first)
    assert.notEqual(calendar.forYear('IT', null, 2026), first)
    assert.deepEqual(calendar.place('IT', 'RM'), { country: 'IT', state: '62', region: 'RM' })
    assert.deepEqual(calendar.place('DE', 'BY'), { country: 'DE', state: 'BY' })
    assert.deepEqual(calendar.place('DE', 'Atlantis'), { country: 'DE' })
    assert.deepEqual(calendar.forYear('XX', null, 2026), [])
  })

  it('keeps at most maxKept places and years, the first worked out going first', () => {
    const calendar = createPublicHolidayCalendar({ maxKept: 2 })
    const year = calendar.forYear('IT', 'RM', 2026)
    calendar.forYear('IT', 'RM', 2027)
    assert.equal(calendar.forYear('IT', 'RM', 2026), year, 'kept within the bound')
    calendar.forYear('IT', 'RM', 2028)
    assert.notEqual(calendar.forYear('IT', 'RM', 2026), year, 'dropped past it, and computed again')
    assert.deepEqual(calendar.forYear('IT', 'RM', 2026), year)
    // A province is whatever the company wrote: each new one is a place to remember.
    const place = calendar.place('DE', 'Province 1')
    calendar.place('DE', 'Province 2')
    assert.equal(calendar.place('DE', 'Province 1'), place, 'kept within the bound')
    calendar.place('DE', 'Province 3')
    assert.notEqual(calendar.place('DE', 'Province 1'), place, 'dropped past it')
  })
})
