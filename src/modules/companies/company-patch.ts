import { Type, type TSchema } from 'typebox'
import { ValidationError, type ErrorDetail } from '../../core/errors.ts'
import { CompanyInput, Ignored } from './companies.schemas.ts'

/**
 * PATCH of a company as a JSON merge patch (RFC 7396). The writable fields are read from the
 * creation schema, minus CREATION_ONLY and server-owned ones, so a new field is writable here
 * without changing this file.
 */

const SUBSCRIPTION_UPDATE =
  'PUT /api/v1/subscription/companies/{company_id}/update/{subscription_id} changes the plan and its quantity'
const SUBSCRIPTION_ROUTES =
  'the subscription routes change it (update, cancel, remove_scheduled_cancellation under /api/v1/subscription)'

const CREATION_ONLY: Record<string, string> = {
  product_sku: SUBSCRIPTION_UPDATE,
  subscription_plan: SUBSCRIPTION_UPDATE,
  plan_quantity: SUBSCRIPTION_UPDATE,
}

/** Named in the 400 with the route that changes them. */
export const NOT_WRITABLE: Readonly<Record<string, string>> = {
  id: "a company's id never changes",
  disabled:
    'PUT /api/v1/companies/{company_id} disables the company, PUT /api/v1/companies/{company_id}/enable enables it',
  subscription_id: SUBSCRIPTION_ROUTES,
  subscription_customer_id: "it is the billing provider's customer, set at creation",
  subscription_status: SUBSCRIPTION_ROUTES,
  subscription_expiration_date: SUBSCRIPTION_ROUTES,
  trial_expiration_date: SUBSCRIPTION_ROUTES,
  subscribed_features: `they follow the subscription's plan; ${SUBSCRIPTION_UPDATE}`,
  ...CREATION_ONLY,
}

/**
 * They decide reverse charge, so a company token may only send them back unchanged (403 otherwise):
 * docs/adr/0003-vat-numbers-set-by-the-platform.md.
 */
export const PLATFORM_ONLY: readonly string[] = ['country', 'vat_number', 'vat_number_status']

type Schema = TSchema & {
  anyOf?: TSchema[]
  type?: string
  properties?: Record<string, TSchema>
  required?: string[]
  additionalProperties?: unknown
}

const inputProperties = CompanyInput.properties as unknown as Record<string, Schema>

export const WRITABLE_FIELDS: readonly string[] = Object.keys(inputProperties).filter(
  (key) => inputProperties[key] !== (Ignored as unknown) && !(key in CREATION_ONLY),
)

const nullable = (schema: Schema) =>
  Array.isArray(schema.anyOf) && schema.anyOf.some((s) => (s as Schema).type === 'null')
const objectOf = (schema: Schema): Schema | undefined =>
  schema.type === 'object' ? schema : (schema.anyOf as Schema[] | undefined)?.find((s) => s.type === 'object')

export const OBJECT_FIELDS: ReadonlyMap<string, Schema> = new Map(
  WRITABLE_FIELDS.flatMap((key) => {
    const object = objectOf(inputProperties[key]!)
    return object ? [[key, object] as const] : []
  }),
)

export const NULLABLE_FIELDS: ReadonlySet<string> = new Set(
  WRITABLE_FIELDS.filter((key) => nullable(inputProperties[key]!)),
)

function memberPatch(object: Schema): TSchema {
  const members = Object.fromEntries(
    Object.entries(object.properties ?? {}).map(([k, s]) => [k, Type.Optional(Type.Union([s, Type.Null()]))]),
  )
  const { properties: _p, required: _r, ...rest } = object
  return Type.Object(members, { ...rest, additionalProperties: object.additionalProperties ?? false })
}

function patchProperty(key: string): TSchema {
  const schema = inputProperties[key]!
  const object = OBJECT_FIELDS.get(key)
  if (object) {
    const patch = memberPatch(object)
    return Type.Optional(NULLABLE_FIELDS.has(key) ? Type.Union([patch, Type.Null()]) : patch)
  }
  return Type.Optional(schema)
}

const notWritable = (key: string) =>
  Type.Optional(Type.Unknown({ description: `Not writable here (400): ${NOT_WRITABLE[key]}` }))

export const CompanyPatch = Type.Object(
  {
    ...Object.fromEntries(WRITABLE_FIELDS.map((key) => [key, patchProperty(key)])),
    ...Object.fromEntries(Object.keys(NOT_WRITABLE).map((key) => [key, notWritable(key)])),
  },
  {
    additionalProperties: false,
    title: 'CompanyPatch',
    description:
      'A JSON merge patch (RFC 7396) of the Company: a field left out keeps its value, null clears an optional ' +
      'field, an object (location_info, preferences) is merged member by member (a null member removes it). ' +
      'country, vat_number and vat_number_status change only with a platform token (a company token may send ' +
      'back the values it has).',
    examples: [
      {
        name: 'Acme Italia S.r.l.',
        city: 'Milano',
        zip: '20121',
        province: 'MI',
        phone: null,
        preferences: { stamping_enabled: 'true' },
      },
    ],
  },
)
export type CompanyPatchBody = Record<string, unknown>

export function refuseNotWritable(patch: CompanyPatchBody) {
  const details: ErrorDetail[] = Object.keys(patch)
    .filter((key) => key in NOT_WRITABLE)
    .map((key) => ({
      field: `body/${key}`,
      message: `body/${key} is not writable through PATCH: ${NOT_WRITABLE[key]}`,
    }))
  if (details.length > 0) throw new ValidationError(details[0]!.message, details)
}

export function mergeValue(current: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch
  const base: Record<string, unknown> =
    current !== null && typeof current === 'object' && !Array.isArray(current)
      ? { ...(current as Record<string, unknown>) }
      : {}
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete base[key]
    else base[key] = mergeValue(base[key], value)
  }
  return base
}

/** The merged object must still have its required members and meet its size bound. */
export function checkMergedObject(key: string, merged: unknown) {
  const object = OBJECT_FIELDS.get(key)
  if (!object || merged === null || typeof merged !== 'object') return
  for (const member of object.required ?? []) {
    if (!(member in (merged as object)))
      throw new ValidationError(`body/${key}/${member} is required (the merged ${key} has none)`, [
        { field: `body/${key}/${member}`, message: `body/${key}/${member} is required (the merged ${key} has none)` },
      ])
  }
  const max = (object as { maxProperties?: number }).maxProperties
  if (max !== undefined && Object.keys(merged).length > max)
    throw new ValidationError(`body/${key} would have more than ${max} members once merged`)
}
