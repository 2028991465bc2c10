import { randomUUID } from 'node:crypto'
import { uuidFromName } from '../../core/ids.ts'
import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import type { ChangeLogEntry, DB } from '../../db/tables.ts'
import { Conflict, NotFound, ValidationError } from '../../core/errors.ts'
import { CustomerIdSpent } from '../billing/index.ts'
import { isTimeZone } from '../../core/days.ts'
import { isCountry } from './countries.ts'
import { refuseTaxChanges, taxIdentity, type TaxInput } from './company-tax.ts'
import { italianIds } from './italian-ids.ts'
import type { CatalogueService } from '../catalogue/catalogue.service.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'
import type { AccessState } from '../oauth/oauth.access.ts'
import { ALL_AREAS, authorizedScopes, liveFeatures, scopeStrings, type Scope } from '../oauth/scopes.ts'
import type { CompaniesRepository, CompanyFilter, ContractFilter } from './companies.repository.ts'
import type { KeysetPage } from '../../db/keyset.ts'
import { pageInMemory, type Paged } from '../../core/paging.ts'
import { loggedValue } from '../communications/communications.service.ts'
import {
  checkMergedObject,
  mergeValue,
  OBJECT_FIELDS,
  PLATFORM_ONLY,
  refuseNotWritable,
  WRITABLE_FIELDS,
  type CompanyPatchBody,
} from './company-patch.ts'
import { batchedByResource, storedTime, type StoredObject } from '../events/event-objects.ts'
import type {
  Company,
  CompanyInput,
  Contract,
  ContractInput,
  Subsidiary,
  SubsidiaryInput,
} from './companies.schemas.ts'

/** Named where a client tries to change a contract's teams on the contract. */
const TEAM_ROUTES = [
  'POST /api/v1/companies/{company_id}/teams (its team_leader_ids)',
  'PUT /api/v1/companies/{company_id}/teams/{team_id}/upgrade_contract',
  'PUT /api/v1/companies/{company_id}/teams/{team_id}/downgrade_contract',
  'PUT /api/v1/companies/{company_id}/teams/add_contract',
  'PUT /api/v1/companies/{company_id}/teams/{team_id}/remove_contract',
].join(', ')

function teamIdsReadOnly(why: string) {
  return new ValidationError(`body/team_ids is read-only (${why}): a contract's teams change through ${TEAM_ROUTES}`)
}

/** How many ids one Idempotency-Key may name (each failed attempt spends one). */
const MAX_GENERATIONS = 100

type CompanyRecord = NonNullable<Awaited<ReturnType<CompaniesRepository['findCompany']>>>
type Mirror = NonNullable<Awaited<ReturnType<CompaniesRepository['findSubscriptionMirror']>>>

/** The mirror an event stored (null: no subscription then), its times as Dates. */
function storedMirror(stored: StoredObject | null): Mirror | undefined {
  if (!stored) return undefined
  const time = (key: string) => storedTime(stored[key])
  return { ...(stored as Mirror), current_term_end: time('current_term_end'), trial_end: time('trial_end') }
}

export function createCompaniesService(deps: {
  db: Kysely<DB>
  repo: CompaniesRepository
  catalogue: Pick<CatalogueService, 'findProductBySku' | 'findPlanBySku'>
  subscriptions: Pick<SubscriptionsService, 'startTrial' | 'abandonTrial'>
  access: Pick<AccessState, 'changed'>
  clock: Clock
}) {
  const { repo, clock } = deps
  const teamIdsOf = batchedByResource(repo.teamIdsOf, [])
  const mirrorOf = batchedByResource(repo.subscriptionMirrorsOf, undefined)
  const contractOf = batchedByResource(repo.contractsOf, undefined)

  async function requireCompany(companyId: string) {
    if (!(await repo.companyExists(companyId))) throw new NotFound('Company')
  }

  async function scopesOf(companyId: string): Promise<Scope[] | undefined> {
    const row = await repo.findPlanFeatures(companyId)
    if (!row) return undefined
    return authorizedScopes(liveFeatures(row.status, row.features))
  }

  return {
    /**
     * Creates the company, its billing customer and its trial subscription, all or nothing. The id
     * derives from `retryName` (the Idempotency-Key and its owner), so a retry after an unseen failure
     * finds the same objects at Chargebee instead of orphaning them; a spent id takes the next generation.
     */
    async createCompany(input: CompanyInput, actor: string, retryName: string | null = null): Promise<string> {
      if (!isCountry(input.country))
        throw new ValidationError(`body/country ${input.country} is not an ISO 3166-1 alpha-2 country code`)
      const product = await deps.catalogue.findProductBySku(input.product_sku)
      if (!product) throw new ValidationError(`body/product_sku names an unknown product: ${input.product_sku}`)
      if (!product.allowed_plans.includes(input.subscription_plan)) {
        throw new ValidationError(
          `body/subscription_plan ${input.subscription_plan} is not among the product's allowed_plans`,
        )
      }
      const plan = await deps.catalogue.findPlanBySku(input.subscription_plan)
      if (!plan) throw new ValidationError(`body/subscription_plan names an unknown plan: ${input.subscription_plan}`)
      const timezone = input.timezone ?? (input.country === 'IT' ? 'Europe/Rome' : 'UTC')
      if (!isTimeZone(timezone))
        throw new ValidationError('body/timezone must be an IANA time zone name, such as Europe/Rome')
      const tax = taxIdentity({ country: input.country, vat_number: null, vat_number_status: null }, input)
      const values = {
        name: input.name,
        address: input.address ?? null,
        city: input.city ?? null,
        province: input.province ?? null,
        zip: input.zip ?? null,
        phone: input.phone ?? null,
        vat: input.vat ?? null,
        ...tax,
        fiscal_code: input.fiscal_code ?? null,
        pec: input.pec ?? null,
        codice_destinatario: input.codice_destinatario ?? null,
        tax_code: null,
        sdi_code: null,
        ...italianIds(input),
        billing_email: input.billing_email ?? null,
        admin_user_id: input.admin_user_id ?? null,
        admin_user_email: input.admin_user_email ?? null,
        timezone,
        number_of_employees: input.number_of_employees ?? null,
        location_info: JSON.stringify(input.location_info ?? null),
        preferences: JSON.stringify(input.preferences ?? {}),
      }
      for (let generation = 0; generation < MAX_GENERATIONS; generation++) {
        const id =
          retryName === null
            ? randomUUID()
            : uuidFromName(`company:${retryName}${generation > 0 ? `:${generation}` : ''}`)
        if (retryName !== null && (await repo.companyExists(id))) continue
        const inserted = deps.db.transaction().execute(async (trx) => {
          await repo.insertCompany(trx, { id, ...values, updated_at: clock.now() })
          await deps.subscriptions.startTrial(trx, {
            companyId: id,
            product,
            plan,
            quantity: input.plan_quantity ?? 1,
            actor,
          })
        })
        const spent = await inserted.then(
          () => false,
          async (err) => {
            // Deleted at the provider: a retry makes a new company, never an orphan.
            if (!(await repo.companyExists(id))) await deps.subscriptions.abandonTrial(id, product)
            if (err instanceof CustomerIdSpent && retryName !== null) return true
            throw err
          },
        )
        if (!spent) return id
      }
      throw new Conflict(
        `The ${MAX_GENERATIONS} companies this Idempotency-Key may name are spent; send the request with a new key`,
      )
    },

    async getCompany(companyId: string): Promise<Company> {
      const row = await repo.findCompany(companyId)
      if (!row) throw new NotFound('Company')
      return companyView(row)
    },

    async listCompanies(filter: CompanyFilter, page: KeysetPage): Promise<Paged<Company>> {
      const paged = await repo.listCompanies(filter, page)
      return { ...paged, items: paged.items.map(companyView) }
    },

    /**
     * A JSON merge patch of the writable fields, checked as creation checks them, applied under the row
     * lock and recorded in change_log. A company token may not change the fields that decide its tax
     * (docs/adr/0003-vat-numbers-set-by-the-platform.md).
     */
    async patchCompany(companyId: string, patch: CompanyPatchBody, by: { clientId: string; companyId: string | null }) {
      refuseNotWritable(patch)
      if (typeof patch.country === 'string' && !isCountry(patch.country))
        throw new ValidationError(`body/country ${patch.country} is not an ISO 3166-1 alpha-2 country code`)
      if (typeof patch.timezone === 'string' && !isTimeZone(patch.timezone))
        throw new ValidationError('body/timezone must be an IANA time zone name, such as Europe/Rome')
      const actor = by.clientId
      await deps.db.transaction().execute(async (trx) => {
        const current = await repo.lockForPatch(trx, companyId)
        if (!current) throw new NotFound('Company')
        if (by.companyId !== null) refuseTaxChanges(patch, current)
        // Checked against the country it will have, as at creation.
        if (PLATFORM_ONLY.some((key) => key in patch)) patch = { ...patch, ...taxIdentity(current, patch as TaxInput) }
        patch = { ...patch, ...italianIds(patch) }
        const stored = current as unknown as Record<string, unknown>
        const values: Record<string, unknown> = {}
        const changes: Record<string, [unknown, unknown]> = {}
        for (const key of WRITABLE_FIELDS) {
          if (!(key in patch)) continue
          const next = OBJECT_FIELDS.has(key) ? mergeValue(stored[key], patch[key]) : patch[key]
          checkMergedObject(key, next)
          if (JSON.stringify(next) === JSON.stringify(stored[key] ?? null)) continue
          values[key] = OBJECT_FIELDS.has(key) ? JSON.stringify(next) : next
          changes[key] = [loggedValue(stored[key] ?? null), loggedValue(next)]
        }
        if (Object.keys(changes).length === 0) return
        const now = clock.now()
        const entry: ChangeLogEntry = { at: now.toISOString(), by: actor, action: 'updated', changes }
        await repo.patchCompany(trx, companyId, {
          ...values,
          updated_at: now,
          change_log: JSON.stringify([...current.change_log, entry]),
        })
      })
    },

    async disableCompany(companyId: string) {
      if (!(await repo.setDisabled(companyId, clock.now()))) throw new NotFound('Company')
      await deps.access.changed()
    },

    async enableCompany(companyId: string) {
      if (!(await repo.setDisabled(companyId, null))) throw new NotFound('Company')
      await deps.access.changed()
    },

    /** In the areas' fixed order; the cursor key is an area's place in it. */
    async authorizedScopes(companyId: string, page: KeysetPage = {}): Promise<Paged<Scope>> {
      const scopes = await scopesOf(companyId)
      if (!scopes) throw new NotFound('Company')
      return pageInMemory(scopes, page, (s) => [ALL_AREAS.indexOf(s.api)])
    },

    async scopeStrings(companyId: string): Promise<string[] | undefined> {
      const scopes = await scopesOf(companyId)
      return scopes && scopeStrings(scopes)
    },

    async createSubsidiary(companyId: string, input: SubsidiaryInput): Promise<string> {
      await requireCompany(companyId)
      if (input.country && !isCountry(input.country))
        throw new ValidationError(`body/country ${input.country} is not an ISO 3166-1 alpha-2 country code`)
      const id = randomUUID()
      await repo.insertSubsidiary({
        company_id: companyId,
        id,
        name: input.name,
        city: input.city ?? null,
        country: input.country ?? null,
      })
      return id
    },
    async listSubsidiaries(companyId: string, page: KeysetPage): Promise<Paged<Subsidiary>> {
      await requireCompany(companyId)
      return repo.listSubsidiaries(companyId, page)
    },
    async getSubsidiary(companyId: string, subsidiaryId: string): Promise<Subsidiary> {
      const row = await repo.findSubsidiary(companyId, subsidiaryId)
      if (!row) throw new NotFound('Subsidiary')
      return subsidiaryView(row)
    },

    async createContract(companyId: string, input: ContractInput): Promise<string> {
      await requireCompany(companyId)
      if (input.team_ids !== undefined && input.team_ids.length > 0)
        throw teamIdsReadOnly('a new contract is in no team')
      await checkSubsidiary(companyId, input.subsidiary_id)
      const id = randomUUID()
      await repo.insertContract({ company_id: companyId, id, ...contractValues(input), updated_at: clock.now() })
      return id
    },
    async updateContract(companyId: string, contractId: string, input: ContractInput) {
      if (input.team_ids !== undefined) {
        // Sent back as read, it is ignored; anything else is a change this route cannot make.
        const current = await repo.findContract(companyId, contractId)
        if (!current) throw new NotFound('Contract')
        const sent = new Set(input.team_ids)
        if (sent.size !== current.team_ids.length || current.team_ids.some((id) => !sent.has(id)))
          throw teamIdsReadOnly("it differs from the contract's teams")
      }
      await checkSubsidiary(companyId, input.subsidiary_id)
      if (!(await repo.updateContract(companyId, contractId, { ...contractValues(input), updated_at: clock.now() })))
        throw new NotFound('Contract')
    },
    async listContracts(companyId: string, filter: ContractFilter, page: KeysetPage): Promise<Paged<Contract>> {
      await requireCompany(companyId)
      return repo.listContracts(companyId, filter, page)
    },
    async getContract(companyId: string, contractId: string): Promise<Contract> {
      const row = await repo.findContract(companyId, contractId)
      if (!row) throw new NotFound('Contract')
      return contractView(row)
    },

    /** As GET /companies/{id} answers: the stored row with the subscription's mirror of its moment (else read now). */
    async companyEventObject(stored: StoredObject): Promise<Company> {
      const mirror = 'subscription' in stored ? storedMirror(stored.subscription) : await mirrorOf(stored.id, stored.id)
      return companyView({
        ...(stored as CompanyRecord),
        disabled_at: storedTime(stored.disabled_at),
        // Events stored before these columns existed.
        tax_code: (stored.tax_code as string | null | undefined) ?? null,
        sdi_code: (stored.sdi_code as string | null | undefined) ?? null,
        subscription_id: mirror?.subscription_id ?? null,
        subscription_customer_id: mirror?.subscription_customer_id ?? null,
        subscription_plan: mirror?.subscription_plan ?? null,
        subscription_status: mirror?.subscription_status ?? null,
        current_term_end: mirror?.current_term_end ?? null,
        trial_end: mirror?.trial_end ?? null,
        plan_quantity: mirror?.plan_quantity ?? null,
        features: mirror?.features ?? null,
      })
    },

    subsidiaryEventObject: (stored: StoredObject): Subsidiary => subsidiaryView(stored as Subsidiary),

    /** As GET .../contracts/{id} answers: the stored row with its teams of its moment (read now if not stored). */
    async contractEventObject(stored: StoredObject): Promise<Contract> {
      const teamIds: string[] = Array.isArray(stored.team_ids)
        ? stored.team_ids
        : await teamIdsOf(stored.company_id, stored.id)
      return contractView({ ...(stored as Contract), team_ids: teamIds })
    },

    /**
     * A membership event's contract: its fields as the event stored them with its teams read now, else
     * all read now; undefined when it is gone.
     */
    async memberContract(stored: StoredObject): Promise<Contract | undefined> {
      if (!('contract' in stored)) return contractOf(stored.company_id, stored.contract_id)
      if (!stored.contract) return undefined
      const teamIds = await teamIdsOf(stored.company_id, stored.contract_id)
      return contractView({ ...(stored.contract as Contract), team_ids: teamIds })
    },
  }

  async function checkSubsidiary(companyId: string, subsidiaryId: string | null | undefined) {
    if (subsidiaryId && !(await repo.findSubsidiary(companyId, subsidiaryId))) {
      throw new ValidationError('body/subsidiary_id is not a subsidiary of this company')
    }
  }
}

function contractValues(input: ContractInput) {
  return {
    first_name: input.first_name,
    last_name: input.last_name,
    email: input.email ?? null,
    subsidiary_id: input.subsidiary_id ?? null,
    active: input.active ?? true,
  }
}

export type CompaniesService = ReturnType<typeof createCompaniesService>

function subsidiaryView(row: Subsidiary): Subsidiary {
  return { id: row.id, name: row.name, city: row.city, country: row.country }
}

function contractView(row: Contract): Contract {
  return {
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    subsidiary_id: row.subsidiary_id,
    team_ids: row.team_ids,
    active: row.active,
  }
}

function companyView(row: CompanyRecord): Company {
  const iso = (d: Date | null) => (d ? d.toISOString() : null)
  return {
    id: row.id,
    name: row.name,
    address: row.address,
    city: row.city,
    province: row.province,
    zip: row.zip,
    country: row.country,
    phone: row.phone,
    vat: row.vat,
    vat_number: row.vat_number,
    vat_number_status: row.vat_number_status,
    fiscal_code: row.fiscal_code,
    pec: row.pec,
    codice_destinatario: row.codice_destinatario,
    tax_code: row.tax_code,
    sdi_code: row.sdi_code,
    billing_email: row.billing_email,
    admin_user_id: row.admin_user_id,
    admin_user_email: row.admin_user_email,
    timezone: row.timezone,
    number_of_employees: row.number_of_employees,
    location_info: row.location_info as Company['location_info'],
    preferences: row.preferences as Company['preferences'],
    subscription_id: row.subscription_id,
    subscription_customer_id: row.subscription_customer_id,
    subscription_plan: row.subscription_plan,
    subscription_status: row.subscription_status,
    subscription_expiration_date: iso(row.current_term_end),
    trial_expiration_date: iso(row.trial_end),
    subscribed_features: [...liveFeatures(row.subscription_status, row.features)],
    plan_quantity: row.plan_quantity,
    disabled: row.disabled_at !== null,
  }
}
