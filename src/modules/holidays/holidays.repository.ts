import { sql, type Kysely } from 'kysely'
import { prepared } from '../../db/prepared.ts'
import type { CompaniesTable, DB, HolidaysTable } from '../../db/tables.ts'
import { keyset, preparedPages, type KeysetPage, type SortColumn } from '../../db/keyset.ts'
import { cutPage } from '../../core/paging.ts'
import { companyExistsOn } from '../../db/company-exists.ts'

const DEFINED_ORDER: SortColumn[] = [
  { column: 'day', cast: 'date' },
  { column: 'name' },
  { column: 'id', cast: 'uuid' },
]

export type HolidayValues = Pick<
  HolidaysTable,
  'name' | 'day' | 'is_worker_holiday' | 'recurrent' | 'recurrent_until' | 'subsidiary_id'
>

const COLUMNS = ['id', 'name', 'day', 'is_worker_holiday', 'recurrent', 'recurrent_until', 'subsidiary_id'] as const

/** The company's place and one of its holidays (all null when it has none). */
type PlaceAndHoliday = Pick<CompaniesTable, 'country' | 'province' | 'timezone'> & {
  [K in (typeof COLUMNS)[number]]: HolidaysTable[K] | null
}

export function createHolidaysRepository(db: Kysely<DB>) {
  const ofCompany = (companyId: string) => db.selectFrom('holidays').select(COLUMNS).where('company_id', '=', companyId)

  // One prepared statement for the year's read: the company's place and its holidays that may fall
  // in [from, to]. No holidays: one row of nulls beside the place; no row: no such company.
  const placeAndFallingIn = prepared(
    db,
    (companyId: string, from: string, to: string) => sql<PlaceAndHoliday>`
    SELECT c.country, c.province, c.timezone, h.id, h.name, h.day, h.is_worker_holiday, h.recurrent, h.recurrent_until,
      h.subsidiary_id
    FROM companies c LEFT JOIN holidays h ON h.company_id = c.id AND (
      (h.recurrent = 'none' AND h.day >= ${from} AND h.day <= ${to})
      OR (h.recurrent = 'yearly' AND h.day <= ${to} AND (h.recurrent_until IS NULL OR h.recurrent_until >= ${from})))
    WHERE c.id = ${companyId}`,
  )
  const companyWidePages = preparedPages(db, DEFINED_ORDER, (companyId) =>
    ofCompany(companyId).where('subsidiary_id', 'is', null),
  )
  const holidayInsertion = prepared(
    db,
    (
      companyId: string,
      id: string,
      name: string,
      day: string,
      isWorkerHoliday: boolean,
      recurrent: HolidayValues['recurrent'],
      recurrentUntil: string | null,
      subsidiaryId: string | null,
      now: Date,
    ) =>
      db.insertInto('holidays').values({
        company_id: companyId,
        id,
        name,
        day,
        is_worker_holiday: isWorkerHoliday,
        recurrent,
        recurrent_until: recurrentUntil,
        subsidiary_id: subsidiaryId,
        created_at: now,
        updated_at: now,
      }),
  )

  return {
    /** Where the company is and every holiday that may fall in [from, to]; undefined: no such company. */
    async placeWithHolidaysFallingIn(companyId: string, from: string, to: string) {
      const rows = await placeAndFallingIn(companyId, from, to)
      const first = rows[0]
      if (!first) return undefined
      const holidays = rows.flatMap(
        ({ id, name, day, is_worker_holiday, recurrent, recurrent_until, subsidiary_id }) =>
          id === null
            ? []
            : [
                {
                  id,
                  name: name!,
                  day: day!,
                  is_worker_holiday: is_worker_holiday!,
                  recurrent: recurrent!,
                  recurrent_until,
                  subsidiary_id,
                },
              ],
      )
      return { place: { country: first.country, province: first.province, timezone: first.timezone }, holidays }
    },

    companyExists: companyExistsOn(db),

    subsidiaryExists: async (companyId: string, subsidiaryId: string) =>
      (await db
        .selectFrom('subsidiaries')
        .select('id')
        .where('company_id', '=', companyId)
        .where('id', '=', subsidiaryId)
        .executeTakeFirst()) !== undefined,

    insert: async (companyId: string, id: string, values: HolidayValues, now: Date) => {
      await holidayInsertion(
        companyId,
        id,
        values.name,
        values.day,
        values.is_worker_holiday,
        values.recurrent,
        values.recurrent_until,
        values.subsidiary_id,
        now,
      )
    },

    async update(companyId: string, id: string, values: HolidayValues, now: Date): Promise<boolean> {
      const result = await db
        .updateTable('holidays')
        .set({ ...values, updated_at: now })
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },

    async delete(companyId: string, id: string): Promise<boolean> {
      const result = await db
        .deleteFrom('holidays')
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .executeTakeFirst()
      return Number(result.numDeletedRows) > 0
    },

    find: (companyId: string, id: string) => ofCompany(companyId).where('id', '=', id).executeTakeFirst(),

    /** Company-wide holidays (null subsidiary) or one subsidiary's. */
    async listDefined(companyId: string, subsidiaryId: string | null, page: KeysetPage) {
      const compiled = subsidiaryId === null ? companyWidePages(companyId, page) : undefined
      const rows = await (compiled ??
        keyset(
          ofCompany(companyId).where('subsidiary_id', subsidiaryId === null ? 'is' : '=', subsidiaryId),
          DEFINED_ORDER,
          page,
        ).execute())
      return cutPage(rows, page, (row) => [row.day, row.name, row.id])
    },
  }
}

export type HolidaysRepository = ReturnType<typeof createHolidaysRepository>
