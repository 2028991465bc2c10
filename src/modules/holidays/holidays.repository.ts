import { sql, type Kysely } from 'kysely'
import { prepared } from '../../db/prepared.ts'
import type { DB, HolidaysTable } from '../../db/tables.ts'
import { keyset, preparedPages, type KeysetPage, type SortColumn } from '../../db/keyset.ts'
import { cutPage } from '../../http/pagination.ts'
import { companyExistsOn } from '../../db/company-exists.ts'

/** The defined holidays' order (26, 31): by day, then name, then id. */
const DEFINED_ORDER: SortColumn[] = [{ column: 'day', cast: 'date' }, { column: 'name' }, { column: 'id', cast: 'uuid' }]

export type HolidayValues = Pick<HolidaysTable, 'name' | 'day' | 'is_worker_holiday' | 'recurrent' | 'recurrent_until' | 'subsidiary_id'>

const COLUMNS = ['id', 'name', 'day', 'is_worker_holiday', 'recurrent', 'recurrent_until', 'subsidiary_id'] as const

/** Holidays a company defines; every query is bounded by company_id. */
export function createHolidaysRepository(db: Kysely<DB>) {
  const ofCompany = (companyId: string) => db.selectFrom('holidays').select(COLUMNS).where('company_id', '=', companyId)

  // Endpoint 30's two reads, compiled once (building them was a seventh of its CPU in the profile).
  const companyPlace = prepared(db, (companyId: string) =>
    db.selectFrom('companies').select(['country', 'province', 'timezone']).where('id', '=', companyId))
  const fallingIn = prepared(db, (companyId: string, from: string, to: string) =>
    ofCompany(companyId).where((eb) => eb.or([
      eb.and([eb('recurrent', '=', sql.lit('none')), eb('day', '>=', from), eb('day', '<=', to)]),
      eb.and([eb('recurrent', '=', sql.lit('yearly')), eb('day', '<=', to), eb.or([eb('recurrent_until', 'is', null), eb('recurrent_until', '>=', from)])]),
    ])))
  // The mix's holiday list and creation (issue 19), compiled once as well.
  const companyWidePages = preparedPages(db, DEFINED_ORDER, (companyId) => ofCompany(companyId).where('subsidiary_id', 'is', null))
  const holidayInsertion = prepared(db, (companyId: string, id: string, name: string, day: string, isWorkerHoliday: boolean, recurrent: HolidayValues['recurrent'],
    recurrentUntil: string | null, subsidiaryId: string | null, now: Date) => db.insertInto('holidays').values({
    company_id: companyId, id, name, day, is_worker_holiday: isWorkerHoliday, recurrent, recurrent_until: recurrentUntil, subsidiary_id: subsidiaryId,
    created_at: now, updated_at: now,
  }))

  return {
    /** What endpoint 30 needs of the company: where it is and what time it is there. */
    findCompanyPlace: async (companyId: string) => (await companyPlace(companyId))[0],

    /** Remembered per process once seen (src/db/company-exists.ts). */
    companyExists: companyExistsOn(db),

    subsidiaryExists: async (companyId: string, subsidiaryId: string) =>
      (await db.selectFrom('subsidiaries').select('id').where('company_id', '=', companyId).where('id', '=', subsidiaryId).executeTakeFirst()) !== undefined,

    insert: async (companyId: string, id: string, values: HolidayValues, now: Date) => {
      await holidayInsertion(companyId, id, values.name, values.day, values.is_worker_holiday, values.recurrent, values.recurrent_until, values.subsidiary_id, now)
    },

    async update(companyId: string, id: string, values: HolidayValues, now: Date): Promise<boolean> {
      const result = await db.updateTable('holidays').set({ ...values, updated_at: now })
        .where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },

    async delete(companyId: string, id: string): Promise<boolean> {
      const result = await db.deleteFrom('holidays').where('company_id', '=', companyId).where('id', '=', id).executeTakeFirst()
      return Number(result.numDeletedRows) > 0
    },

    find: (companyId: string, id: string) => ofCompany(companyId).where('id', '=', id).executeTakeFirst(),

    /** Company-wide holidays (null subsidiary) or those of one subsidiary, by day. */
    async listDefined(companyId: string, subsidiaryId: string | null, page: KeysetPage) {
      const compiled = subsidiaryId === null ? companyWidePages(companyId, page) : undefined
      const rows = await (compiled ?? keyset(ofCompany(companyId).where('subsidiary_id', subsidiaryId === null ? 'is' : '=', subsidiaryId), DEFINED_ORDER, page).execute())
      return cutPage(rows, page, (row) => [row.day, row.name, row.id])
    },

    /** Every holiday of the company and its subsidiaries that may fall in [from, to]: dated ones inside it, yearly ones begun and not ended by then. */
    listFallingIn: (companyId: string, from: string, to: string) => fallingIn(companyId, from, to),
  }
}

export type HolidaysRepository = ReturnType<typeof createHolidaysRepository>
