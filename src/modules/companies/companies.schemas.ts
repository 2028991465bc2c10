import { Type, type Static } from 'typebox'
import { Name, Nullable, Uuid } from '../../http/schemas.ts'

const Text = (max = 200) => Type.String({ maxLength: max })
const OptionalText = (max = 200) => Type.Optional(Nullable(Text(max)))

const LocationInfo = Type.Object(
  { long: Type.String({ maxLength: 32 }), lat: Type.String({ maxLength: 32 }) },
  { additionalProperties: false },
)
const Preferences = Type.Object(
  { stamping_enabled: Type.Optional(Type.String({ maxLength: 50 })) },
  { additionalProperties: true, maxProperties: 50, description: 'stamping_enabled is a string; other keys are open' },
)

/** What a platform client found of a company's VAT number; reverse charge only while `valid`. */
const vatNumberStatus = (description: string) =>
  Type.Union([Type.Literal('valid'), Type.Literal('invalid'), Type.Literal('not_validated')], { description })
export const VatNumberStatus = vatNumberStatus(
  "Set by a platform client once it has checked the number (VIES, or the country's register): reverse charge " +
    'applies only while valid. A new or changed vat_number starts not_validated; null without a vat_number',
)

/** The Company of the spec; its subscription_* fields mirror the current subscription. */
export const Company = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    address: Nullable(Type.String()),
    city: Nullable(Type.String()),
    province: Nullable(Type.String()),
    zip: Nullable(Type.String()),
    country: Type.String({ description: 'ISO 3166-1 alpha-2' }),
    phone: Nullable(Type.String()),
    vat: Nullable(Type.String()),
    vat_number: Nullable(
      Type.String({
        description:
          'VAT identification number with its country prefix (DE123456789), as stored: without spaces, dots or ' +
          'hyphens, upper case. With it and vat_number_status valid, a company in another country than the ' +
          "seller's is reverse-charged",
      }),
    ),
    vat_number_status: Nullable(VatNumberStatus),
    fiscal_code: Nullable(Type.String()),
    pec: Nullable(Type.String()),
    codice_destinatario: Nullable(Type.String()),
    tax_code: Nullable(
      Type.String({ description: 'Codice fiscale (16 letters and digits, or 11 digits), as stored: upper case' }),
    ),
    sdi_code: Nullable(
      Type.String({
        description: 'Codice destinatario of the exchange system (SdI): 7 letters or digits; 0000000 with a pec',
      }),
    ),
    billing_email: Nullable(Type.String()),
    admin_user_id: Nullable(Type.String()),
    admin_user_email: Nullable(Type.String()),
    timezone: Type.String({ description: 'IANA zone name' }),
    number_of_employees: Nullable(Type.Integer()),
    location_info: Nullable(LocationInfo),
    preferences: Preferences,
    subscription_id: Nullable(Type.String()),
    subscription_customer_id: Nullable(Type.String()),
    subscription_plan: Nullable(Type.String()),
    subscription_status: Nullable(Type.String()),
    subscription_expiration_date: Nullable(
      Type.String({ format: 'date-time', description: 'End of the current term (UTC)' }),
    ),
    trial_expiration_date: Nullable(Type.String({ format: 'date-time', description: 'End of the trial (UTC)' })),
    subscribed_features: Type.Array(Type.String()),
    plan_quantity: Nullable(Type.Integer()),
    disabled: Type.Boolean({ description: 'True once disabled (33); its tokens then get 403' }),
  },
  { additionalProperties: false, title: 'Company' },
)
export type Company = Static<typeof Company>

export const Ignored = Type.Optional(Type.Unknown({ description: 'Server-owned; accepted and ignored' }))

export const CompanyInput = Type.Object(
  {
    name: Name(200),
    address: OptionalText(),
    city: OptionalText(),
    province: OptionalText(50),
    zip: OptionalText(20),
    country: Type.String({
      pattern: '^[A-Z]{2}$',
      description:
        'ISO 3166-1 alpha-2, such as IT. Set by a platform client: a company token may only send back the value ' +
        'it has (403 otherwise)',
    }),
    phone: OptionalText(50),
    vat: OptionalText(50),
    vat_number: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 30,
          description:
            'VAT identification number with its country prefix (DE123456789, EL… for Greece, CHE…, GB… or XI…). ' +
            "Spaces, dots and hyphens are dropped, then it must have the shape of a number of the company's " +
            "country (the EU's VIES formats, CH, NO and GB; elsewhere the country code and 2 to 13 letters or " +
            'digits), no checksum and no VIES call (400 otherwise). Set by a platform client: a company token ' +
            'may only send back the value it has (403 otherwise). Null for a consumer',
        }),
      ),
    ),
    vat_number_status: Type.Optional(
      Nullable(
        vatNumberStatus(
          'Only with a vat_number (400 otherwise), null only without one (a company read and sent back); default ' +
            'not_validated, and a changed vat_number starts over at not_validated unless this is sent with it. Set ' +
            'by a platform client: a company token may only send back the value it has (403 otherwise)',
        ),
      ),
    ),
    fiscal_code: OptionalText(50),
    pec: Type.Optional(
      Nullable(
        Type.String({
          format: 'email',
          maxLength: 254,
          description: 'Certified mail (PEC) address; receives the electronic invoices when sdi_code is 0000000',
        }),
      ),
    ),
    codice_destinatario: OptionalText(20),
    tax_code: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 30,
          description:
            "Codice fiscale: a person's 16 letters and digits or a business's 11 digits (spaces dropped, upper " +
            'case; 400 otherwise). Read by the FatturaPA documents; any client may write it',
        }),
      ),
    ),
    sdi_code: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 30,
          description:
            'Codice destinatario of the exchange system (SdI): 7 letters or digits, 0000000 when the documents ' +
            'go to the pec address (upper case; 400 otherwise). Any client may write it',
        }),
      ),
    ),
    billing_email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 254 }))),
    admin_user_id: Type.Optional(Nullable(Uuid())),
    admin_user_email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 254 }))),
    timezone: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'IANA zone; default Europe/Rome for IT, else UTC' }),
    ),
    number_of_employees: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 10_000_000 }))),
    location_info: Type.Optional(Nullable(LocationInfo)),
    preferences: Type.Optional(Preferences),
    product_sku: Type.String({ minLength: 1, maxLength: 100, description: 'The product subscribed to' }),
    subscription_plan: Type.String({
      minLength: 1,
      maxLength: 100,
      description: "A plan sku among the product's allowed_plans",
    }),
    plan_quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, default: 1 })),
    id: Ignored,
    subscription_id: Ignored,
    subscription_customer_id: Ignored,
    subscription_status: Ignored,
    subscription_expiration_date: Ignored,
    trial_expiration_date: Ignored,
    subscribed_features: Ignored,
    disabled: Ignored,
  },
  { additionalProperties: false, title: 'CompanyInput' },
)
export type CompanyInput = Static<typeof CompanyInput>

export const Scope = Type.Object(
  {
    name: Type.String({ description: 'Display name' }),
    mode: Type.Array(Type.Union([Type.Literal('read'), Type.Literal('write')])),
    api: Type.String({ description: 'Area name' }),
  },
  { additionalProperties: false, title: 'Scope' },
)

export const Subsidiary = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    city: Nullable(Type.String()),
    country: Nullable(Type.String()),
  },
  { additionalProperties: false, title: 'Subsidiary' },
)
export type Subsidiary = Static<typeof Subsidiary>

export const SubsidiaryInput = Type.Object(
  {
    id: Ignored,
    name: Name(200),
    city: OptionalText(),
    country: Type.Optional(Nullable(Type.String({ pattern: '^[A-Z]{2}$' }))),
  },
  { additionalProperties: false, title: 'SubsidiaryInput' },
)
export type SubsidiaryInput = Static<typeof SubsidiaryInput>

export const SubsidiaryParams = Type.Object({ company_id: Uuid(), subsidiary_id: Uuid() })

export const Contract = Type.Object(
  {
    id: Uuid(),
    first_name: Type.String(),
    last_name: Type.String(),
    email: Nullable(Type.String()),
    subsidiary_id: Nullable(Uuid()),
    team_ids: Type.Array(Uuid(), { description: 'The teams the contract is a member of' }),
    active: Type.Boolean(),
  },
  { additionalProperties: false, title: 'Contract' },
)
export type Contract = Static<typeof Contract>

export const ContractInput = Type.Object(
  {
    id: Ignored,
    first_name: Name(100),
    last_name: Name(100),
    email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 254 }))),
    subsidiary_id: Type.Optional(Nullable(Uuid())),
    team_ids: Type.Optional(
      Type.Array(Uuid(), {
        maxItems: 1000,
        description:
          'Read-only: sent back as read (in any order) it is ignored; any other value is a 400 (a new contract ' +
          'is in no team). Memberships change through the team routes: create a team with team_leader_ids, ' +
          'upgrade_contract, downgrade_contract, add_contract, remove_contract.',
      }),
    ),
    active: Type.Optional(Type.Boolean({ default: true })),
  },
  { additionalProperties: false, title: 'ContractInput' },
)
export type ContractInput = Static<typeof ContractInput>

export const ContractParams = Type.Object({ company_id: Uuid(), contract_id: Uuid() })
