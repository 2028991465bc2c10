import { PageFields } from '../../http/pagination.ts'
import { Type, type Static } from 'typebox'
import { Day, Name, Nullable, ReadableDay, Uuid, Year } from '../../http/schemas.ts'

const Ignored = Type.Optional(Type.Unknown({ description: 'Server-owned; accepted and ignored' }))
// An enum, not a union of literals, so a wrong value is refused naming both choices.
const RecurrentOf = (options: { description: string; default?: string }) => Type.Enum(['none', 'yearly'], options)
const Recurrent = RecurrentOf({ description: '"yearly": the same month and day every year from `day` on' })

/** The Holiday of the spec, with its server-made id and the subsidiary it belongs to. */
export const Holiday = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    day: Day('The day, or the first day of a yearly holiday'),
    is_worker_holiday: Type.Boolean({ description: 'True when workers have the day off' }),
    recurrent: Recurrent,
    recurrent_until: Nullable(Day('Last day a yearly holiday may fall on (inclusive); null: no end')),
    subsidiary_id: Nullable(Uuid('The subsidiary the holiday is for; null: company-wide')),
  },
  { additionalProperties: false, title: 'Holiday' },
)
export type Holiday = Static<typeof Holiday>

export const HolidayInput = Type.Object(
  {
    id: Ignored,
    company_id: Ignored,
    source: Ignored,
    name: Name(200),
    day: ReadableDay('A real calendar day, YYYY-MM-DD'),
    is_worker_holiday: Type.Optional(Type.Boolean({ default: true, description: 'Default true' })),
    recurrent: Type.Optional(RecurrentOf({ default: 'none', description: '"none" (the default) or "yearly"' })),
    recurrent_until: Type.Optional(Nullable(ReadableDay('Only with recurrent "yearly"; not before `day`'))),
    subsidiary_id: Type.Optional(Nullable(Uuid('A subsidiary of the same company; omitted or null: company-wide'))),
  },
  { additionalProperties: false, title: 'HolidayInput' },
)
export type HolidayInput = Static<typeof HolidayInput>

export const HolidayParams = Type.Object({ company_id: Uuid('The company'), holiday_id: Uuid('The holiday') })
export const SubsidiaryHolidaysParams = Type.Object({
  company_id: Uuid('The company'),
  subsidiary_id: Uuid('The subsidiary'),
})

export const AllHolidaysQuery = Type.Object(
  {
    year: Type.Optional(Year("Default: the current year in the company's time zone")),
    ...PageFields,
  },
  { additionalProperties: false },
)

export const HolidaySource = Type.Enum(['company', 'subsidiary', 'public'], { description: 'Who defines the holiday' })

/** One date of endpoint 30: a defined holiday on one of its dates, or a public holiday. */
export const DatedHoliday = Type.Object(
  {
    id: Nullable(Uuid('The defining holiday; null for a public holiday')),
    name: Type.String(),
    day: Day('The date in the requested year'),
    is_worker_holiday: Type.Boolean({ description: 'Always true for a public holiday' }),
    recurrent: Recurrent,
    recurrent_until: Nullable(Day()),
    subsidiary_id: Nullable(Uuid()),
    source: HolidaySource,
  },
  { additionalProperties: false, title: 'DatedHoliday' },
)
export type DatedHoliday = Static<typeof DatedHoliday>
