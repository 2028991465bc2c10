import { createRequire } from 'node:module'
import type DateHolidays from 'date-holidays'
import { addDays } from './recurrence.ts'
import { BoundedMap } from '../../core/bounded-map.ts'

type Holidays = DateHolidays
let holidaysClass: typeof DateHolidays | undefined

// date-holidays is large and slow to load, so it loads at the first use, not at start-up;
// require keeps the calendar's API synchronous.
function Holidays(...args: string[]): Holidays {
  holidaysClass ??= createRequire(import.meta.url)('date-holidays') as typeof DateHolidays
  return new (holidaysClass as unknown as new (...a: string[]) => Holidays)(...args)
}

export interface PublicHoliday {
  readonly day: string
  readonly name: string
}

export interface Place {
  readonly country: string
  readonly state?: string
  readonly region?: string
}

// Only "public" is a day off by law; "bank", "optional", "school" and "observance" are not.
const DAY_OFF_TYPES = new Set(['public'])
const DAY_MS = 86_400_000

/**
 * Public holidays of date-holidays, computed once per place and year and then served from memory
 * (building a calendar is slow). The data never changes; the places and years kept are bounded.
 */
export function createPublicHolidayCalendar(options: { maxKept?: number } = {}) {
  const maxKept = options.maxKept ?? 5_000
  let loaded: { reference: Holidays; countries: Set<string> } | undefined
  const data = () => {
    if (!loaded) {
      const reference = Holidays()
      loaded = { reference, countries: new Set(Object.keys(reference.getCountries())) }
    }
    return loaded
  }
  const calendars = new Map<string, Holidays>()
  // Keyed by the province a company writes, so bounded as the years are.
  const places = new BoundedMap<string, Place | null>(maxKept)
  const years = new BoundedMap<string, readonly PublicHoliday[]>(maxKept)

  /** Narrowed to the company's province where the data knows it (DE "BY", IT "RM"); null: unknown country. */
  function place(country: string, province: string | null): Place | null {
    const key = `${country}|${province ?? ''}`
    let found = places.get(key)
    if (found === undefined) {
      found = resolve(country, province)
      places.set(key, found)
    }
    return found
  }

  function resolve(country: string, province: string | null): Place | null {
    const { reference, countries } = data()
    if (!countries.has(country)) return null
    const wanted = province?.trim().toUpperCase()
    if (!wanted) return { country }
    const matches = (entries: Record<string, string>) =>
      Object.entries(entries).find(
        ([code, name]) => code.toUpperCase() === wanted || name.toUpperCase() === wanted,
      )?.[0]
    const states = reference.getStates(country) ?? {}
    const state = matches(states)
    if (state) return { country, state }
    for (const candidate of Object.keys(states)) {
      const region = matches(reference.getRegions(country, candidate) ?? {})
      if (region) return { country, state: candidate, region }
    }
    return { country }
  }

  function calendarOf(p: Place): Holidays {
    const key = `${p.country}|${p.state ?? ''}|${p.region ?? ''}`
    let calendar = calendars.get(key)
    if (!calendar) {
      calendar = p.region
        ? Holidays(p.country, p.state!, p.region)
        : p.state
          ? Holidays(p.country, p.state)
          : Holidays(p.country)
      calendars.set(key, calendar)
    }
    return calendar
  }

  /** One entry per day (the first name where the data has two). */
  function compute(p: Place, year: number): readonly PublicHoliday[] {
    const byDay = new Map<string, PublicHoliday>()
    const prefix = `${year}-`
    for (const holiday of calendarOf(p).getHolidays(year) || []) {
      if (!DAY_OFF_TYPES.has(holiday.type)) continue
      const span = Math.max(1, Math.round((holiday.end.getTime() - holiday.start.getTime()) / DAY_MS))
      const first = holiday.date.slice(0, 10)
      for (let i = 0; i < span; i++) {
        const day = addDays(first, i)
        if (day.startsWith(prefix) && !byDay.has(day)) byDay.set(day, Object.freeze({ day, name: holiday.name }))
      }
    }
    return Object.freeze([...byDay.values()].sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0)))
  }

  return {
    place,

    forYear(country: string, province: string | null, year: number): readonly PublicHoliday[] {
      const p = place(country, province)
      if (!p) return []
      const key = `${p.country}|${p.state ?? ''}|${p.region ?? ''}|${year}`
      let days = years.get(key)
      if (!days) {
        days = compute(p, year)
        years.set(key, days)
      }
      return days
    },
  }
}

export type PublicHolidayCalendar = ReturnType<typeof createPublicHolidayCalendar>
