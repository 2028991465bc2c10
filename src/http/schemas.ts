import { Type, type TSchema } from 'typebox'
import { ERROR_CODES, type ErrorCode } from '../core/errors.ts'

export const ErrorBody = Type.Object(
  {
    errors: Type.String({ description: 'What went wrong, as a sentence' }),
    code: Type.Unsafe<ErrorCode>({
      type: 'string',
      enum: [...ERROR_CODES],
      description: 'A machine code, stable across versions (the sentence may change)',
    }),
    details: Type.Optional(
      Type.Array(
        Type.Object(
          {
            field: Type.String({
              description: 'The path of the field, as the sentence names it: body/team_leader_ids/2, querystring/year',
            }),
            message: Type.String({ description: 'The problem, as a sentence naming the field' }),
          },
          { additionalProperties: false },
        ),
        {
          maxItems: 100,
          description:
            'On a validation error that names fields, or a 403 forbidden naming fields the token may not change: ' +
            'every problem at once (at most 100); the first is the one `errors` starts with',
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    title: 'Error',
    examples: [
      {
        errors: 'body/name must not be blank (white space only)',
        code: 'validation_failed',
        details: [{ field: 'body/name', message: 'body/name must not be blank (white space only)' }],
      },
    ],
  },
)

/** Case-insensitive: every uuid sent is lower-cased (http/uuids.ts). */
export const Uuid = (description?: string) => Type.String({ format: 'uuid', ...(description ? { description } : {}) })

export const CompanyParams = Type.Object({ company_id: Uuid('The company') })

const DAY = '^\\d{4}-\\d{2}-\\d{2}$'
/** The days a `year` query can read back. */
const READABLE_DAY = '^(19|20|21)\\d{2}-\\d{2}-\\d{2}$'
const NOT_BLANK = '\\S'

/** In the words of the error sentence. */
export const PATTERN_SENTENCES: Record<string, string> = {
  [DAY]: 'must be a day, YYYY-MM-DD',
  [READABLE_DAY]: 'must be a day from 1900-01-01 to 2199-12-31 (YYYY-MM-DD)',
  [NOT_BLANK]: 'must not be blank (white space only)',
}

/** Checked as a real calendar day by the services. */
export const Day = (description?: string) =>
  Type.String({ pattern: DAY, format: 'date', ...(description ? { description } : {}) })

export const ReadableDay = (description?: string) =>
  Type.String({
    pattern: READABLE_DAY,
    format: 'date',
    description: `${description ? `${description}; ` : ''}from 1900-01-01 to 2199-12-31`,
  })

export const Year = (description: string) => Type.Integer({ minimum: 1900, maximum: 2199, description })

/** Not all white space. */
export const Name = (maxLength = 200, description?: string) =>
  Type.String({ minLength: 1, maxLength, pattern: NOT_BLANK, ...(description ? { description } : {}) })

export const Code = Name

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const Accepted = Type.Null({ description: 'Accepted; a creation sets Location to the new resource' })
