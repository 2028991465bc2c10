import type { Recurrence } from '../../db/tables.ts'
import { BoundedMap } from '../../core/bounded-map.ts'

/**
 * Occurrences on the wall clock of the company's time zone, so 09:00 stays 09:00 across DST. Each is
 * computed from the first, never the previous, so a monthly series on the 31st returns to the 31st
 * after shorter months.
 */

interface Wall {
  year: number
  month: number
  day: number
  hour: number
  minute: number
  second: number
  ms: number
}

const DAY_MS = 86_400_000
// Keyed as the company wrote the zone; other letter cases are other keys, so the map is bounded.
const formatters = new BoundedMap<string, Intl.DateTimeFormat>(1000)

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
    formatters.set(timeZone, f)
  }
  return f
}

export function wallOf(at: Date, timeZone: string): Wall {
  const parts: Record<string, number> = {}
  for (const p of formatter(timeZone).formatToParts(at)) if (p.type !== 'literal') parts[p.type] = Number(p.value)
  const ms = ((at.getTime() % 1000) + 1000) % 1000
  return {
    year: parts.year!,
    month: parts.month!,
    day: parts.day!,
    hour: parts.hour! % 24,
    minute: parts.minute!,
    second: parts.second!,
    ms,
  }
}

function offsetAt(utcMs: number, timeZone: string): number {
  const w = wallOf(new Date(utcMs), timeZone)
  const whole = Math.floor(utcMs / 1000) * 1000
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - whole
}

/**
 * A repeated reading (clocks set back) is the first; a skipped one (clocks set forward) moves
 * forward by the gap, as Temporal's `compatible` disambiguation.
 */
export function instantOf(w: Wall, timeZone: string): Date {
  const wall = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second, w.ms)
  const before = offsetAt(wall - DAY_MS, timeZone)
  const after = offsetAt(wall + DAY_MS, timeZone)
  const matching = [...new Set([before, after])]
    .map((offset) => wall - offset)
    .filter((utc) => offsetAt(utc, timeZone) === wall - utc)
    .sort((a, b) => a - b)
  return new Date(matching[0] ?? wall - before)
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate()
}

/** Index 0 is `send_at` itself. */
export function occurrenceAt(first: Date, recurrent: Recurrence, index: number, timeZone: string): Date {
  if (index === 0 || recurrent === 'none') return first
  const w = wallOf(first, timeZone)
  switch (recurrent) {
    case 'daily':
    case 'weekly': {
      const date = new Date(Date.UTC(w.year, w.month - 1, w.day + index * (recurrent === 'daily' ? 1 : 7)))
      return instantOf(
        { ...w, year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() },
        timeZone,
      )
    }
    case 'monthly': {
      const months = w.month - 1 + index
      const year = w.year + Math.floor(months / 12)
      const month = (months % 12) + 1
      return instantOf({ ...w, year, month, day: Math.min(w.day, daysInMonth(year, month)) }, timeZone)
    }
    case 'yearly': {
      const year = w.year + index
      return instantOf({ ...w, year, day: Math.min(w.day, daysInMonth(year, w.month)) }, timeZone)
    }
  }
}

export function localDay(at: Date, timeZone: string): string {
  const w = wallOf(at, timeZone)
  return `${String(w.year).padStart(4, '0')}-${String(w.month).padStart(2, '0')}-${String(w.day).padStart(2, '0')}`
}

/** undefined when the series ends (its day is after `recurrent_until`, inclusive). */
export function nextOccurrence(
  series: { send_at: Date; recurrent: Recurrence; recurrent_until: string | null },
  index: number,
  timeZone: string,
): { at: Date; index: number } | undefined {
  if (series.recurrent === 'none' || series.recurrent_until === null) return undefined
  const at = occurrenceAt(series.send_at, series.recurrent, index + 1, timeZone)
  // Days compare as text only with four-digit years.
  if (at.getUTCFullYear() > 9999) return undefined
  return localDay(at, timeZone) <= series.recurrent_until ? { at, index: index + 1 } : undefined
}

/** [start, end) of a calendar year in a time zone. */
export function yearRange(year: number, timeZone: string): [Date, Date] {
  const start = { year, month: 1, day: 1, hour: 0, minute: 0, second: 0, ms: 0 }
  return [instantOf(start, timeZone), instantOf({ ...start, year: year + 1 }, timeZone)]
}

/**
 * The first occurrence to deliver when scheduled at `now`: the first if still to come, else the most
 * recent one due (earlier ones collapse into it). Bisection keeps a series far in the past cheap.
 */
export function firstToDeliver(
  series: { send_at: Date; recurrent: Recurrence; recurrent_until: string | null },
  now: Date,
  timeZone: string,
): { at: Date; index: number } {
  if (series.send_at > now || series.recurrent === 'none' || series.recurrent_until === null)
    return { at: series.send_at, index: 0 }
  const until = series.recurrent_until
  const delivers = (index: number) => {
    const at = occurrenceAt(series.send_at, series.recurrent, index, timeZone)
    return at <= now && at.getUTCFullYear() <= 9999 && localDay(at, timeZone) <= until
  }
  let low = 0 // delivers(low) holds: the first occurrence is due and in the series
  let high = 1
  while (delivers(high)) {
    low = high
    high *= 2
  }
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2)
    if (delivers(mid)) low = mid
    else high = mid
  }
  return { at: occurrenceAt(series.send_at, series.recurrent, low, timeZone), index: low }
}
