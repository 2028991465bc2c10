/**
 * Examples for the OpenAPI document: a shape's own `examples` win; otherwise one is composed from
 * realistic values by field name, each checked against its schema here and the whole by the
 * contract tests, so the document never shows an example the server would refuse.
 */

type Schema = Record<string, any>

const ID = {
  company: '3f6c1f9e-8a3b-4d7e-9c21-5b8e2f0a7d14',
  subsidiary: '9b2d4e61-7c3a-4f85-a1e2-0d6b8c5f3a27',
  contract: 'c5e8a2d7-1f4b-4c96-8e3a-7b2f9d0c6e15',
  team: '7a1e3c5b-9d2f-4b68-a0c4-e6f8b2d1a937',
  holiday: '2e9f7b4c-6a1d-4e3b-8c5f-1d7a9e2b4c60',
  communication: 'b8d3f1a6-4e7c-4a29-9f5b-3c1e8d6a2f74',
  message: 'e4a7c2f9-3b6d-4f18-b5e1-9a2c7d4f8b03',
  attachment: 'f1c9e5a3-7d2b-4e6f-9a8c-2b5d1f7e3a49',
  subscription: '6d4b8f2a-1c7e-4a93-b6d5-8e2f4a1c9b57',
  other: '0f3e5d7c-2b4a-4c61-8e9f-6a1b3d5c7e28',
}

/** By field name, or `Shape.field` where a name means different things. */
const BY_NAME: Record<string, unknown> = {
  'Company.id': ID.company,
  company_id: ID.company,
  'Subsidiary.id': ID.subsidiary,
  subsidiary_id: ID.subsidiary,
  'Contract.id': ID.contract,
  'TeamMember.id': ID.contract,
  contract_id: ID.contract,
  'Team.id': ID.team,
  team_id: ID.team,
  'Holiday.id': ID.holiday,
  'DatedHoliday.id': ID.holiday,
  'Communication.id': ID.communication,
  communication_id: ID.communication,
  'CommunicationMessage.id': ID.message,
  'InboxMessage.id': ID.message,
  message_id: ID.message,
  'Attachment.id': ID.attachment,
  'AttachmentRef.id': ID.attachment,
  subscription_id: ID.subscription,
  destination_team_ids: ID.team,
  team_ids: ID.team,
  destination_subsidiary_ids: ID.subsidiary,
  team_leader_ids: ID.contract,
  lat: '45.4642',
  long: '9.1900',
  entity_id: 'business-monthly',
  next_billing_at: 1767225600,
  id: ID.other,
  'Company.name': 'Acme Logistics S.r.l.',
  'Subsidiary.name': 'Acme Logistics Milano',
  'Team.name': 'Warehouse night shift',
  'Holiday.name': 'Company anniversary',
  'DatedHoliday.name': 'Company anniversary',
  'Plan.name': 'Business monthly',
  'Product.name': 'Workforce suite',
  'Addon.name': 'Extra storage',
  'Coupon.name': 'Launch 20% off',
  'Client.name': 'Payroll integration',
  'CreatedClient.name': 'Payroll integration',
  name: 'Acme Logistics',
  first_name: 'Ada',
  last_name: 'Lovelace',
  email: 'ada.lovelace@example.com',
  admin_user_email: 'it@acme.example',
  billing_email: 'billing@acme.example',
  pec: 'acme@pec.example.it',
  phone: '+39 02 1234567',
  address: 'Via Roma 1',
  city: 'Milano',
  zip: '20121',
  province: 'MI',
  country: 'IT',
  state: 'Lombardia',
  vat: 'IT12345678901',
  fiscal_code: '12345678901',
  codice_destinatario: 'ABC1234',
  tax_code: '12345678901',
  sdi_code: 'ABC1234',
  timezone: 'Europe/Rome',
  'Team.code': 'WH-NIGHT',
  code: 'LAUNCH20',
  sku: 'business-monthly',
  product_sku: 'workforce-suite',
  plan_family: 'business',
  plan: 'business-monthly',
  subscription_plan: 'business-monthly',
  plan_id: 'business-monthly',
  subject: 'New shift schedule from 1 December',
  message: 'The new shift schedule is attached. Please acknowledge it by Friday.',
  description: 'Everything a growing company needs',
  currency_code: 'EUR',
  mime: 'application/pdf',
  day: '2026-12-08',
  send_at: '2026-12-01T08:00:00Z',
  occurrence: '2026-12-01T08:00:00Z',
  recurrent_until: '2027-06-30',
  created_at: '2026-11-26T09:30:00Z',
  delivered_at: '2026-12-01T08:00:05Z',
  opened_at: '2026-12-01T09:12:40Z',
  action_done_at: '2026-12-01T09:13:02Z',
  at: '2026-11-26T09:30:00Z',
  client_id: 'cl_3kq8v2m9x7',
  client_secret: 'cs_live_8f2b1c9d4e7a6f3b0c5d2e9a1f4b7c8d',
  access_token: 'eyJhbGciOiJFUzI1NiIsImtpZCI6ImtleS0xIn0.eyJzdWIiOiJjbF8za3E4djJtOXg3In0.c2lnbmF0dXJl',
  token_type: 'Bearer',
  expires_in: 3600,
  scope: 'read:team write:team',
  grant_type: 'client_credentials',
  scopes: 'read:team',
  customer_id: 'cus_acme_0001',
  subscription_customer_id: 'cus_acme_0001',
  url: 'https://api.example.com/hosted/pages/hp_7Yc2',
  access_url: 'https://api.example.com/hosted/portal/ps_4Kd9',
  redirect_url: 'https://app.acme.example/billing/done',
  last4: '4242',
  brand: 'visa',
  expiry_month: 12,
  expiry_year: 2029,
  number_of_employees: 120,
  quantity: 1,
  plan_quantity: 1,
  price: 49,
  unit_amount: 4900,
  amount: 4900,
  sub_total: 4900,
  total: 5978,
  amount_due: 5978,
  rate: 22,
  discount_value: 20,
  size: 48213,
  event_id: 'ev_16BcLNTd4x0Y2',
  event_type: 'subscription_renewed',
  occurred_at: 1764149400,
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const FORMATS: Record<string, (v: string) => boolean> = {
  uuid: (v) => UUID.test(v),
  date: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v)),
  'date-time': (v) => /^\d{4}-\d{2}-\d{2}T/.test(v) && !Number.isNaN(Date.parse(v)),
  email: (v) => /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(v),
  uri: (v) => /^[a-z][a-z0-9+.-]*:/i.test(v),
}

function fits(value: unknown, schema: Schema): boolean {
  if (schema.anyOf) return schema.anyOf.some((s: Schema) => fits(value, s))
  if ('const' in schema) return schema.const === value
  if (schema.enum) return schema.enum.includes(value)
  const type = schema.type
  if (type === 'null') return value === null
  if (type === 'string') {
    if (typeof value !== 'string') return false
    if (schema.minLength !== undefined && value.length < schema.minLength) return false
    if (schema.maxLength !== undefined && value.length > schema.maxLength) return false
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test(value)) return false
    return !schema.format || !FORMATS[schema.format] || FORMATS[schema.format]!(value)
  }
  if (type === 'integer' || type === 'number') {
    if (typeof value !== 'number' || (type === 'integer' && !Number.isInteger(value))) return false
    if (schema.minimum !== undefined && value < schema.minimum) return false
    if (schema.maximum !== undefined && value > schema.maximum) return false
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) return false
    return schema.exclusiveMaximum === undefined || value < schema.exclusiveMaximum
  }
  if (type === 'boolean') return typeof value === 'boolean'
  return false
}

const FALLBACK_STRINGS: Record<string, string> = {
  uuid: ID.other,
  date: '2026-11-26',
  'date-time': '2026-11-26T09:30:00Z',
  email: 'ada.lovelace@example.com',
  uri: 'https://example.com/',
  binary: '<file content>',
}

/** undefined when the schema says nothing of its type (a field accepted and ignored). */
export function exampleOf(schema: Schema | undefined, name?: string, shape?: string): unknown {
  if (!schema || typeof schema !== 'object') return undefined
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
  if ('example' in schema) return schema.example
  if ('const' in schema) return schema.const
  if ('default' in schema && fits(schema.default, schema)) return schema.default
  const here = typeof schema.title === 'string' ? schema.title : shape
  if (name !== undefined) {
    for (const key of [`${here}.${name}`, name]) {
      if (key in BY_NAME && fits(BY_NAME[key], schema)) return BY_NAME[key]
    }
  }
  if (schema.enum) return schema.enum[0]
  const branches: Schema[] | undefined = schema.anyOf ?? schema.oneOf
  if (branches) {
    for (const branch of branches.filter((b) => b.type !== 'null')) {
      const value = exampleOf(branch, name, here)
      if (value !== undefined) return value
    }
    return branches.some((b) => b.type === 'null') ? null : undefined
  }
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s: Schema) => exampleOf(s, name, here)))
  switch (schema.type ?? (schema.properties ? 'object' : undefined)) {
    case 'object': {
      const out: Record<string, unknown> = {}
      for (const [key, property] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
        const value = exampleOf(property, key, here)
        if (value !== undefined) out[key] = value
      }
      return out
    }
    case 'array': {
      const item = exampleOf(schema.items, name, here)
      if (item === undefined) return []
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item)
    }
    case 'string': {
      if (schema.format && FALLBACK_STRINGS[schema.format]) return FALLBACK_STRINGS[schema.format]
      const candidates = ['example', 'EXAMPLE', 'example-1', 'AB', '2026-11-26', 'x']
      const found = candidates.find((c) => fits(c, { ...schema, minLength: undefined }))
      const base = found ?? 'example'
      return base.padEnd(schema.minLength ?? 0, 'x')
    }
    case 'integer':
    case 'number':
      return schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1)
    case 'boolean':
      return true
    case 'null':
      return null
    default:
      return undefined
  }
}
