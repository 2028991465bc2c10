import { it } from 'node:test'
import assert from 'node:assert/strict'
import { locationId } from './helpers/app.ts'
import { company, type CompanyFixture } from './helpers/factories.ts'
import { onEachEngine } from './helpers/engine-suites.ts'

const api = (companyId: string) => `/api/v1/companies/${companyId}`

/**
 * A yearly holiday read from all_holidays (30) and PUT back as read: the entry carries the
 * date of the year asked for, not the series' first day. Written back with the series' month
 * and day it keeps the series' start; another month or day moves the series.
 */
onEachEngine('holiday write-back', (t) => {
  async function yearly(c: CompanyFixture, body: Record<string, unknown> = {}) {
    const res = await t.call({
      method: 'POST',
      url: `${api(c.id)}/holidays`,
      token: c.token,
      body: { name: 'Patrono', day: '2020-06-24', recurrent: 'yearly', ...body },
    })
    assert.equal(res.statusCode, 202, res.body)
    return locationId(res)
  }
  const all = (c: CompanyFixture, year: number) =>
    t.json<any[]>(200, { url: `${api(c.id)}/all_holidays`, token: c.token, query: { year: String(year) } })
  const daysOf = async (c: CompanyFixture, id: string, years: number[]) =>
    (await Promise.all(years.map((y) => all(c, y)))).flatMap((entries) =>
      entries.filter((e) => e.id === id).map((e) => e.day),
    )
  const put = (c: CompanyFixture, id: string, body: Record<string, unknown>) =>
    t.call({ method: 'PUT', url: `${api(c.id)}/holidays/${id}`, token: c.token, body })

  it("an all_holidays entry of a later year PUT back as read keeps the series' first day", async () => {
    const c = await company(t)
    const id = await yearly(c, { recurrent_until: '2030-06-24' })
    const entry = (await all(c, 2027)).find((e) => e.id === id)
    assert.equal(entry.day, '2027-06-24')
    const res = await put(c, id, { ...entry, name: 'Patrono (renamed)' })
    assert.equal(res.statusCode, 202, res.body)
    const stored = await t.json(200, { url: `${api(c.id)}/holidays/${id}`, token: c.token })
    assert.deepEqual(
      [stored.day, stored.name, stored.recurrent, stored.recurrent_until],
      ['2020-06-24', 'Patrono (renamed)', 'yearly', '2030-06-24'],
    )
    assert.deepEqual(await daysOf(c, id, [2019, 2020, 2023, 2026, 2030, 2031]), [
      '2020-06-24',
      '2023-06-24',
      '2026-06-24',
      '2030-06-24',
    ])
  })

  it("an earlier year with the series' month and day also keeps the first day", async () => {
    const c = await company(t)
    const id = await yearly(c)
    assert.equal((await put(c, id, { name: 'Patrono', day: '2010-06-24', recurrent: 'yearly' })).statusCode, 202)
    assert.equal((await t.json(200, { url: `${api(c.id)}/holidays/${id}`, token: c.token })).day, '2020-06-24')
  })

  it('another month or day moves the series; so does dropping the yearly recurrence', async () => {
    const c = await company(t)
    const id = await yearly(c)
    assert.equal((await put(c, id, { name: 'Patrono', day: '2027-06-25', recurrent: 'yearly' })).statusCode, 202)
    assert.equal((await t.json(200, { url: `${api(c.id)}/holidays/${id}`, token: c.token })).day, '2027-06-25')
    assert.deepEqual(await daysOf(c, id, [2020, 2026, 2027, 2028]), ['2027-06-25', '2028-06-25'])

    const other = await yearly(c)
    assert.equal((await put(c, other, { name: 'Patrono', day: '2027-07-24', recurrent: 'yearly' })).statusCode, 202)
    assert.equal((await t.json(200, { url: `${api(c.id)}/holidays/${other}`, token: c.token })).day, '2027-07-24')

    // A one-off holiday: the day written is the day kept.
    const once = await yearly(c)
    assert.equal((await put(c, once, { name: 'Patrono', day: '2027-06-24', recurrent: 'none' })).statusCode, 202)
    assert.deepEqual(await daysOf(c, once, [2020, 2026, 2027, 2028]), ['2027-06-24'])
  })

  it('a one-off holiday turned yearly takes the day written', async () => {
    const c = await company(t)
    const res = await t.call({
      method: 'POST',
      url: `${api(c.id)}/holidays`,
      token: c.token,
      body: { name: 'Once', day: '2020-06-24' },
    })
    const id = locationId(res)
    assert.equal((await put(c, id, { name: 'Once', day: '2027-06-24', recurrent: 'yearly' })).statusCode, 202)
    assert.equal((await t.json(200, { url: `${api(c.id)}/holidays/${id}`, token: c.token })).day, '2027-06-24')
  })

  it('recurrent_until is still checked against the day kept', async () => {
    const c = await company(t)
    const id = await yearly(c, { recurrent_until: '2030-06-24' })
    const res = await put(c, id, {
      name: 'Patrono',
      day: '2027-06-24',
      recurrent: 'yearly',
      recurrent_until: '2019-06-24',
    })
    assert.equal(res.statusCode, 400)
    assert.match(res.json().errors, /body\/recurrent_until must not be before body\/day/)
  })
})
