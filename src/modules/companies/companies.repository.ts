import { sql, type Insertable, type Kysely, type Transaction, type Updateable } from 'kysely'
import type { CompaniesTable, ContractsTable, DB, SubscriptionStatus } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { prepared } from '../../db/prepared.ts'
import { containing, keyset, preparedPages, type KeysetPage, type SortColumn } from '../../db/keyset.ts'
import { cutPage } from '../../core/paging.ts'
import { companyExistsOn } from '../../db/company-exists.ts'
import type { Contract } from './companies.schemas.ts'

/** Each order ends with a unique column. */
export const COMPANY_ORDER: SortColumn[] = [{ column: 'c.name' }, { column: 'c.id', cast: 'uuid' }]
export const SUBSIDIARY_ORDER: SortColumn[] = [{ column: 'name' }, { column: 'id', cast: 'uuid' }]
export const CONTRACT_ORDER: SortColumn[] = [
  { column: 'c.last_name' },
  { column: 'c.first_name' },
  { column: 'c.id', cast: 'uuid' },
]

export type NewContract = Pick<
  ContractsTable,
  'company_id' | 'id' | 'first_name' | 'last_name' | 'email' | 'subsidiary_id'
> & { active: boolean; updated_at: Date }

export interface ContractFilter {
  active?: boolean
  subsidiary_id?: string
  team_id?: string
  q?: string
}
export interface CompanyFilter {
  q?: string
  disabled?: boolean
  subscription_status?: SubscriptionStatus
}

export function createCompaniesRepository(db: Kysely<DB>) {
  // Hot reads, compiled once.
  const company = prepared(db, (companyId: string) => companiesQuery(db).where('c.id', '=', companyId))
  const contractPages = preparedPages(db, CONTRACT_ORDER, (companyId) => contractsQuery(db, companyId))
  const contractInsertion = prepared(
    db,
    (
      companyId: string,
      id: string,
      firstName: string,
      lastName: string,
      email: string | null,
      subsidiaryId: string | null,
      active: boolean,
      updatedAt: Date,
    ) =>
      db.insertInto('contracts').values({
        company_id: companyId,
        id,
        first_name: firstName,
        last_name: lastName,
        email,
        subsidiary_id: subsidiaryId,
        active,
        updated_at: updatedAt,
      }),
  )

  return {
    insertCompany: (executor: Executor, company: Insertable<CompaniesTable>) =>
      executor.insertInto('companies').values(company).execute(),

    findCompany: async (companyId: string) => (await company(companyId))[0],

    /** Its plan's features, while its subscription lives. */
    findPlanFeatures(companyId: string) {
      return db
        .selectFrom('companies as c')
        .leftJoin('subscriptions as s', 's.company_id', 'c.id')
        .leftJoin('plans as p', 'p.sku', 's.plan_sku')
        .select(['c.id', 's.status', 'p.features'])
        .where('c.id', '=', companyId)
        .executeTakeFirst()
    },

    async listCompanies(filter: CompanyFilter, page: KeysetPage) {
      let query = companiesQuery(db)
      if (filter.q !== undefined) query = query.where('c.name', 'ilike', containing(filter.q))
      if (filter.disabled !== undefined) query = query.where('c.disabled_at', filter.disabled ? 'is not' : 'is', null)
      if (filter.subscription_status !== undefined) query = query.where('s.status', '=', filter.subscription_status)
      return cutPage(await keyset(query, COMPANY_ORDER, page).execute(), page, (row) => [row.name, row.id])
    },

    /** Locked until the PATCH's transaction ends. */
    lockForPatch: (trx: Transaction<DB>, companyId: string) =>
      trx.selectFrom('companies').selectAll().where('id', '=', companyId).forUpdate().executeTakeFirst(),

    patchCompany: (trx: Transaction<DB>, companyId: string, values: Updateable<CompaniesTable>) =>
      trx.updateTable('companies').set(values).where('id', '=', companyId).execute(),

    async setDisabled(companyId: string, disabledAt: Date | null): Promise<boolean> {
      const result = await db
        .updateTable('companies')
        .set({ disabled_at: disabledAt, updated_at: new Date() })
        .where('id', '=', companyId)
        .executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },

    companyExists: companyExistsOn(db),

    insertSubsidiary: (row: {
      company_id: string
      id: string
      name: string
      city: string | null
      country: string | null
    }) => db.insertInto('subsidiaries').values(row).execute(),
    listSubsidiaries: async (companyId: string, page: KeysetPage) =>
      cutPage(
        await keyset(
          db.selectFrom('subsidiaries').select(['id', 'name', 'city', 'country']).where('company_id', '=', companyId),
          SUBSIDIARY_ORDER,
          page,
        ).execute(),
        page,
        (row) => [row.name, row.id],
      ),
    findSubsidiary: (companyId: string, subsidiaryId: string) =>
      db
        .selectFrom('subsidiaries')
        .select(['id', 'name', 'city', 'country'])
        .where('company_id', '=', companyId)
        .where('id', '=', subsidiaryId)
        .executeTakeFirst(),

    insertContract: async (row: NewContract) => {
      await contractInsertion(
        row.company_id,
        row.id,
        row.first_name,
        row.last_name,
        row.email,
        row.subsidiary_id,
        row.active,
        row.updated_at,
      )
    },
    async updateContract(
      companyId: string,
      contractId: string,
      values: Omit<Insertable<ContractsTable>, 'id' | 'company_id'>,
    ): Promise<boolean> {
      const result = await db
        .updateTable('contracts')
        .set(values)
        .where('company_id', '=', companyId)
        .where('id', '=', contractId)
        .executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },
    async listContracts(companyId: string, filter: ContractFilter, page: KeysetPage) {
      const keyOf = <T extends { last_name: string; first_name: string; id: string }>(row: T) => [
        row.last_name,
        row.first_name,
        row.id,
      ]
      const unfiltered = Object.values(filter).every((value) => value === undefined)
        ? contractPages(companyId, page)
        : undefined
      if (unfiltered) return cutPage(await unfiltered, page, keyOf)
      let query = contractsQuery(db, companyId)
      if (filter.active !== undefined) query = query.where('c.active', '=', filter.active)
      if (filter.subsidiary_id !== undefined) query = query.where('c.subsidiary_id', '=', filter.subsidiary_id)
      if (filter.team_id !== undefined) {
        const teamId = filter.team_id
        query = query.where(({ exists, selectFrom }) =>
          exists(
            selectFrom('team_members as tm')
              .select('tm.contract_id')
              .whereRef('tm.company_id', '=', 'c.company_id')
              .whereRef('tm.contract_id', '=', 'c.id')
              .where('tm.team_id', '=', teamId),
          ),
        )
      }
      if (filter.q !== undefined) {
        const pattern = containing(filter.q)
        query = query.where((eb) =>
          eb.or([
            eb('c.first_name', 'ilike', pattern),
            eb('c.last_name', 'ilike', pattern),
            eb('c.email', 'ilike', pattern),
            eb(sql`c.first_name || ' ' || c.last_name`, 'ilike', pattern),
          ]),
        )
      }
      return cutPage(await keyset(query, CONTRACT_ORDER, page).execute(), page, keyOf)
    },
    findContract: (companyId: string, contractId: string) =>
      contractsQuery(db, companyId).where('c.id', '=', contractId).executeTakeFirst(),

    findSubscriptionMirror: (companyId: string) =>
      mirrorsQuery(db).where('s.company_id', '=', companyId).executeTakeFirst(),

    /** Keyed `<company_id>/<company_id>`, as batchedByResource asks; a company without a subscription absent. */
    async subscriptionMirrorsOf(companies: ReadonlyArray<{ companyId: string }>) {
      const rows = await mirrorsQuery(db)
        .select('s.company_id')
        .where(
          's.company_id',
          'in',
          companies.map((c) => c.companyId),
        )
        .execute()
      return new Map(rows.map(({ company_id, ...mirror }) => [`${company_id}/${company_id}`, mirror]))
    },

    /** Keyed `<company_id>/<contract_id>`, with their team_ids; a missing contract absent. */
    async contractsOf(contracts: ReadonlyArray<{ companyId: string; id: string }>): Promise<Map<string, Contract>> {
      const rows = await db
        .selectFrom('contracts as c')
        .select(['c.company_id', 'c.id', 'c.first_name', 'c.last_name', 'c.email', 'c.subsidiary_id', 'c.active'])
        .select(teamIdsOfContract.as('team_ids'))
        .where((eb) =>
          eb(
            eb.refTuple('c.company_id', 'c.id'),
            'in',
            contracts.map((k) => eb.tuple(k.companyId, k.id)),
          ),
        )
        .execute()
      return new Map(rows.map(({ company_id, ...row }) => [`${company_id}/${row.id}`, row]))
    },

    /** Keyed `<company_id>/<contract_id>`; a contract in no team absent. */
    async teamIdsOf(contracts: ReadonlyArray<{ companyId: string; id: string }>): Promise<Map<string, string[]>> {
      const rows = await db
        .selectFrom('team_members')
        .select(['company_id', 'contract_id', 'team_id'])
        .where((eb) =>
          eb(
            eb.refTuple('company_id', 'contract_id'),
            'in',
            contracts.map((contract) => eb.tuple(contract.companyId, contract.id)),
          ),
        )
        .orderBy('team_id')
        .execute()
      const teams = new Map<string, string[]>()
      for (const row of rows) {
        const key = `${row.company_id}/${row.contract_id}`
        teams.set(key, [...(teams.get(key) ?? []), row.team_id])
      }
      return teams
    },
  }
}

/** Only the columns the representation shows: every timestamp costs a Date parse per read. */
function companiesQuery(db: Kysely<DB>) {
  return db
    .selectFrom('companies as c')
    .leftJoin('subscriptions as s', 's.company_id', 'c.id')
    .leftJoin('plans as p', 'p.sku', 's.plan_sku')
    .select([
      'c.id',
      'c.name',
      'c.address',
      'c.city',
      'c.province',
      'c.zip',
      'c.country',
      'c.phone',
      'c.vat',
      'c.vat_number',
      'c.vat_number_status',
      'c.fiscal_code',
      'c.pec',
      'c.codice_destinatario',
      'c.tax_code',
      'c.sdi_code',
      'c.billing_email',
      'c.admin_user_id',
      'c.admin_user_email',
      'c.timezone',
      'c.number_of_employees',
      'c.location_info',
      'c.preferences',
      'c.disabled_at',
      's.id as subscription_id',
      's.customer_id as subscription_customer_id',
      's.plan_sku as subscription_plan',
      's.status as subscription_status',
      's.current_term_end',
      's.trial_end',
      's.plan_quantity',
      'p.features',
    ])
}

// Team ids read from the memberships so both views agree; as json, which the driver parses natively.
const teamIdsOfContract = sql<string[]>`coalesce((SELECT json_agg(m.team_id ORDER BY m.team_id) FROM team_members m
  WHERE m.company_id = c.company_id AND m.contract_id = c.id), '[]'::json)`

export function contractsQuery(db: Kysely<DB>, companyId: string) {
  return db
    .selectFrom('contracts as c')
    .select(['c.id', 'c.first_name', 'c.last_name', 'c.email', 'c.subsidiary_id', 'c.active'])
    .select(teamIdsOfContract.as('team_ids'))
    .where('c.company_id', '=', companyId)
}

/** The company's fields its GET joins from its subscription and plan. */
function mirrorsQuery(db: Kysely<DB>) {
  return db
    .selectFrom('subscriptions as s')
    .leftJoin('plans as p', 'p.sku', 's.plan_sku')
    .select([
      's.id as subscription_id',
      's.customer_id as subscription_customer_id',
      's.plan_sku as subscription_plan',
      's.status as subscription_status',
      's.current_term_end',
      's.trial_end',
      's.plan_quantity',
      'p.features',
    ])
}

export type CompaniesRepository = ReturnType<typeof createCompaniesRepository>
