import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  firstToDeliver,
  instantOf,
  localDay,
  nextOccurrence,
  occurrenceAt,
  yearRange,
} from '../src/modules/communications/communications.recurrence.ts'

/** The wall-clock arithmetic behind deliveries; the HTTP tests cover it end to end. */
describe('communication recurrence', () => {
  const rome = 'Europe/Rome'
  const iso = (d: Date) => d.toISOString()
  const wall = (year: number, month: number, day: number, hour: number, minute = 0) => ({
    year,
    month,
    day,
    hour,
    minute,
    second: 0,
    ms: 0,
  })

  it('moves a local time that does not exist (spring forward) by the gap, and takes the first of a repeated one', () => {
    assert.equal(iso(instantOf(wall(2027, 3, 28, 2, 30), rome)), '2027-03-28T01:30:00.000Z') // 03:30 CEST
    assert.equal(iso(instantOf(wall(2027, 10, 31, 2, 30), rome)), '2027-10-31T00:30:00.000Z') // the first 02:30, CEST
    assert.equal(iso(instantOf(wall(2027, 7, 1, 9), rome)), '2027-07-01T07:00:00.000Z')
    assert.equal(iso(instantOf(wall(2027, 7, 1, 9), 'UTC')), '2027-07-01T09:00:00.000Z')
  })

  it('keeps a daily series at its local time across the gap, coming back to it the day after', () => {
    const first = instantOf(wall(2027, 3, 27, 2, 30), rome)
    assert.deepEqual(
      [0, 1, 2].map((i) => iso(occurrenceAt(first, 'daily', i, rome))),
      ['2027-03-27T01:30:00.000Z', '2027-03-28T01:30:00.000Z', '2027-03-29T00:30:00.000Z'],
    )
  })

  it('clamps monthly and yearly series to shorter months without drifting', () => {
    const first = new Date('2027-01-31T08:00:00Z')
    assert.deepEqual(
      [0, 1, 2, 3, 13].map((i) => localDay(occurrenceAt(first, 'monthly', i, rome), rome)),
      ['2027-01-31', '2027-02-28', '2027-03-31', '2027-04-30', '2028-02-29'],
    )
    const leap = new Date('2028-02-29T08:00:00Z')
    assert.deepEqual(
      [1, 4].map((i) => localDay(occurrenceAt(leap, 'yearly', i, rome), rome)),
      ['2029-02-28', '2032-02-29'],
    )
    assert.equal(iso(occurrenceAt(first, 'weekly', 2, rome)), '2027-02-14T08:00:00.000Z')
  })

  it('ends a series after recurrent_until, inclusive on the company calendar', () => {
    const series = {
      send_at: new Date('2027-01-01T23:30:00Z'),
      recurrent: 'daily' as const,
      recurrent_until: '2027-01-04',
    } // 00:30 on 2 January in Rome
    assert.equal(iso(nextOccurrence(series, 0, rome)!.at), '2027-01-02T23:30:00.000Z')
    assert.equal(nextOccurrence(series, 1, rome)?.index, 2)
    assert.equal(nextOccurrence(series, 2, rome), undefined) // would be 5 January in Rome
    assert.equal(nextOccurrence({ ...series, recurrent: 'none', recurrent_until: null }, 0, rome), undefined)
  })

  it('finds the occurrence a series scheduled late delivers first: the most recent one due, within the series', () => {
    const daily = {
      send_at: new Date('2026-01-01T08:00:00Z'),
      recurrent: 'daily' as const,
      recurrent_until: '2027-12-31',
    }
    assert.deepEqual(firstToDeliver(daily, new Date('2026-12-31T07:59:59Z'), rome), {
      at: new Date('2026-12-30T08:00:00Z'),
      index: 363,
    })
    assert.deepEqual(firstToDeliver(daily, new Date('2026-12-31T08:00:00Z'), rome), {
      at: new Date('2026-12-31T08:00:00Z'),
      index: 364,
    })
    // Ended: its last occurrence. Not yet begun, or not recurrent: send_at itself.
    assert.deepEqual(
      firstToDeliver({ ...daily, recurrent_until: '2026-01-03' }, new Date('2026-06-01T00:00:00Z'), rome),
      { at: new Date('2026-01-03T08:00:00Z'), index: 2 },
    )
    assert.deepEqual(firstToDeliver(daily, new Date('2025-12-01T00:00:00Z'), rome), { at: daily.send_at, index: 0 })
    assert.deepEqual(
      firstToDeliver({ ...daily, recurrent: 'none', recurrent_until: null }, new Date('2026-06-01T00:00:00Z'), rome),
      { at: daily.send_at, index: 0 },
    )
    // Monthly on the 31st, clamped in shorter months, found without walking month by month.
    const monthly = {
      send_at: new Date('2026-01-31T08:00:00Z'),
      recurrent: 'monthly' as const,
      recurrent_until: '2030-01-01',
    }
    assert.equal(localDay(firstToDeliver(monthly, new Date('2026-05-15T00:00:00Z'), rome).at, rome), '2026-04-30')
  })

  it('bounds a calendar year in the time zone', () => {
    assert.deepEqual(yearRange(2027, rome).map(iso), ['2026-12-31T23:00:00.000Z', '2027-12-31T23:00:00.000Z'])
    assert.deepEqual(yearRange(2027, 'America/New_York').map(iso), [
      '2027-01-01T05:00:00.000Z',
      '2028-01-01T05:00:00.000Z',
    ])
  })
})
