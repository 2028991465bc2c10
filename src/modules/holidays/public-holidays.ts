import { createRequire } from 'node:module'
import type DateHolidays from 'date-holidays'
import { addDays } from './recurrence.ts'
import { BoundedMap } from '../../core/bounded-map.ts'

type Holidays = DateHolidays
let holidaysClass: typeof DateHolidays | undefined

/**
 * date-holidays (its data is ~20 MB in memory and ~0.2 s to load) is loaded at the first use of
 * endpoint 30, not at start-up: most processes serve it rarely, and start-up time and idle memory
 * have budgets (bench/RESULTS.md). Loaded with require, so the calendar's API stays synchronous.
 */
function Holidays(...args: string[]): Holidays {
  holidaysClass ??= createRequire(import.meta.url)('date-holidays') as typeof DateHolidays
  return new (holidaysClass as unknown as new (...a: string[]) => Holidays)(...args)
}

/** A public holiday on one day, as computed from the date-holidays data. */
export interface PublicHoliday { readonly day: string; readonly name: string }

/** Where public holidays are computed: a country, and its state and region where the data knows them. */
export interface Place { readonly country: string; readonly state?: string; readonly region?: string }

// The data's types: "public" is a day off by law. "bank" (bank closures, half days such as
// Heiliger Abend in Germany), "optional", "school" and "observance" are not days off for workers.
const DAY_OFF_TYPES = new Set(['public'])
const DAY_MS = 86_400_000

/**
 * Public holidays of the date-holidays package, computed once per (country, state, region,
 * year) and then served from memory: building a calendar costs ~10 ms and a year ~5 ms, far
 * above the budget of endpoint 30. The data is immutable, so nothing ever needs invalidating;
 * the places and years kept are bounded (src/core/bounded-map.ts).
 */
export function createPublicHolidayCalendar(options: { maxKept?: number } = {}) {
  // Places and years, each: at most this many kept.
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
  // Places are keyed by the province a company writes, so they are bounded as the years are.
  const places = new BoundedMap<string, Place | null>(maxKept)
  const years = new BoundedMap<string, readonly PublicHoliday[]>(maxKept)

  /**
   * The country, narrowed to the company's province when the data knows it as a state (DE "BY")
   * or as a region of a state (IT "RM", under Lazio), by code or by name; otherwise the country
   * alone. Null for a country the data does not have.
   */
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
      Object.entries(entries).find(([code, name]) => code.toUpperCase() === wanted || name.toUpperCase() === wanted)?.[0]
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
      calendar = p.region ? Holidays(p.country, p.state!, p.region) : p.state ? Holidays(p.country, p.state) : Holidays(p.country)
      calendars.set(key, calendar)
    }
    return calendar
  }

  /** One entry per day (the first name where the data has two), in day order. */
  function compute(p: Place, year: number): readonly PublicHoliday[] {
    const byDay = new Map<string, PublicHoliday>()
    const prefix = `${year}-`
    for (const holiday of calendarOf(p).getHolidays(year) || []) {
      if (!DAY_OFF_TYPES.has(holiday.type)) continue
      // A holiday of several days spans [start, end); most span one.
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

    /** The public holidays of the country (and its state or region, see place) in that year. */
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
