import { sql, type Insertable, type Kysely } from 'kysely'
import type { CompaniesTable, ContractsTable, DB } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { prepared } from '../../db/prepared.ts'

/** Companies with the mirror of their subscription, subsidiaries and contracts. */
export function createCompaniesRepository(db: Kysely<DB>) {
  // The hot read (bench/RESULTS.md): one statement, compiled once.
  const company = prepared(db, (companyId: string) => db.selectFrom('companies as c')
    .leftJoin('subscriptions as s', 's.company_id', 'c.id')
    .leftJoin('plans as p', 'p.sku', 's.plan_sku')
    // The columns the representation shows, no more: every timestamp costs a Date parse per read.
    .select([
      'c.id', 'c.name', 'c.address', 'c.city', 'c.province', 'c.zip', 'c.country', 'c.phone', 'c.vat', 'c.vat_number', 'c.fiscal_code',
      'c.pec', 'c.codice_destinatario', 'c.billing_email', 'c.admin_user_id', 'c.admin_user_email', 'c.timezone',
      'c.number_of_employees', 'c.location_info', 'c.preferences', 'c.disabled_at',
      's.id as subscription_id', 's.customer_id as subscription_customer_id', 's.plan_sku as subscription_plan',
      's.status as subscription_status', 's.current_term_end', 's.trial_end', 's.plan_quantity', 'p.features',
    ])
    .where('c.id', '=', companyId))

  return {
    insertCompany: (executor: Executor, company: Insertable<CompaniesTable>) => executor.insertInto('companies').values(company).execute(),

    /** The company with its current subscription and that plan's features, in one query. */
    findCompany: async (companyId: string) => (await company(companyId))[0],

    /** What decides a company's authorized scopes: its plan's features, while its subscription lives. */
    findPlanFeatures(companyId: string) {
      return db.selectFrom('companies as c')
        .leftJoin('subscriptions as s', 's.company_id', 'c.id')
        .leftJoin('plans as p', 'p.sku', 's.plan_sku')
        .select(['c.id', 's.status', 'p.features'])
        .where('c.id', '=', companyId)
        .executeTakeFirst()
    },

    async setDisabled(companyId: string, disabledAt: Date | null): Promise<boolean> {
      const result = await db.updateTable('companies').set({ disabled_at: disabledAt, updated_at: new Date() })
        .where('id', '=', companyId).executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },

    companyExists: async (companyId: string) =>
      (await db.selectFrom('companies').select('id').where('id', '=', companyId).executeTakeFirst()) !== undefined,

    insertSubsidiary: (row: { company_id: string; id: string; name: string; city: string | null; country: string | null }) =>
      db.insertInto('subsidiaries').values(row).execute(),
    listSubsidiaries: (companyId: string) =>
      db.selectFrom('subsidiaries').select(['id', 'name', 'city', 'country']).where('company_id', '=', companyId).orderBy('name').orderBy('id').execute(),
    findSubsidiary: (companyId: string, subsidiaryId: string) =>
      db.selectFrom('subsidiaries').select(['id', 'name', 'city', 'country']).where('company_id', '=', companyId).where('id', '=', subsidiaryId).executeTakeFirst(),

    insertContract: (row: Insertable<ContractsTable>) => db.insertInto('contracts').values(row).execute(),
    async updateContract(companyId: string, contractId: string, values: Omit<Insertable<ContractsTable>, 'id' | 'company_id'>): Promise<boolean> {
      const result = await db.updateTable('contracts').set(values).where('company_id', '=', companyId).where('id', '=', contractId).executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },
    listContracts: (companyId: string) => contractsQuery(db, companyId).orderBy('c.last_name').orderBy('c.first_name').orderBy('c.id').execute(),
    findContract: (companyId: string, contractId: string) => contractsQuery(db, companyId).where('c.id', '=', contractId).executeTakeFirst(),
  }
}

/** Contracts with the ids of their teams, read from the memberships so both always agree. */
function contractsQuery(db: Kysely<DB>, companyId: string) {
  return db.selectFrom('contracts as c')
    .select(['c.id', 'c.first_name', 'c.last_name', 'c.email', 'c.subsidiary_id', 'c.active'])
    .select(sql<string[]>`coalesce((SELECT array_agg(m.team_id ORDER BY m.team_id) FROM team_members m WHERE m.company_id = c.company_id AND m.contract_id = c.id), '{}')`.as('team_ids'))
    .where('c.company_id', '=', companyId)
}

export type CompaniesRepository = ReturnType<typeof createCompaniesRepository>
