import type { ColumnType, Generated } from 'kysely'
import type { Timestamp, CreatedAt, Json, JsonWithDefault, UpdatedAt } from './columns.ts'
import type { ChangeLogEntry } from './communications.ts'

/** What a platform client found of a company's VAT number (it sets it; a new number starts not_validated). */
export type VatNumberStatus = 'valid' | 'invalid' | 'not_validated'

export interface CompaniesTable {
  id: string
  name: string
  address: string | null
  city: string | null
  province: string | null
  zip: string | null
  country: string
  phone: string | null
  vat: string | null
  /** The VAT identification number with its country prefix (migration 0016): reverse charge. */
  vat_number: ColumnType<string | null, string | null | undefined, string | null>
  /**
   * Whether a platform client checked vat_number (migration 0041): reverse charge only while `valid`; null without a
   * number.
   */
  vat_number_status: ColumnType<VatNumberStatus | null, VatNumberStatus | null | undefined, VatNumberStatus | null>
  fiscal_code: string | null
  pec: string | null
  codice_destinatario: string | null
  /** Codice fiscale and codice destinatario, checked on write (migration 0057): the FatturaPA documents read them. */
  tax_code: ColumnType<string | null, string | null | undefined, string | null>
  sdi_code: ColumnType<string | null, string | null | undefined, string | null>
  billing_email: string | null
  admin_user_id: string | null
  admin_user_email: string | null
  timezone: string
  number_of_employees: number | null
  location_info: Json<{ long: string; lat: string } | null> | null
  preferences: JsonWithDefault<Record<string, unknown>>
  disabled_at: Timestamp | null
  /** Each PATCH, as communications record their changes (migration 0018); not shown in the Company. */
  change_log: JsonWithDefault<ChangeLogEntry[]>
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface SubsidiariesTable {
  company_id: string
  id: string
  name: string
  city: string | null
  country: string | null
  created_at: CreatedAt
}

export interface ContractsTable {
  company_id: string
  id: string
  first_name: string
  last_name: string
  email: string | null
  subsidiary_id: string | null
  active: Generated<boolean>
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface TeamsTable {
  company_id: string
  id: string
  name: string
  code: string
  subsidiary_id: string | null
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface TeamMembersTable {
  company_id: string
  team_id: string
  contract_id: string
  is_leader: Generated<boolean>
  created_at: CreatedAt
}

export interface HolidaysTable {
  company_id: string
  id: string
  subsidiary_id: string | null
  name: string
  day: string
  is_worker_holiday: boolean
  recurrent: 'none' | 'yearly'
  recurrent_until: string | null
  created_at: CreatedAt
  updated_at: UpdatedAt
}
