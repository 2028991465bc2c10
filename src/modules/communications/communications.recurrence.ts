import type { Recurrence } from '../../db/tables.ts'
import { BoundedMap } from '../../core/bounded-map.ts'

/**
 * Occurrences of a communication, computed on the wall clock of the company's time zone: "every
 * month at 09:00" stays 09:00 local across daylight-saving changes. Each occurrence is computed
 * from the first one (never from the previous one), so a monthly series on the 31st lands on the
 * last day of shorter months and comes back to the 31st afterwards; a yearly one on 29 February
 * lands on 28 February in common years.
 */

interface Wall { year: number; month: number; day: number; hour: number; minute: number; second: number; ms: number }

const DAY_MS = 86_400_000
/**
 * A formatter per time zone as the company wrote it: the same zone in other letter cases is
 * another key (Intl accepts them all), so the memory is bounded.
 */
const formatters = new BoundedMap<string, Intl.DateTimeFormat>(1000)

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    })
    formatters.set(timeZone, f)
  }
  return f
}

/** The wall-clock reading of an instant in a time zone. */
export function wallOf(at: Date, timeZone: string): Wall {
  const parts: Record<string, number> = {}
  for (const p of formatter(timeZone).formatToParts(at)) if (p.type !== 'literal') parts[p.type] = Number(p.value)
  const ms = ((at.getTime() % 1000) + 1000) % 1000
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour! % 24, minute: parts.minute!, second: parts.second!, ms }
}

/** The time zone's offset from UTC at an instant, in milliseconds (Rome in summer: +7,200,000). */
function offsetAt(utcMs: number, timeZone: string): number {
  const w = wallOf(new Date(utcMs), timeZone)
  const whole = Math.floor(utcMs / 1000) * 1000
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - whole
}

/**
 * The instant a wall-clock reading names in a time zone. A reading that happens twice (clocks
 * set back) is the first of the two; one that never happens (clocks set forward) moves forward
 * by the gap, so 02:30 on the spring change is 03:30 — what a person whose alarm is set to 02:30
 * would see. (The choice of Temporal's `compatible` disambiguation.)
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

/** The occurrence at `index` (0: the first, `send_at` itself) of a series. */
export function occurrenceAt(first: Date, recurrent: Recurrence, index: number, timeZone: string): Date {
  if (index === 0 || recurrent === 'none') return first
  const w = wallOf(first, timeZone)
  switch (recurrent) {
    case 'daily':
    case 'weekly': {
      const date = new Date(Date.UTC(w.year, w.month - 1, w.day + index * (recurrent === 'daily' ? 1 : 7)))
      return instantOf({ ...w, year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() }, timeZone)
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

/** `YYYY-MM-DD` of an instant on the time zone's calendar. */
export function localDay(at: Date, timeZone: string): string {
  const w = wallOf(at, timeZone)
  return `${String(w.year).padStart(4, '0')}-${String(w.month).padStart(2, '0')}-${String(w.day).padStart(2, '0')}`
}

/**
 * The next occurrence of a series after the one at `index`, or undefined when the series ends
 * (its day on the company's calendar is after `recurrent_until`, which is inclusive).
 */
export function nextOccurrence(
  series: { send_at: Date; recurrent: Recurrence; recurrent_until: string | null },
  index: number,
  timeZone: string,
): { at: Date; index: number } | undefined {
  if (series.recurrent === 'none' || series.recurrent_until === null) return undefined
  const at = occurrenceAt(series.send_at, series.recurrent, index + 1, timeZone)
  // Days compare as text only with four-digit years; recurrent_until never goes past 9999.
  if (at.getUTCFullYear() > 9999) return undefined
  return localDay(at, timeZone) <= series.recurrent_until ? { at, index: index + 1 } : undefined
}

/** The instants where a calendar year begins and ends in a time zone: [start, end). */
export function yearRange(year: number, timeZone: string): [Date, Date] {
  const start = { year, month: 1, day: 1, hour: 0, minute: 0, second: 0, ms: 0 }
  return [instantOf(start, timeZone), instantOf({ ...start, year: year + 1 }, timeZone)]
}

/**
 * The occurrence a series delivers first when it is scheduled at `now`: its first one if that is
 * still to come, else the most recent one already due (the earlier ones collapse into it: a daily
 * series scheduled ten days late delivers one message, not ten). Found by bisection over the
 * index, so a series far in the past costs a few dozen occurrence computations.
 */
export function firstToDeliver(
  series: { send_at: Date; recurrent: Recurrence; recurrent_until: string | null },
  now: Date,
  timeZone: string,
): { at: Date; index: number } {
  if (series.send_at > now || series.recurrent === 'none' || series.recurrent_until === null) return { at: series.send_at, index: 0 }
  const until = series.recurrent_until
  // Both conditions hold up to some index and fail after it (occurrences only move forward).
  const delivers = (index: number) => {
    const at = occurrenceAt(series.send_at, series.recurrent, index, timeZone)
    return at <= now && at.getUTCFullYear() <= 9999 && localDay(at, timeZone) <= until
  }
  let low = 0 // delivers(low) holds: the first occurrence is due and in the series
  let high = 1
  while (delivers(high)) { low = high; high *= 2 }
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2)
    if (delivers(mid)) low = mid
    else high = mid
  }
  return { at: occurrenceAt(series.send_at, series.recurrent, low, timeZone), index: low }
}
