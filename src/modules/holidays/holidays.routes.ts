import { Type } from 'typebox'
import type { App } from '../../http/app-types.ts'
import { accepted } from '../../http/app-types.ts'
import type { ReadCache } from '../../cache/read-cache.ts'
import { replyCached } from '../../cache/cached-reads.ts'
import { Accepted, CompanyParams } from '../../http/schemas.ts'
import { answerPage, listResponse, pageQuery, readPage } from '../../http/pagination.ts'
import type { HolidaysService } from './holidays.service.ts'
import {
  AllHolidaysQuery,
  DatedHoliday,
  Holiday,
  HolidayInput,
  HolidayParams,
  SubsidiaryHolidaysParams,
} from './holidays.schemas.ts'

const PAGING = 'Pages with `limit` and `cursor`; without `limit`, the whole list.'
const AS_DEFINED = 'As defined, sorted by day, then name, then id.'
const DEFINED_KEY = ['day', 'text', 'uuid'] as const

const BASE = '/api/v1/companies'

const WRITE_RULES =
  '`day` and `recurrent_until` must be real days (YYYY-MM-DD); `recurrent_until` only with `recurrent` "yearly" ' +
  'and not before `day`; `subsidiary_id` (null: company-wide) must be a subsidiary of the company. All 400 ' +
  'otherwise.'

/** Holidays: the company's and its subsidiaries' definitions (26, 31, writes) and a year's calendar (30). */
export async function holidaysRoutes(
  app: App,
  { service, cache }: { service: HolidaysService; cache: Pick<ReadCache, 'get'> },
) {
  const tags = ['Holidays']
  const access = { area: 'holiday' }
  // What the writes change among the tables cached reads show (src/cache/read-areas.ts).
  const changes = ['holidays'] as const
  const holidays = `${BASE}/:company_id/holidays`
  const holiday = `${holidays}/:holiday_id`

  app.post(
    holidays,
    {
      config: { access, changes },
      schema: {
        operationId: 'createHoliday',
        tags,
        summary: 'Define a holiday of the company or of one of its subsidiaries',
        description: `${WRITE_RULES} Answers 202 with \`Location\` of the new holiday.`,
        params: CompanyParams,
        body: HolidayInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      const { company_id } = request.params
      return accepted(reply, `${BASE}/${company_id}/holidays/${await service.create(company_id, request.body)}`)
    },
  )

  app.get(
    holidays,
    {
      config: { access },
      schema: {
        operationId: 'listCompanyHolidays',
        tags,
        summary: 'The company-wide holidays as defined (26)',
        description:
          `Holidays with no subsidiary, as defined (a yearly one appears once, on its first day), sorted by day, ` +
          `then name, then id. ${PAGING}`,
        params: CompanyParams,
        querystring: pageQuery(),
        response: { 200: listResponse(Type.Array(Holiday)) },
      },
    },
    async (request, reply) =>
      replyCached(reply, cache, request.params.company_id, 'holidays', request.url, async () => {
        const page = readPage(request, DEFINED_KEY)
        return answerPage(request, reply, page, await service.listCompanyWide(request.params.company_id, page))
      }),
  )

  app.get(
    holiday,
    {
      config: { access },
      schema: {
        operationId: 'getHoliday',
        tags,
        summary: 'Get a holiday',
        params: HolidayParams,
        response: { 200: Holiday },
      },
    },
    async (request) => service.get(request.params.company_id, request.params.holiday_id),
  )

  app.put(
    holiday,
    {
      config: { access, changes },
      schema: {
        operationId: 'updateHoliday',
        tags,
        summary: 'Replace a holiday',
        description:
          `A field left out takes its default: is_worker_holiday true, recurrent "none", recurrent_until and ` +
          `subsidiary_id null. ${WRITE_RULES}`,
        params: HolidayParams,
        body: HolidayInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      await service.update(request.params.company_id, request.params.holiday_id, request.body)
      return accepted(reply)
    },
  )

  app.delete(
    holiday,
    {
      config: { access, changes },
      schema: {
        operationId: 'deleteHoliday',
        tags,
        summary: 'Delete a holiday',
        params: HolidayParams,
        response: { 204: Type.Null({ description: 'Deleted' }) },
      },
    },
    async (request, reply) => {
      await service.delete(request.params.company_id, request.params.holiday_id)
      return reply.code(204).send(null)
    },
  )

  app.get(
    `${BASE}/:company_id/subsidiaries/:subsidiary_id/holidays`,
    {
      config: { access },
      schema: {
        operationId: 'listSubsidiaryHolidays',
        tags,
        summary: 'The holidays defined for a subsidiary (31)',
        description: `${AS_DEFINED} A subsidiary that is not the company's: 404. ${PAGING}`,
        params: SubsidiaryHolidaysParams,
        querystring: pageQuery(),
        response: { 200: listResponse(Type.Array(Holiday)) },
      },
    },
    async (request, reply) =>
      replyCached(reply, cache, request.params.company_id, 'subsidiary_holidays', request.url, async () => {
        const page = readPage(request, DEFINED_KEY)
        return answerPage(
          request,
          reply,
          page,
          await service.listOfSubsidiary(request.params.company_id, request.params.subsidiary_id, page),
        )
      }),
  )

  app.get(
    `${BASE}/:company_id/all_holidays`,
    {
      config: { access },
      schema: {
        operationId: 'listAllHolidays',
        tags,
        summary: 'Every holiday date of a year (30)',
        description:
          "One entry per date on which a holiday falls in `year` (default: the current year in the company's " +
          "time zone): the company's and its subsidiaries' holidays, yearly ones expanded up to " +
          '`recurrent_until` (one on 29 February only in leap years), and the public holidays (type "public" ' +
          "of the date-holidays data) of the company's country, narrowed to its `province` where the data knows " +
          'it as a state or region. `source` says which; `id` is the defining holiday (null for a public one). ' +
          'Sorted by day, then company, subsidiary, public, then name, then id. Pages with `limit` and `cursor` ' +
          'over that merged, sorted year; without `limit`, the whole year.',
        params: CompanyParams,
        querystring: AllHolidaysQuery,
        response: { 200: listResponse(Type.Array(DatedHoliday)) },
      },
    },
    async (request, reply) => {
      const load = async () => {
        // The key of datedKey: day, source rank, name, id ('' for a public holiday).
        const page = readPage(request, ['day', 'int', 'text', 'text'])
        return answerPage(
          request,
          reply,
          page,
          await service.allOfYear(request.params.company_id, request.query.year, page),
        )
      }
      // Without `year`, the year of today in the company's time zone: cached under the year it is
      // in every time zone, read from the database on the day or so around New Year when it is not.
      const year = request.query.year ?? service.yearEverywhere()
      if (year === undefined) return load()
      return replyCached(reply, cache, request.params.company_id, 'all_holidays', `${year} ${request.url}`, load)
    },
  )
}
