import { Type, type TSchema } from 'typebox'
import { ValidationError, type ErrorDetail } from '../../core/errors.ts'
import { CompanyInput, Ignored } from './companies.schemas.ts'

/**
 * PATCH /api/v1/companies/{company_id} (decisions §8.2): a JSON merge patch (RFC 7396) of the
 * Company's writable fields. Which fields those are is read from the creation schema
 * (CompanyInput): every field a client gives at creation, except the subscription's choice
 * (CREATION_ONLY) and the server-owned ones (`Ignored`), so a field added to the Company and to
 * its creation is writable here without a change to this file.
 */

const SUBSCRIPTION_UPDATE = 'PUT /api/v1/subscription/companies/{company_id}/update/{subscription_id} changes the plan and its quantity'
const SUBSCRIPTION_ROUTES = 'the subscription routes change it (update, cancel, remove_scheduled_cancellation under /api/v1/subscription)'

/** Given at creation, then the subscription's: changed through its own routes. */
const CREATION_ONLY: Record<string, string> = {
  product_sku: SUBSCRIPTION_UPDATE,
  subscription_plan: SUBSCRIPTION_UPDATE,
  plan_quantity: SUBSCRIPTION_UPDATE,
}

/** Fields of the Company a PATCH cannot change, with the route that does (named in the 400). */
export const NOT_WRITABLE: Readonly<Record<string, string>> = {
  id: 'a company\'s id never changes',
  disabled: 'PUT /api/v1/companies/{company_id} disables the company, PUT /api/v1/companies/{company_id}/enable enables it',
  subscription_id: SUBSCRIPTION_ROUTES,
  subscription_customer_id: 'it is the billing provider\'s customer, set at creation',
  subscription_status: SUBSCRIPTION_ROUTES,
  subscription_expiration_date: SUBSCRIPTION_ROUTES,
  trial_expiration_date: SUBSCRIPTION_ROUTES,
  subscribed_features: 'they follow the subscription\'s plan; ' + SUBSCRIPTION_UPDATE,
  ...CREATION_ONLY,
}

/**
 * Fields only a platform client changes (decisions §9.1): they decide whether the company is
 * reverse-charged, so a company token may send them back as they are (a company read and
 * written back), never another value (403).
 */
export const PLATFORM_ONLY: readonly string[] = ['country', 'vat_number', 'vat_number_status']

type Schema = TSchema & { anyOf?: TSchema[]; type?: string; properties?: Record<string, TSchema>; required?: string[]; additionalProperties?: unknown }

const inputProperties = CompanyInput.properties as unknown as Record<string, Schema>

/** The writable fields, in the order of the Company. */
export const WRITABLE_FIELDS: readonly string[] = Object.keys(inputProperties)
  .filter((key) => inputProperties[key] !== (Ignored as unknown) && !(key in CREATION_ONLY))

const nullable = (schema: Schema) => Array.isArray(schema.anyOf) && schema.anyOf.some((s) => (s as Schema).type === 'null')
const objectOf = (schema: Schema): Schema | undefined =>
  schema.type === 'object' ? schema : (schema.anyOf as Schema[] | undefined)?.find((s) => s.type === 'object')

/** Fields whose value is an object: merged member by member (RFC 7396), a null member removing it. */
export const OBJECT_FIELDS: ReadonlyMap<string, Schema> = new Map(
  WRITABLE_FIELDS.flatMap((key) => {
    const object = objectOf(inputProperties[key]!)
    return object ? [[key, object] as const] : []
  }),
)

/** Fields that null clears; the others (name, country, timezone, preferences) refuse null in the schema. */
export const NULLABLE_FIELDS: ReadonlySet<string> = new Set(WRITABLE_FIELDS.filter((key) => nullable(inputProperties[key]!)))

/** An object field's patch: each member optional, null to remove it. */
function memberPatch(object: Schema): TSchema {
  const members = Object.fromEntries(Object.entries(object.properties ?? {}).map(([k, s]) => [k, Type.Optional(Type.Union([s, Type.Null()]))]))
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

const notWritable = (key: string) => Type.Optional(Type.Unknown({ description: `Not writable here (400): ${NOT_WRITABLE[key]}` }))

export const CompanyPatch = Type.Object({
  ...Object.fromEntries(WRITABLE_FIELDS.map((key) => [key, patchProperty(key)])),
  ...Object.fromEntries(Object.keys(NOT_WRITABLE).map((key) => [key, notWritable(key)])),
}, {
  additionalProperties: false,
  title: 'CompanyPatch',
  description: 'A JSON merge patch (RFC 7396) of the Company: a field left out keeps its value, null clears an optional field, an object (location_info, preferences) is merged member by member (a null member removes it). country, vat_number and vat_number_status change only with a platform token (a company token may send back the values it has).',
  examples: [{ name: 'Acme Italia S.r.l.', city: 'Milano', zip: '20121', province: 'MI', phone: null, preferences: { stamping_enabled: 'true' } }],
})
export type CompanyPatchBody = Record<string, unknown>

/** The fields of a patch that no PATCH may change: every one of them as a detail of one 400. */
export function refuseNotWritable(patch: CompanyPatchBody) {
  const details: ErrorDetail[] = Object.keys(patch).filter((key) => key in NOT_WRITABLE)
    .map((key) => ({ field: `body/${key}`, message: `body/${key} is not writable through PATCH: ${NOT_WRITABLE[key]}` }))
  if (details.length > 0) throw new ValidationError(details[0]!.message, details)
}

/** RFC 7396 applied to one field's value: objects merge member by member, anything else replaces. */
export function mergeValue(current: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch
  const base: Record<string, unknown> = current !== null && typeof current === 'object' && !Array.isArray(current) ? { ...(current as Record<string, unknown>) } : {}
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete base[key]
    else base[key] = mergeValue(base[key], value)
  }
  return base
}

/** What the merged object of an object field must still have (its required members, its size bound). */
export function checkMergedObject(key: string, merged: unknown) {
  const object = OBJECT_FIELDS.get(key)
  if (!object || merged === null || typeof merged !== 'object') return
  for (const member of object.required ?? []) {
    if (!(member in (merged as object))) throw new ValidationError(`body/${key}/${member} is required (the merged ${key} has none)`, [{ field: `body/${key}/${member}`, message: `body/${key}/${member} is required (the merged ${key} has none)` }])
  }
  const max = (object as { maxProperties?: number }).maxProperties
  if (max !== undefined && Object.keys(merged).length > max) throw new ValidationError(`body/${key} would have more than ${max} members once merged`)
}
