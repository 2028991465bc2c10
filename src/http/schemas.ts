import { Type, type TSchema } from 'typebox'

/** Shapes shared by every module. */

export const ErrorBody = Type.Object(
  { errors: Type.String({ description: 'What went wrong, as a sentence' }), code: Type.String({ description: 'A machine code: validation_failed, unauthorized, not_found, ...' }) },
  { additionalProperties: false, title: 'Error' },
)

export const Uuid = (description?: string) => Type.String({ format: 'uuid', ...(description ? { description } : {}) })

export const CompanyParams = Type.Object({ company_id: Uuid('The company') })

/** `YYYY-MM-DD`, checked as a real calendar day by the services. */
export const Day = (description?: string) => Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', format: 'date', ...(description ? { description } : {}) })

/** A nullable value in a representation. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** The 202 of creations and updates: no body (a creation also sets Location). */
export const Accepted = Type.Null({ description: 'Accepted; a creation sets Location to the new resource' })
