import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { App } from '../../http/app-types.ts'
import type { ReadCache } from '../../cache/read-cache.ts'
import { replyCached } from '../../cache/cached-reads.ts'
import { accepted } from '../../http/app-types.ts'
import { principalOf } from '../../http/auth.ts'
import { ValidationError } from '../../core/errors.ts'
import { Accepted, CompanyParams, ErrorBody, Uuid } from '../../http/schemas.ts'
import type { CompaniesService } from './companies.service.ts'
import { answerPage, listResponse, pageQuery, readPage } from '../../http/pagination.ts'
import { SubscriptionStatusValue } from '../subscriptions/index.ts'
import { CompanyPatch } from './company-patch.ts'
import {
  Company,
  CompanyInput,
  Contract,
  ContractInput,
  ContractParams,
  Scope,
  Subsidiary,
  SubsidiaryInput,
  SubsidiaryParams,
} from './companies.schemas.ts'

const BASE = '/api/v1/companies'

const Search = (what: string) =>
  Type.String({ minLength: 1, maxLength: 200, description: `${what} contains this text, case-insensitive` })
const CompaniesQuery = pageQuery({
  q: Type.Optional(Search('The name')),
  disabled: Type.Optional(Type.Boolean({ description: 'Only disabled companies (true) or only enabled ones (false)' })),
  subscription_status: Type.Optional(SubscriptionStatusValue),
})
const ContractsQuery = pageQuery({
  active: Type.Optional(Type.Boolean({ description: 'Only active contracts (true) or only inactive ones (false)' })),
  subsidiary_id: Type.Optional(Uuid('Only the contracts of this subsidiary')),
  team_id: Type.Optional(Uuid('Only the members of this team')),
  q: Type.Optional(Search('First name, last name, "first last" or email')),
})

// Routes acting on the path alone refuse any body, `{}` included: a client sending one means
// something by it, and silently doing something else is worse than saying so.
function takesNoBody(message: string) {
  return async (request: FastifyRequest) => {
    if (request.body !== undefined) throw new ValidationError(message)
  }
}

export async function companiesRoutes(
  app: App,
  { service, cache }: { service: CompaniesService; cache: Pick<ReadCache, 'get'> },
) {
  const tags = ['Companies']

  app.post(
    BASE,
    {
      config: { access: 'platform', billingProvider: true },
      schema: {
        operationId: 'createCompany',
        tags,
        summary: 'Create a company with a trial subscription',
        body: CompanyInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      // Named by the Idempotency-Key, a retry makes the same company (no second customer at Chargebee).
      const retryName = request.idempotency ? `${request.idempotency.owner}:${request.idempotency.key}` : null
      return accepted(
        reply,
        `${BASE}/${await service.createCompany(request.body, principalOf(request).clientId, retryName)}`,
      )
    },
  )

  app.get(
    BASE,
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'listCompanies',
        tags,
        summary: 'List companies (platform)',
        description:
          'Every company, by name then id, for a platform client only (a company token: 403). Filters: `q` (name ' +
          'contains, case-insensitive), `disabled`, `subscription_status`. Pages with `limit` and `cursor`; ' +
          'without `limit`, the whole list.',
        querystring: CompaniesQuery,
        response: { 200: listResponse(Type.Array(Company)) },
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['text', 'uuid'])
      return answerPage(request, reply, page, await service.listCompanies(request.query, page))
    },
  )

  app.patch(
    `${BASE}/:company_id`,
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'updateCompany',
        tags,
        summary: "Change a company's fields (JSON merge patch)",
        description:
          "A JSON merge patch (RFC 7396; `application/merge-patch+json` or `application/json`) of the Company's " +
          'writable fields, with `write:company` (a company token on its own company, or a platform client). A ' +
          'field left out keeps its value; null clears an optional field (null on name, country, timezone or ' +
          'preferences is a 400); location_info and preferences merge member by member. Values are checked as ' +
          'creation checks them. `disabled` and the subscription fields are not writable here: a 400 names the ' +
          'route that changes each. country, vat_number and vat_number_status decide whether the company is ' +
          'reverse-charged: only a platform client changes them (a company token sending another value than the ' +
          'company has gets 403 `forbidden`, its `details` naming each such field; the same value is accepted). ' +
          "A vat_number must have the shape of a number of the company's country (400 naming `body/vat_number` " +
          'otherwise, also when only the country changes); a changed vat_number starts over at vat_number_status ' +
          "not_validated unless its status is sent with it; null clears both. Recorded in the company's " +
          'change_log. 202, no body.',
        params: CompanyParams,
        body: CompanyPatch,
        response: {
          202: Accepted,
          403: {
            ...ErrorBody,
            description:
              'The token lacks write:company, its company is disabled, or a company token would change country, ' +
              'vat_number or vat_number_status (code forbidden, `details` naming each field)',
          },
        },
      },
    },
    async (request, reply) => {
      await service.patchCompany(
        request.params.company_id,
        request.body as Record<string, unknown>,
        principalOf(request),
      )
      return accepted(reply)
    },
  )

  app.get(
    `${BASE}/:company_id`,
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'getCompany',
        tags,
        summary: 'Get a company (34)',
        params: CompanyParams,
        response: { 200: Company },
      },
    },
    async (request, reply) => {
      const companyId = request.params.company_id
      return replyCached(reply, cache, companyId, 'company', '', () => service.getCompany(companyId))
    },
  )

  app.put(
    `${BASE}/:company_id`,
    {
      config: { access: { area: 'company' } },
      preValidation: takesNoBody(
        'This route disables the company and takes no body; company fields cannot be changed through it',
      ),
      schema: {
        operationId: 'disableCompany',
        tags,
        summary: 'Disable a company (33); no body',
        description:
          'Disables the company: its tokens then get 403 until it is enabled again. Takes no body: any body, ' +
          '`{}` included, is a 400 and changes nothing.',
        params: CompanyParams,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      await service.disableCompany(request.params.company_id)
      return accepted(reply)
    },
  )

  app.put(
    `${BASE}/:company_id/enable`,
    {
      config: { access: 'platform' },
      preValidation: takesNoBody('This route enables the company and takes no body'),
      schema: {
        operationId: 'enableCompany',
        tags,
        summary: 'Enable a disabled company',
        description: 'Takes no body: any body, `{}` included, is a 400 and changes nothing.',
        params: CompanyParams,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      await service.enableCompany(request.params.company_id)
      return accepted(reply)
    },
  )

  app.get(
    `${BASE}/:company_id/authorized/scopes`,
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'listAuthorizedScopes',
        tags,
        summary: "The company's authorized scopes (25)",
        description:
          "The areas the company may grant its clients: the base areas and its plan's features, in a fixed order " +
          'of areas. Pages with `limit` and `cursor`; without `limit`, the whole list.',
        params: CompanyParams,
        querystring: pageQuery(),
        response: { 200: listResponse(Type.Array(Scope)) },
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['int'])
      return answerPage(request, reply, page, await service.authorizedScopes(request.params.company_id, page))
    },
  )

  const subsidiaries = `${BASE}/:company_id/subsidiaries`
  app.post(
    subsidiaries,
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'createSubsidiary',
        tags,
        summary: 'Create a subsidiary',
        params: CompanyParams,
        body: SubsidiaryInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      const { company_id } = request.params
      return accepted(
        reply,
        `${BASE}/${company_id}/subsidiaries/${await service.createSubsidiary(company_id, request.body)}`,
      )
    },
  )

  app.get(
    subsidiaries,
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'listSubsidiaries',
        tags,
        summary: 'List subsidiaries',
        description:
          "The company's subsidiaries, by name then id. Pages with `limit` and `cursor`; without `limit`, the " +
          'whole list.',
        params: CompanyParams,
        querystring: pageQuery(),
        response: { 200: listResponse(Type.Array(Subsidiary)) },
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['text', 'uuid'])
      return answerPage(request, reply, page, await service.listSubsidiaries(request.params.company_id, page))
    },
  )

  app.get(
    `${subsidiaries}/:subsidiary_id`,
    {
      config: { access: { area: 'company' } },
      schema: {
        operationId: 'getSubsidiary',
        tags,
        summary: 'Get a subsidiary',
        params: SubsidiaryParams,
        response: { 200: Subsidiary },
      },
    },
    async (request) => service.getSubsidiary(request.params.company_id, request.params.subsidiary_id),
  )

  const contracts = `${BASE}/:company_id/contracts`
  const contractTags = ['Contracts']
  app.post(
    contracts,
    {
      config: { access: { area: 'contract' } },
      schema: {
        operationId: 'createContract',
        tags: contractTags,
        summary: 'Create a contract (an employee)',
        params: CompanyParams,
        body: ContractInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      const { company_id } = request.params
      return accepted(
        reply,
        `${BASE}/${company_id}/contracts/${await service.createContract(company_id, request.body)}`,
      )
    },
  )

  app.get(
    contracts,
    {
      config: { access: { area: 'contract' } },
      schema: {
        operationId: 'listContracts',
        tags: contractTags,
        summary: 'List contracts',
        description:
          "The company's contracts, by last name, first name, then id. Filters: `active`, `subsidiary_id`, " +
          '`team_id` (members of that team), `q` (first name, last name, "first last" or email contains, ' +
          'case-insensitive). Pages with `limit` and `cursor`; without `limit`, the whole list.',
        params: CompanyParams,
        querystring: ContractsQuery,
        response: { 200: listResponse(Type.Array(Contract)) },
      },
    },
    async (request, reply) => {
      const { limit: _l, cursor: _c, ...filter } = request.query
      // The URL (path and query) keys each page and filter set.
      return replyCached(reply, cache, request.params.company_id, 'contracts', request.url, async () => {
        const page = readPage(request, ['text', 'text', 'uuid'])
        return answerPage(request, reply, page, await service.listContracts(request.params.company_id, filter, page))
      })
    },
  )

  app.get(
    `${contracts}/:contract_id`,
    {
      config: { access: { area: 'contract' } },
      schema: {
        operationId: 'getContract',
        tags: contractTags,
        summary: 'Get a contract',
        params: ContractParams,
        response: { 200: Contract },
      },
    },
    async (request) => service.getContract(request.params.company_id, request.params.contract_id),
  )

  app.put(
    `${contracts}/:contract_id`,
    {
      config: { access: { area: 'contract' } },
      schema: {
        operationId: 'updateContract',
        tags: contractTags,
        summary: 'Replace a contract',
        params: ContractParams,
        body: ContractInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      await service.updateContract(request.params.company_id, request.params.contract_id, request.body)
      return accepted(reply)
    },
  )
}
