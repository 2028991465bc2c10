import { isRealDay } from '../../core/days.ts'

/** What a defined holiday needs to be placed on the calendar of a year. */
export interface Recurring {
  day: string
  recurrent: 'none' | 'yearly'
  recurrent_until: string | null
}

/**
 * A yearly holiday repeats its month and day up to `recurrent_until` inclusive. One on 29 February
 * falls only in leap years: another date would be one nobody chose.
 */
export function occurrenceIn(holiday: Recurring, year: number): string | undefined {
  const first = Number(holiday.day.slice(0, 4))
  if (holiday.recurrent === 'none') return first === year ? holiday.day : undefined
  if (year < first) return undefined
  const day = `${String(year).padStart(4, '0')}${holiday.day.slice(4)}`
  if (!isRealDay(day)) return undefined
  if (holiday.recurrent_until !== null && day > holiday.recurrent_until) return undefined
  return day
}

/**
 * True when a yearly holiday written with `day` is the stored yearly series itself (same month
 * and day, whatever the year): the write keeps the series' first day instead of moving it.
 */
export function keepsSeriesStart(stored: Recurring, recurrent: Recurring['recurrent'], day: string): boolean {
  return stored.recurrent === 'yearly' && recurrent === 'yearly' && day.slice(4) === stored.day.slice(4)
}

/** `YYYY-MM-DD` plus n days, in UTC so no time zone shifts it. */
export function addDays(day: string, n: number): string {
  const [y, m, d] = day.split('-').map(Number) as [number, number, number]
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10)
}
