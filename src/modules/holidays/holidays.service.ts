import type { StoredObject } from '../events/event-objects.ts'
import { randomUUID } from 'node:crypto'
import type { KeysetPage } from '../../db/keyset.ts'
import { pageInMemory, type Paged } from '../../core/paging.ts'
import type { Clock } from '../../core/clock.ts'
import { isRealDay, todayIn } from '../../core/days.ts'
import { NotFound, ValidationError } from '../../core/errors.ts'
import type { HolidaysRepository, HolidayValues } from './holidays.repository.ts'
import type { DatedHoliday, Holiday, HolidayInput } from './holidays.schemas.ts'
import type { PublicHolidayCalendar } from './public-holidays.ts'
import { keepsSeriesStart, occurrenceIn, type Recurring } from './recurrence.ts'

// Ties on a day: the company's own first, then a subsidiary's, then the public one.
const SOURCE_ORDER = { company: 0, subsidiary: 1, public: 2 } as const

export function createHolidaysService(deps: {
  repo: HolidaysRepository
  publicHolidays: PublicHolidayCalendar
  clock: Clock
}) {
  const { repo, clock, publicHolidays } = deps

  async function requireCompany(companyId: string) {
    if (!(await repo.companyExists(companyId))) throw new NotFound('Company')
  }

  // A yearly holiday written back from all_holidays carries the date of the year read: with the
  // series' month and day it keeps the stored first day; another month or day moves the series.
  async function valuesOf(companyId: string, input: HolidayInput, stored?: Recurring): Promise<HolidayValues> {
    const recurrent = input.recurrent ?? 'none'
    if (stored && keepsSeriesStart(stored, recurrent, input.day)) input = { ...input, day: stored.day }
    const until = input.recurrent_until ?? null
    if (!isRealDay(input.day)) throw new ValidationError('body/day must be a real calendar day (YYYY-MM-DD)')
    if (until !== null) {
      if (!isRealDay(until)) throw new ValidationError('body/recurrent_until must be a real calendar day (YYYY-MM-DD)')
      if (recurrent !== 'yearly')
        throw new ValidationError('body/recurrent_until is allowed only with recurrent "yearly"')
      if (until < input.day) throw new ValidationError('body/recurrent_until must not be before body/day')
    }
    const subsidiaryId = input.subsidiary_id ?? null
    if (subsidiaryId !== null && !(await repo.subsidiaryExists(companyId, subsidiaryId))) {
      throw new ValidationError('body/subsidiary_id is not a subsidiary of this company')
    }
    return {
      name: input.name,
      day: input.day,
      is_worker_holiday: input.is_worker_holiday ?? true,
      recurrent,
      recurrent_until: until,
      subsidiary_id: subsidiaryId,
    }
  }

  return {
    async create(companyId: string, input: HolidayInput): Promise<string> {
      await requireCompany(companyId)
      const id = randomUUID()
      await repo.insert(companyId, id, await valuesOf(companyId, input), clock.now())
      return id
    },

    /** A field left out takes its default. */
    async update(companyId: string, holidayId: string, input: HolidayInput) {
      const stored = await repo.find(companyId, holidayId)
      if (!stored) throw new NotFound('Holiday')
      if (!(await repo.update(companyId, holidayId, await valuesOf(companyId, input, stored), clock.now())))
        throw new NotFound('Holiday')
    },

    async delete(companyId: string, holidayId: string) {
      if (!(await repo.delete(companyId, holidayId))) throw new NotFound('Holiday')
    },

    async get(companyId: string, holidayId: string): Promise<Holiday> {
      const row = await repo.find(companyId, holidayId)
      if (!row) throw new NotFound('Holiday')
      return holidayView(row)
    },

    holidayEventObject: (stored: StoredObject): Holiday => holidayView(stored as Holiday),

    /** The year in every time zone at once; undefined around New Year, when zones disagree. */
    yearEverywhere(): number | undefined {
      const [west, east] = yearsSomewhere(clock.now())
      return west === east ? west : undefined
    },

    async listCompanyWide(companyId: string, page: KeysetPage): Promise<Paged<Holiday>> {
      await requireCompany(companyId)
      return repo.listDefined(companyId, null, page)
    },

    async listOfSubsidiary(companyId: string, subsidiaryId: string, page: KeysetPage): Promise<Paged<Holiday>> {
      if (!(await repo.subsidiaryExists(companyId, subsidiaryId))) throw new NotFound('Subsidiary')
      return repo.listDefined(companyId, subsidiaryId, page)
    },

    /**
     * Every holiday date of the year: the company's, its subsidiaries' and the country's public ones,
     * merged here from three sources, so a page is cut from the sorted year (a few hundred dates at most).
     */
    async allOfYear(
      companyId: string,
      requestedYear: number | undefined,
      page: KeysetPage = {},
    ): Promise<Paged<DatedHoliday>> {
      // Without `year` the company's year depends on its time zone, read in the same statement: read
      // every year it may be, and occurrenceIn keeps the right one.
      const now = clock.now()
      const [first, last] = requestedYear !== undefined ? [requestedYear, requestedYear] : yearsSomewhere(now)
      const found = await repo.placeWithHolidaysFallingIn(
        companyId,
        `${String(first).padStart(4, '0')}-01-01`,
        `${String(last).padStart(4, '0')}-12-31`,
      )
      if (!found) throw new NotFound('Company')
      const { place: company, holidays: defined } = found
      const year = requestedYear ?? Number(todayIn(company.timezone, now).slice(0, 4))
      const entries: DatedHoliday[] = []
      for (const holiday of defined) {
        const day = occurrenceIn(holiday, year)
        // Spelled out, not spread: adding properties after a spread is slow on V8.
        if (day) {
          entries.push({
            id: holiday.id,
            name: holiday.name,
            day,
            is_worker_holiday: holiday.is_worker_holiday,
            recurrent: holiday.recurrent,
            recurrent_until: holiday.recurrent_until,
            subsidiary_id: holiday.subsidiary_id,
            source: holiday.subsidiary_id === null ? 'company' : 'subsidiary',
          })
        }
      }
      for (const p of publicHolidays.forYear(company.country, company.province, year)) {
        entries.push({
          id: null,
          name: p.name,
          day: p.day,
          is_worker_holiday: true,
          recurrent: 'none',
          recurrent_until: null,
          subsidiary_id: null,
          source: 'public',
        })
      }
      return pageInMemory(entries.sort(byDaySourceName), page, datedKey)
    },
  }
}

function yearsSomewhere(now: Date): [number, number] {
  return [
    new Date(now.getTime() - 12 * 3_600_000).getUTCFullYear(),
    new Date(now.getTime() + 14 * 3_600_000).getUTCFullYear(),
  ]
}

/** A public holiday has no id: ''. */
export const datedKey = (h: DatedHoliday) => [h.day, SOURCE_ORDER[h.source], h.name, h.id ?? '']

function byDaySourceName(a: DatedHoliday, b: DatedHoliday): number {
  if (a.day !== b.day) return a.day < b.day ? -1 : 1
  if (a.source !== b.source) return SOURCE_ORDER[a.source] - SOURCE_ORDER[b.source]
  if (a.name !== b.name) return a.name < b.name ? -1 : 1
  return (a.id ?? '') < (b.id ?? '') ? -1 : (a.id ?? '') > (b.id ?? '') ? 1 : 0
}

export type HolidaysService = ReturnType<typeof createHolidaysService>

function holidayView(row: Holiday): Holiday {
  return {
    id: row.id,
    name: row.name,
    day: row.day,
    is_worker_holiday: row.is_worker_holiday,
    recurrent: row.recurrent,
    recurrent_until: row.recurrent_until,
    subsidiary_id: row.subsidiary_id,
  }
}
